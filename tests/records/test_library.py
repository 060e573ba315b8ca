"""The tuning library: real work dirs of stock MetaSchedule (``tune_relax`` / ``tune_tir`` with an
in-process builder and runner, one or two trials a task), checked against what the test reads
from the database files itself (json + base64) and hashes with TVM directly."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import os
import shutil
import stat
import warnings
import zipfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm.relax.frontend import nn

from msviz import compat, models
from msviz.archive.bundle import write_bundle
from msviz.engine.measure.builder import build_artifact
from msviz.errors import MsvizWarning
from msviz.records import library as library_module
from msviz.records.bundle import MANIFEST_FILE
from msviz.records.database import RECORD_FILE, WORKLOAD_FILE, RecordLine
from msviz.records.library import Library, LibraryEntry, workload_keys
from msviz.records.row import mean_run_secs, valid_run_secs

ms = compat.ms
GENERIC = {"kind": "llvm", "num-cores": 2}  # LLVM's baseline x86-64: not this host's target


@compat.derived_object
class _Builder(ms.builder.PyBuilder):
    """Builds in this process (no worker pool to start: the tests stay fast on 2 cores)."""

    def build(self, build_inputs: list) -> list:
        return [ms.builder.BuilderResult(build_artifact(compat.fast_build, i.mod, i.target), None)
                for i in build_inputs]


@compat.derived_object
class _Runner(ms.runner.PyRunner):
    """Times each artifact once in this process, on zeros."""

    def run(self, runner_inputs: list) -> list:
        dev, out = tvm.cpu(0), []
        for inp in runner_inputs:
            lib = compat.load_module(inp.artifact_path)
            args = [tvm.runtime.tensor(np.zeros([int(s) for s in a.shape], a.dtype), dev)
                    for a in inp.args_info]
            timer = lib.time_evaluator(lib.entry_name, dev, number=1, repeat=1)
            out.append(ms.runner.LocalRunnerFuture(list(timer(*args).results), None))
        return out


def _options(trials: int) -> dict[str, Any]:
    return {"max_trials_global": trials, "num_trials_per_iter": trials, "builder": _Builder(),
            "runner": _Runner(), "seed": 1,
            "strategy": ms.search_strategy.EvolutionarySearch(
                population_size=4, init_min_unmeasured=2, genetic_num_iters=0)}


class Tuned(NamedTuple):
    host: Any  # this machine's target
    generic: Any  # another target
    tasks: list  # the catalogue "mlp"'s tasks (softmax, matmul2_add1, matmul1_add_relu, ...)
    linear: Any  # the one task of a Linear(128, 128) with bias, no relu
    full: Path  # tune_relax of the whole mlp on the host
    team: Path  # linear.zip (a bundle), runs/exact (task 1, host), runs/generic (task 3)
    linear_dir: Path  # the work dir bundled as linear.zip


class Linear(nn.Module):
    """One Linear(128, 128) with bias: its task's anchor block is the mlp's 128x128 matmul."""

    def __init__(self) -> None:
        self.fc = nn.Linear(128, 128)

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        return self.fc(x)


def tuned_library(factory: pytest.TempPathFactory) -> Tuned:
    """The work dirs every library test reads, tuned once per test session (test_coverage.py
    imports this module under another name: the work dirs on disk are what both share)."""
    host, generic = compat.make_target("llvm"), tvm.target.Target(GENERIC)
    root = factory.getbasetemp() / "library"
    full, team, linear_dir = root / "full" / "mlp", root / "team", root / "src" / "linear"
    # stock MetaSchedule's graph: these are stock's own work dirs (tune_relax, tune_tir)
    mlp = models.load("mlp").on_graph("stock")
    tasks = mlp.extract_tasks(host)
    linear = models.from_nn(Linear(), {"x": nn.spec.Tensor((4, 128), "float32")},
                            name="linear").on_graph("stock")
    (linear_task,) = linear.extract_tasks(host)
    if not (root / "done").is_file():
        compat.quiet_ipython_printing()
        compat.register_tensor_intrins()  # what a TuneContext imports, in seconds not a minute
        tvm_logger = logging.getLogger(ms.logging.__name__.rsplit(".", 1)[0])
        for handler in [h for h in tvm_logger.handlers if h.get_name() is None]:
            tvm_logger.removeHandler(handler)
        ms.relax_integration.tune_relax(mlp.lower(host), None, host, str(full),
                                        max_trials_per_task=1, **_options(len(tasks)))
        ms.relax_integration.tune_relax(linear.lower(host), None, host, str(linear_dir),
                                        max_trials_per_task=1, **_options(1))
        ms.tir_integration.tune_tir(tasks[1].workload.mod, host, str(team / "runs" / "exact"),
                                    **_options(2))
        ms.tir_integration.tune_tir(tasks[3].workload.mod, generic,
                                    str(team / "runs" / "generic"), **_options(2))
        write_bundle(linear_dir, team / "linear.zip")
        (root / "done").write_text("")
    return Tuned(host, generic, tasks, linear_task, full, team, linear_dir)


@pytest.fixture(scope="session")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Tuned:
    return tuned_library(tmp_path_factory)


@pytest.fixture(autouse=True)
def cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Each test's own cache folder (never the user's)."""
    monkeypatch.setenv("MSVIZ_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


# -- what the test reads itself -----------------------------------------------------------------


def decode_workloads(work_dir: Path) -> list[tuple[str, Any]]:
    """(stored hash, IRModule) of each workload line, decoded with json and base64 (TVM's
    base64 text starts with the JSON's length, 8 bytes little-endian)."""
    out = []
    for line in (work_dir / WORKLOAD_FILE).read_text().splitlines():
        shash, payload = json.loads(line)
        raw = base64.b64decode(payload)
        assert int.from_bytes(raw[:8], "little") == len(raw) - 8
        out.append((shash, tvm.ir.load_json(raw[8:].decode())))
    return out


def anchor_facts(mod: Any) -> tuple[str, str, tuple[int, ...]]:
    """(anchor hash, block name, extents), with TVM directly."""
    block = tvm.s_tir.analysis.find_anchor_sblock(mod)
    anchor = tvm_ffi.structural_hash(block, map_free_vars=False, skip_tensor_content=True)
    return str(anchor), str(block.name_hint), tuple(int(iv.dom.extent) for iv in block.iter_vars)


def text_of(target: Any) -> str:
    """A target's text as the library compares targets: TVM's text of the Target built from
    its attributes in sorted order (``str(Target)`` follows the order they were given in)."""
    if not isinstance(target, dict):
        target = compat.to_jsonable(target.export())
    return str(tvm.target.Target(dict(sorted(target.items()))))


def read_records(work_dir: Path) -> list[tuple[int, list, list]]:
    """(line number, workload index, record body) of each record line, with json."""
    lines = (work_dir / RECORD_FILE).read_text().splitlines()
    return [(n, *json.loads(text)) for n, text in enumerate(lines, start=1)]


def expected_entries(work_dir: Path, source: str, names: dict[str, str] | None = None
                     ) -> list[LibraryEntry]:
    """The entries of a work dir, computed by the test from the files (task names by
    structural hash; ``main`` where not given, as ``tune_tir`` names its task)."""
    workloads = decode_workloads(work_dir)
    groups: dict[tuple[int, str], list] = {}
    for _, w, body in read_records(work_dir):
        text = text_of(body[2])
        group = groups.setdefault((w, text), [math.inf, 0])
        group[1] += 1
        if valid_run_secs(body[1]):
            group[0] = min(group[0], mean_run_secs(body[1]) * 1e6)
    out = []
    for (w, text), (best, trials) in groups.items():
        shash, mod = workloads[w]
        assert shash == str(tvm_ffi.structural_hash(mod))
        anchor, op, extents = anchor_facts(mod)
        out.append(LibraryEntry(source, work_dir, w, shash, anchor, op, extents, text,
                                (names or {}).get(shash, "main"), best, trials))
    return out


def file_digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def quiet_library(paths: Any, **kw: Any) -> Library:
    with warnings.catch_warnings():
        warnings.simplefilter("error", MsvizWarning)  # a clean library says nothing
        return Library(paths, **kw)


def strip_dirs(entries: list[LibraryEntry]) -> list[LibraryEntry]:
    return [e._replace(work_dir=Path()) for e in entries]


# -- keys ---------------------------------------------------------------------------------------


def test_keys_are_what_metaschedule_writes(tuned: Tuned, tmp_path: Path) -> None:
    """The shash is what stock JSONDatabase writes; the anchor hash is what it writes with
    ``module_equality="anchor-block"`` (ModuleEqualityAnchorBlock::Hash)."""
    mods = [t.workload.mod for t in tuned.tasks] + [tuned.linear.workload.mod]
    for i, mod in enumerate(mods):
        written = []
        for equality in ("structural", "anchor-block"):
            folder = tmp_path / f"{equality}-{i}"
            folder.mkdir()
            ms.database.JSONDatabase(work_dir=str(folder),
                                     module_equality=equality).commit_workload(mod)
            written.append(json.loads((folder / WORKLOAD_FILE).read_text())[0])
        anchor, op, extents = anchor_facts(mod)
        assert workload_keys(mod) == (written[0], written[1], op, extents) == (
            str(tvm_ffi.structural_hash(mod)), anchor, op, extents)
    assert [workload_keys(m)[2:] for m in mods] == [
        ("T_softmax_maxelem", (4, 10)), ("matmul", (4, 10, 128)), ("matmul", (4, 128, 128)),
        ("matmul", (4, 128, 64)), ("matmul", (4, 128, 128))]
    # the Linear's matmul is the anchor block of fused_matmul1_add_relu, its epilogue is not
    assert workload_keys(mods[4])[1] == workload_keys(mods[2])[1]
    assert workload_keys(mods[4])[0] != workload_keys(mods[2])[0]


def test_a_tuned_model_is_an_exact_hit_of_itself(tuned: Tuned) -> None:
    lib = quiet_library(tuned.full, cache=False)
    names = {str(tvm_ffi.structural_hash(t.workload.mod)): t.name for t in tuned.tasks}
    expected = expected_entries(tuned.full, "mlp", names)
    assert lib.entries == expected
    assert (lib.sources, len(lib), lib.problems) == (["mlp"], 4, [])
    by_shash = {e.shash: e for e in expected}
    for task in tuned.tasks:
        entry = by_shash[str(tvm_ffi.structural_hash(task.workload.mod))]
        assert entry.task == task.name and entry.best_us < math.inf
        assert lib.exact(task.workload.mod, tuned.host) == entry
        assert lib.match(task.workload.mod, tuned.host) == ("exact", [entry])
        assert lib.exact(task.workload.mod, tuned.generic) is None


def _team_entries(tuned: Tuned) -> list[LibraryEntry]:
    linear = {str(tvm_ffi.structural_hash(tuned.linear.workload.mod)): "fused_matmul_add"}
    return [*expected_entries(tuned.linear_dir, "linear", linear),
            *expected_entries(tuned.team / "runs" / "exact", "exact"),
            *expected_entries(tuned.team / "runs" / "generic", "generic")]


def _classify(entries: list[LibraryEntry], mod: Any, text: str) -> tuple[str, set]:
    """The kind of match and the (source, workload) of its entries, by the rules, from the
    test's own reading."""
    shash = str(tvm_ffi.structural_hash(mod))
    anchor, op, extents = anchor_facts(mod)
    ok = [e for e in entries if e.target == text and e.best_us < math.inf]
    kinds = {"exact": [e for e in ok if e.shash == shash],
             "anchor": [e for e in ok if e.anchor == anchor and e.shash != shash],
             "sibling": [e for e in entries if e.op == op and len(e.extents) == len(extents)
                         and not (e.target == text and (e.shash == shash
                                                        or e.anchor == anchor))]}
    for kind, found in kinds.items():
        if found:
            return kind, {(e.source, e.workload) for e in found}
    return "none", set()


def test_matches_agree_with_the_files(tuned: Tuned) -> None:
    lib = quiet_library(tuned.team, cache=False)
    assert lib.sources == ["linear", "exact", "generic"]
    assert strip_dirs(lib.entries) == strip_dirs(_team_entries(tuned))
    host = text_of(tuned.host)
    kinds = []
    for task in tuned.tasks:
        kind, found = lib.match(task.workload.mod, tuned.host)
        assert (kind, {(e.source, e.workload) for e in found}) == _classify(
            _team_entries(tuned), task.workload.mod, host)
        kinds.append(kind)
    assert kinds == ["none", "exact", "anchor", "sibling"]  # the library covers every kind
    generic_entry = next(e for e in lib.entries if e.source == "generic")
    task3 = tuned.tasks[3].workload.mod
    assert lib.exact(task3, tuned.host) is None  # its own workload, but another target
    assert lib.exact(task3, tuned.generic) == generic_entry
    assert lib.anchor_matches(tuned.tasks[2].workload.mod, tuned.host) == [lib.entries[0]]
    # host entries first, nearest shape first: linear (4,128,128), exact (4,10,128); generic
    assert [e.source for e in lib.siblings(task3, tuned.host)] == ["linear", "exact", "generic"]
    assert [e.source for e in lib.siblings(task3)] == ["linear", "exact"]  # other anchors only
    assert lib.match(tuned.tasks[3].workload.mod, tuned.generic) == ("exact", [generic_entry])


def test_other_targets_name_each_source_once(tuned: Tuned) -> None:
    lib = quiet_library(tuned.team, cache=False)
    host = text_of(tuned.host)
    generic_records = text_of(read_records(tuned.team / "runs" / "generic")[0][2][2])
    assert generic_records == text_of(tuned.generic) != str(tuned.generic)  # spelt otherwise
    assert lib.other_targets(tuned.host) == [
        f"generic: holds no record of {host} (its records are of {generic_records}): its "
        "workloads count as siblings only"]
    assert [m.split(":")[0] for m in lib.other_targets(generic_records)] == ["linear", "exact"]


def test_best_records_are_the_fastest_successful_ones(tuned: Tuned) -> None:
    lib = quiet_library(tuned.team, cache=False)
    entry = next(e for e in lib.entries if e.source == "exact")
    path = entry.work_dir / RECORD_FILE
    offsets = np.cumsum([0] + [len(x) for x in path.read_bytes().splitlines(keepends=True)])
    ranked = sorted((mean_run_secs(body[1]), n) for n, w, body in read_records(entry.work_dir)
                    if valid_run_secs(body[1]))
    records = {n: body for n, _, body in read_records(entry.work_dir)}
    expected = [(RecordLine(n, int(offsets[n - 1]), 0, tuple(records[n][1]),
                            json.dumps(records[n][2], separators=(",", ":"))), records[n])
                for _, n in ranked]
    got = lib.best_records(entry)
    assert [(r._replace(target=json.loads(r.target)), body) for r, body in got] == [
        (r._replace(target=json.loads(r.target)), body) for r, body in expected]
    assert lib.best_records(entry, 1) == got[:1]
    assert entry.best_us == mean_run_secs(got[0][0].run_secs) * 1e6
    assert tvm_ffi.structural_equal(lib.workload_mod(entry), tuned.tasks[1].workload.mod)


# -- bad sources, read-only ---------------------------------------------------------------------


def _retag_bundle(src: Path, out: Path, tvm_version: str) -> Path:
    """A copy of a bundle whose manifest says another TVM wrote it."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == MANIFEST_FILE:
                manifest = json.loads(data)
                manifest["environment"] = {"versions": {"tvm": tvm_version}}
                data = json.dumps(manifest).encode()
            zout.writestr(info, data)
    return out


def _read_only(root: Path, on: bool) -> None:
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        write = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
        os.chmod(path, (mode & ~write) if on else (mode | stat.S_IWUSR))


def test_bad_sources_are_named_once_and_nothing_is_written(tuned: Tuned, tmp_path: Path,
                                                           cache_dir: Path) -> None:
    team = Path(shutil.copytree(tuned.team, tmp_path / "team"))
    old = _retag_bundle(team / "linear.zip", team / "old.zip", "0.26.0")
    (team / "not_a_bundle.zip").write_bytes(b"PK\x03\x04 but nothing more")
    broken = Path(shutil.copytree(team / "runs" / "exact", team / "broken"))
    (broken / RECORD_FILE).write_bytes(b"\x00\x01 not json\n{]\n" * 3)
    partial = Path(shutil.copytree(team / "runs" / "exact", team / "runs" / "partial"))
    with open(partial / RECORD_FILE, "a") as f:
        f.write('[0, [["torn"\n')
    missing = tmp_path / "nowhere"
    before = file_digests(team)
    _read_only(team, True)
    try:
        with pytest.warns(MsvizWarning) as said:
            lib = Library([team, missing, team / "runs" / "exact"])
    finally:
        _read_only(team, False)
    assert file_digests(team) == before
    assert lib.sources == ["linear", "exact", "generic", "partial"]
    for bad in (old, team / "not_a_bundle.zip", broken, missing, partial):
        assert sum(str(bad) in p.split(": ")[0] for p in lib.problems) == 1, (bad, lib.problems)
    assert len(lib.problems) == 5
    assert f"{old}: written with TVM 0.26.0, this is {tvm.__version__}: skipped (its traces " \
           "may not replay)" in lib.problems
    assert f"{missing}: does not exist" in lib.problems
    assert f"{partial}: skipped 1 of 3 record line(s) (torn or corrupt)" in lib.problems
    assert [str(w.message) for w in said] == [f"library: {p}" for p in lib.problems]
    good = quiet_library(tuned.team, cache=False)
    assert strip_dirs(lib.entries[:len(good)]) == strip_dirs(good.entries)
    assert [e._replace(source="exact", work_dir=Path()) for e in lib.entries[len(good):]] == \
        strip_dirs([e for e in good.entries if e.source == "exact"])
    assert any(cache_dir.glob("library-*.json"))  # the cache went to the cache folder


# -- the cache ----------------------------------------------------------------------------------


def test_the_cache_is_read_then_rebuilt_when_stale(tuned: Tuned, tmp_path: Path,
                                                   cache_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    team = Path(shutil.copytree(tuned.team, tmp_path / "team"))
    first = quiet_library(team)
    assert len(list(cache_dir.glob("library-*.json"))) == 3

    def refuse(*args: Any) -> Any:
        raise AssertionError("a cached source was parsed again")

    with monkeypatch.context() as m:
        m.setattr(compat.Workload, "from_json", refuse)
        m.setattr(library_module, "index_work_dir", refuse)
        again = quiet_library(team)
    assert strip_dirs(again.entries) == strip_dirs(first.entries)

    indexed = []
    index_work_dir = library_module.index_work_dir
    monkeypatch.setattr(library_module, "index_work_dir",
                        lambda wd, texts: indexed.append(wd.name) or index_work_dir(wd, texts))
    record_file = team / "runs" / "exact" / RECORD_FILE
    w, body = json.loads(record_file.read_text().splitlines()[0])
    body[1] = [1e-7]  # a faster record, appended
    with open(record_file, "a") as f:
        f.write(json.dumps([w, body]) + "\n")
    stale = quiet_library(team)
    assert indexed == ["exact"]
    old = next(e for e in first.entries if e.source == "exact")
    assert [e for e in stale.entries if e.source == "exact"] == [
        old._replace(best_us=1e-7 * 1e6, trials=old.trials + 1)]

    for n, path in enumerate(sorted(cache_dir.glob("library-*.json"))):  # indexed afresh
        data = json.loads(path.read_text())  # the right key, a malformed index; or no JSON
        data["index"]["groups"] = [[0, 5, "fast", None]]
        path.write_text(json.dumps(data) if n else "{not json")
    indexed.clear()
    assert strip_dirs(quiet_library(team).entries) == strip_dirs(stale.entries)
    assert sorted(indexed) == ["exact", "generic", "linear"]

    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    monkeypatch.setenv("MSVIZ_CACHE_DIR", str(blocker / "cache"))  # cannot be written
    assert strip_dirs(quiet_library(team).entries) == strip_dirs(stale.entries)
    assert strip_dirs(quiet_library(team, cache=False).entries) == strip_dirs(stale.entries)


def test_a_sidecar_names_tasks_and_its_tvm_version(tuned: Tuned, tmp_path: Path) -> None:
    """An msviz work dir: its sidecar's trial lines name the task, its environment line the TVM
    that wrote it (another release: skipped, named once)."""
    work_dir = Path(shutil.copytree(tuned.team / "runs" / "exact", tmp_path / "msviz_run"))
    (work_dir / "logs").rename(tmp_path / "logs")  # only the sidecar names the task

    def sidecar(version: str) -> None:
        lines = [{"v": 1, "kind": "environment", "versions": {"tvm": version}},
                 {"v": 1, "kind": "trial", "line": 2, "task": "GMM-0"}, "not json {"]
        (work_dir / "msviz_sidecar.jsonl").write_text(
            "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")

    sidecar(tvm.__version__)
    (entry,) = quiet_library(work_dir).entries
    assert (entry.source, entry.task) == ("msviz_run", "GMM-0")
    sidecar("0.26.0")  # the cache is stale: the sidecar changed
    with pytest.warns(MsvizWarning):
        lib = Library([work_dir, tmp_path / "logs"])
    assert (lib.sources, lib.entries) == ([], [])
    assert lib.problems == [
        f"{tmp_path / 'logs'}: holds no work dir and no bundle (.zip)",
        f"{work_dir}: written with TVM 0.26.0, this is {tvm.__version__}: skipped (its traces "
        "may not replay)"]
