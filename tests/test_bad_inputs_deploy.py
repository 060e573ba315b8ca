"""Bad inputs to this round's entries, each refused naming what is wrong, before any work and
without touching the user's files: ``msviz.vs_runtimes`` (msviz/workflows/vs_runtimes.py),
``msviz.build`` and its TunedModel (msviz/workflows/deploy.py), ``msviz build``
(msviz/cli/deploy.py), ``msviz.compare_models``' shared checks, ``Model.compile``, a
PrimFunc's ``graph=`` and ``benchmarks/vs_runtimes.py``'s options. Real TVM: the catalogue mlp
tuned 8 trials (``tuned_mlp``, tests/conftest.py); each case that changes a work dir changes a
copy. ``Run.model_profile(refresh=True)`` builds with the work dir's database too, and is
refused as ``msviz.build`` is."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import msviz
from msviz.bench import paired
from msviz.cli import main
from msviz.engine.measure import requests
from msviz.errors import MsvizWarning, TargetError
from msviz.records import database as db_files
from tests.conftest import lock_free_elsewhere, require

REPO = Path(__file__).resolve().parents[1]


def _copy(work_dir: Path, to: Path) -> Path:
    shutil.copytree(work_dir, to, ignore=shutil.ignore_patterns("*.lock"))
    return to


def _digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (its path relative to it) and its SHA-256."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def work_dir(tuned_mlp: Any) -> Path:
    return Path(tuned_mlp.work_dir)


@pytest.fixture(scope="module")
def own(work_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the work dir in a folder of its own (the export cases may not touch it)."""
    return _copy(work_dir, tmp_path_factory.mktemp("own") / "wd")


@pytest.fixture(scope="module")
def model(own: Path) -> msviz.TunedModel:
    return msviz.build(own)


# -- vs_runtimes: its arguments, refused before the work dir is read -------------------------


@pytest.mark.parametrize(("kw", "error", "message"), [
    ({"runtimes": None}, TypeError, r"runtimes must be a sequence of runtime names, e\.g\. "
     r"\('onnxruntime',\) \(of 'onnxruntime', 'openvino'\), got NoneType None"),
    ({"runtimes": "onnxruntime"}, TypeError, r"got str 'onnxruntime'"),
    ({"runtimes": ()}, ValueError, r"runtimes is empty: name at least one of 'onnxruntime', "
     r"'openvino'"),
    ({"runtimes": ("onnxruntime", "onnxruntime")}, ValueError,
     r"runtimes names 'onnxruntime' more than once"),
    ({"rounds": 0}, ValueError, r"rounds must be an int >= 1, got 0"),
    ({"rounds": 1.5}, ValueError, r"rounds must be an int >= 1, got 1\.5"),
    ({"rounds": math.nan}, ValueError, r"rounds must be an int >= 1, got nan"),
    ({"draws": 0}, ValueError, r"draws must be an int >= 1 \(fresh processes"),
    # a slip of a count is refused at once, not run for days (or until a draw's time limit)
    ({"rounds": 10**9}, ValueError, r"rounds must be at most 200, got 1000000000"),
    ({"draws": 10**6}, ValueError, r"draws must be at most 20 \(fresh processes timing the "
     r"model, each up to 600 s\), got 1000000"),
    ({"seed": "a"}, TypeError, r"seed must be an int \(or None for a random seed\), not str"),
    ({"seed": -1}, ValueError, r"seed must be within 0 \.\. "),
    ({"onnx": 3}, TypeError, r"onnx must be the path of an \.onnx file, got int 3"),
])
def test_vs_runtimes_arguments_are_refused_first(tmp_path: Path, kw: dict, error: type,
                                                 message: str) -> None:
    require("onnxruntime", "msviz[compare]")
    kw = {"runtimes": ("onnxruntime",), **kw}
    with pytest.raises(error, match=message):  # before the (missing) work dir is looked at
        msviz.vs_runtimes(tmp_path / "nowhere", **kw)


@pytest.mark.parametrize("given", [None, "two"])
def test_vs_runtimes_takes_one_work_dir(work_dir: Path, given: Any) -> None:
    require("onnxruntime", "msviz[compare]")
    value = [work_dir, work_dir] if given == "two" else given
    with pytest.raises(TypeError, match=r"vs_runtimes takes one work dir \(a str or Path\), "
                                        f"got {type(value).__name__}"):
        msviz.vs_runtimes(value, ("onnxruntime",))


# -- work dirs whose records cannot be built with as they are ---------------------------------


def _spoil(work_dir: Path, kind: str) -> int:
    """Spoil a copy's database as ``kind`` says; returns the line (1-based) spoiled."""
    records = work_dir / db_files.RECORD_FILE
    lines = records.read_text().splitlines()
    if kind == "torn last line":  # a crash mid-write: the last line cut short
        records.write_text("\n".join(lines)[:-200])
        return len(lines)
    if kind == "corrupt line":
        records.write_text("\n".join([*lines[:2], "this is not a record", *lines[2:]]) + "\n")
        return 3
    if kind == "blank workload line":
        workloads = work_dir / db_files.WORKLOAD_FILE
        found = workloads.read_text().splitlines()
        workloads.write_text("\n".join([*found[:1], "", *found[1:]]) + "\n")
        return 2
    first = json.loads(lines[0])
    first[1][1] = [1e-12] if kind == "impossible record" else [0.0]
    records.write_text("\n".join([*lines, json.dumps(first)]) + "\n")
    return len(lines) + 1


SPOILED = {
    "torn last line": r"cannot be read by stock MetaSchedule's JSONDatabase, which builds the "
                      r"model from it \(database_tuning_record\.json line {line}: torn or "
                      r"corrupt",
    "corrupt line": r"\(database_tuning_record\.json line {line}: torn or corrupt",
    "blank workload line": r"\(database_workload\.json line {line}: blank\)",
    "impossible record": r"holds 1 record\(s\) that cannot be true \(line {line}: [\d,]+ "
                         r"GFLOPS .* is above",
    "zero-time record": r"holds 1 record\(s\) that cannot be true \(line {line}: a mean run "
                        r"time of 0 s",
}


def _call(what: str, spoiled: Path, good: Path) -> Any:
    if what == "build":
        return msviz.build(spoiled)
    if what == "vs_runtimes":
        return msviz.vs_runtimes(spoiled, ("onnxruntime",), rounds=1, draws=1)
    if what == "model_profile":
        with warnings.catch_warnings():  # open's own warning about the line: not tested here
            warnings.simplefilter("ignore", MsvizWarning)
            run = msviz.open(spoiled)
        return run.model_profile(refresh=True, draws=1)
    return msviz.compare_models(good, spoiled, rounds=2, draws=1, number=1, repeat=1,
                                min_repeat_ms=0)


@pytest.mark.parametrize("what", ["build", "vs_runtimes", "compare_models", "model_profile"])
@pytest.mark.parametrize("kind", list(SPOILED))
def test_a_spoiled_database_is_refused_naming_its_line(work_dir: Path, tmp_path: Path,
                                                       what: str, kind: str) -> None:
    if what == "vs_runtimes":
        require("onnxruntime", "msviz[compare]")
    spoiled = _copy(work_dir, tmp_path / "wd")
    line = _spoil(spoiled, kind)
    before = _digest(spoiled)
    with pytest.raises(msviz.MsvizError, match=SPOILED[kind].format(line=line)) as err:
        _call(what, spoiled, work_dir)
    assert f"msviz merge {spoiled} -o CLEAN_DIR writes a copy without them" in str(err.value)
    assert _digest(spoiled) == before  # nothing written (no runtimes line, no sidecar)


BLANK_LINE = """
import sys
import msviz
spoiled, good = sys.argv[1:3]
for name, call in [("build", lambda: msviz.build(spoiled)),
                   ("vs_runtimes", lambda: msviz.vs_runtimes(spoiled, ("onnxruntime",))),
                   ("compare_models", lambda: msviz.compare_models(good, spoiled)),
                   ("model_profile", lambda: msviz.open(spoiled).model_profile(refresh=True))]:
    try:
        call()
        print(name, "ran")
    except msviz.MsvizError as err:
        print(name, "refused:", err)
"""


def test_a_blank_record_line_is_refused_not_a_crash(work_dir: Path, tmp_path: Path) -> None:
    # stock JSONDatabase dies of a segmentation fault on a blank record line: in a child, so
    # that a regression fails this test and not the whole run
    require("onnxruntime", "msviz[compare]")
    spoiled = _copy(work_dir, tmp_path / "wd")
    records = spoiled / db_files.RECORD_FILE
    lines = records.read_text().splitlines()
    records.write_text("\n".join(lines) + "\n\n")  # the blank line after the last record
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", BLANK_LINE, str(spoiled), str(work_dir)],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    printed = proc.stdout.strip().splitlines()
    assert [p.split(" ", 1)[0] for p in printed] == ["build", "vs_runtimes", "compare_models",
                                                     "model_profile"]
    for line in printed:
        assert " refused: " in line and f"database_tuning_record.json line {len(lines) + 1}: "\
               "blank" in line, line


# -- build: the target ------------------------------------------------------------------------


def test_a_target_the_records_were_not_tuned_for_is_refused(work_dir: Path) -> None:
    held = msviz.open(work_dir).trial(0).record.target.export()
    other = {**held, "mcpu": "znver3" if held.get("mcpu") != "znver3" else "skylake"}
    for target, shown in (("cuda", '"kind":"cuda"'), (other, f'"mcpu":"{other["mcpu"]}"')):
        with pytest.raises(TargetError, match=r"mlp-wd holds records of \{.*\}, not of "
                           r"the target given \(.*" + shown + r".*\): their schedules were "
                           r"tuned and timed for another target"):
            msviz.build(work_dir, target=target)
    assert msviz.build(work_dir, target="llvm").target.export()["mcpu"] == held["mcpu"]


def test_a_work_dir_of_two_targets_builds_with_the_given_targets_records(
        work_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A work dir resumed on another CPU holds records of two targets. Stock's JSONDatabase
    answers each workload's fastest record of either: the build would run a schedule timed on
    the other machine. Here each workload's slowest record of this CPU is there again, as if
    timed 10x faster on another CPU."""
    mixed = _copy(work_dir, tmp_path / "mixed")
    path = mixed / db_files.RECORD_FILE
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    host = rows[0][1][2]  # the record's target, as the file holds it
    assert all(r[1][2] == host for r in rows)
    other = {**host, "mcpu": "znver3" if host.get("mcpu") != "znver3" else "skylake"}
    valid = [r for r in rows if max(r[1][1]) < 1e9]
    fastest, slowest = {}, {}  # per workload line: this CPU's records, by mean run_secs
    for r in valid:
        mean = sum(r[1][1]) / len(r[1][1])
        fastest[r[0]] = min(fastest.get(r[0], (mean, r)), (mean, r), key=lambda x: x[0])
        slowest[r[0]] = max(slowest.get(r[0], (mean, r)), (mean, r), key=lambda x: x[0])
    assert fastest
    copies = [[w, [r[1][0], [fastest[w][0] / 10], other, r[1][3]]]
              for w, (_, r) in slowest.items()]
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(c, separators=(",", ":")) + "\n" for c in copies)
    workloads = [json.loads(x) for x in (mixed / db_files.WORKLOAD_FILE).read_text().splitlines()]

    built: list = []  # the database the build is given (every build from a work dir's)
    real = requests.deploy.build_tuned
    monkeypatch.setattr(requests.deploy, "build_tuned", lambda *a, **kw: built.append(
        kw["database"]) or real(*a, **kw))
    tuned = msviz.build(mixed, target=host)
    assert tuned.target.export()["mcpu"] == host["mcpu"] and len(built) == 1
    stock = msviz.compat.JSONDatabase(work_dir=str(mixed))
    for w, (mean, r) in fastest.items():
        mod = msviz.compat.Workload.from_json(workloads[w]).mod
        answer = built[0].query_tuning_record(mod, tuned.target, "main")
        assert answer.target.export()["mcpu"] == host["mcpu"]
        secs = [float(getattr(x, "value", x)) for x in answer.run_secs]
        assert sum(secs) / len(secs) == pytest.approx(mean)
        # what the build would have used before: the other CPU's copy
        assert stock.query_tuning_record(mod, tuned.target, "main").target.export()["mcpu"] \
            == other["mcpu"]
    # the model built with it runs right
    out = tuned(*tuned.model.random_inputs(0))
    assert np.allclose(out, msviz.build(work_dir)(*tuned.model.random_inputs(0)))
    one = requests.tuned_database(work_dir, host)  # one target: stock's own database
    assert isinstance(one, msviz.compat.JSONDatabase)


# -- TunedModel: export, time -----------------------------------------------------------------


@pytest.mark.parametrize(("where", "overwrite", "said"), [
    ("the work dir", True, "is the work dir"),
    ("inside", False, "is inside the work dir"),
    ("its parent", True, "holds the work dir"),
])
def test_export_never_writes_into_the_work_dir(model: msviz.TunedModel, own: Path, where: str,
                                               overwrite: bool, said: str) -> None:
    path = {"the work dir": own, "inside": own / "deploy", "its parent": own.parent}[where]
    before, around = _digest(own), sorted(p.name for p in own.parent.iterdir())
    with pytest.raises(msviz.WriteError, match=f"cannot write the deployed model to {path}: it "
                       f"{said} {own.resolve()} whose records the model was built with"):
        model.export(path, overwrite=overwrite)
    assert _digest(own) == before and sorted(p.name for p in own.parent.iterdir()) == around


@pytest.mark.parametrize(("path", "overwrite", "error", "message"), [
    (None, False, TypeError, r"TunedModel\.export writes to a directory path, got NoneType"),
    (3, False, TypeError, r"TunedModel\.export writes to a directory path, got int 3"),
    ("", True, msviz.WriteError, r"cannot write the deployed model to '': name a new "
                                 r"directory"),
    ("out", "no", TypeError, r"overwrite must be True or False, got str 'no'"),
])
def test_export_arguments_are_checked(model: msviz.TunedModel, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch, path: Any,
                                      overwrite: Any, error: type, message: str) -> None:
    monkeypatch.chdir(tmp_path)  # '' would name it
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(error, match=message):
        model.export(path, overwrite=overwrite)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]


def test_cli_build_refuses_to_replace_the_work_dir(own: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    before = _digest(own)
    assert main(["build", str(own), "-o", str(own), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"msviz: error: cannot write the deployed model to {own}: it is the "
                          "work dir") and len(err.strip().splitlines()) == 1
    assert _digest(own) == before


@pytest.mark.parametrize(("seed", "error"), [("x", TypeError), (-1, ValueError), (1.5, TypeError)])
def test_a_bad_seed_is_named(model: msviz.TunedModel, work_dir: Path, seed: Any,
                             error: type) -> None:
    with pytest.raises(error, match=r"seed must be "):
        model.time(rounds=2, draws=1, seed=seed)
    with pytest.raises(error, match=r"seed must be "):
        msviz.compare_models(work_dir, work_dir, seed=seed)


def test_ctrl_c_inside_time_leaves_the_measuring_lock_free(model: msviz.TunedModel,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    def interrupted(*args: Any, **kw: Any) -> Any:
        raise KeyboardInterrupt  # Ctrl-C while the draws run

    settings = {"rounds": 2, "draws": 1, "number": 1, "repeat": 1, "min_repeat_ms": 0}
    monkeypatch.setattr(paired, "run_draws", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.time(**settings)
    assert lock_free_elsewhere(requests.MEASURING_LOCK)
    monkeypatch.undo()
    again = model.time(**settings)  # the next measurement runs (does not wait on the lock)
    assert len(again.ratio) == 2 and all(math.isfinite(r) and r > 0 for r in again.ratio)


# -- Model.compile, graph= --------------------------------------------------------------------


@pytest.mark.parametrize("database", ["mlp-wd", None])
def test_compile_names_a_database_that_is_not_one(database: Any) -> None:
    with pytest.raises(TypeError, match=r"Model\.compile takes a MetaSchedule Database \(e\.g\."
                       r" JSONDatabase\(work_dir=\.\.\.\); msviz\.build\(work_dir\) builds from "
                       rf"a work dir\), got {type(database).__name__} {database!r}"):
        msviz.models.load("mlp").compile(database, "llvm")


def test_graph_on_a_primfunc_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"graph='stock' belongs to a model .* not to a single "
                                        r"PrimFunc workload"):
        msviz.Session("GMM-0", work_dir=tmp_path / "wd", graph="stock")
    assert not (tmp_path / "wd").exists()


# -- benchmarks/vs_runtimes.py ----------------------------------------------------------------


@pytest.mark.parametrize(("argv", "message"), [
    (["--processes", "0"], "--processes must be at least 2, got 0"),
    (["--processes", "1"], "--processes must be at least 2, got 1"),
    (["--rounds", "0"], "--rounds must be at least 1, got 0"),
    (["--threads", "0"], "--threads must be at least 1, got 0"),
    (["--round-s", "nan"], "--round-s must be a positive finite number, got nan"),
    (["--warmup-s", "-1"], "--warmup-s must be a non-negative finite number, got -1.0"),
    (["--rtol", "-1"], "--rtol must be a positive finite number, got -1.0"),
    (["--time", "nanm"], "--time: a budget must be a positive, finite time: 'nanm'"),
    (["--models", ""], "--models names no model"),
    (["--runtimes", ""], "nothing to time: --runtimes names none and --time no msviz budget"),
    (["--runtimes", "ort,ort"], "ort named more than once in --models/--runtimes"),
    (["--files", "FILE"], "is a file, not a directory to keep the builds in"),
])
def test_benchmark_options_are_refused_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        argv: list[str], message: str) -> None:
    found = importlib.util.spec_from_file_location("bench_vs_runtimes",
                                                   REPO / "benchmarks" / "vs_runtimes.py")
    assert found is not None and found.loader is not None
    bench = importlib.util.module_from_spec(found)
    found.loader.exec_module(bench)

    def no_work(*args: Any, **kw: Any) -> None:
        pytest.fail("the benchmark started work on bad options")

    for name in ("report_model", "peak_gflops", "machine"):
        monkeypatch.setattr(bench, name, no_work)
    (tmp_path / "FILE").write_text("mine")
    flag, value = argv
    options = {"--models": "bert-base", "--runtimes": "ort",
               flag: str(tmp_path / value) if value == "FILE" else value}
    with pytest.raises(SystemExit) as exit_info:
        bench.main([x for pair in options.items() for x in pair])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
