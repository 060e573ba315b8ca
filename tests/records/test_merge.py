"""Merge by target: two real tiny runs of GMM-0 (stock tune_tir for this machine's CPU, an msviz
session for a generic CPU) merged; compile_tir for each target picks that target's best."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import tvm

import msviz
from msviz import compat, workloads
from msviz.cli import main
from msviz.errors import MsvizWarning, TargetError, WorkDirError, WriteError

RECORDS = "database_tuning_record.json"
WORKLOADS = "database_workload.json"


def read_lines(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def parse_work_dir(work_dir: Path) -> list[tuple]:
    """(workload hash, trace, target text, run_secs) of each record, by our own parse."""
    keys = [k for k, _ in read_lines(work_dir / WORKLOADS)]
    return [(keys[w], trace, str(tvm.target.Target(target)), run_secs)
            for w, (trace, run_secs, target, _) in read_lines(work_dir / RECORDS)]


def best_traces(records: list[tuple]) -> dict[str, list]:
    """Each target's fastest valid record's trace (the mean of run_secs, as GetTopK sorts)."""
    best: dict[str, tuple[float, list]] = {}
    for _, trace, target, secs in records:
        if not secs or all(s == 1e10 for s in secs):  # TuningRecord::IsValid
            continue
        mean = sum(secs) / len(secs)
        if target not in best or mean < best[target][0]:
            best[target] = (mean, trace)
    return {t: trace for t, (_, trace) in best.items()}


def picked_trace(database: object, target: tvm.target.Target) -> list:
    sch = compat.ms.tir_integration.compile_tir(database, workloads.get("GMM-0").mod, target)
    return compat.to_jsonable(sch.trace.as_json())


@pytest.fixture(scope="module")
def runs(stock_work_dirs: dict, generic_work_dir: Path, tmp_path_factory: pytest.TempPathFactory
         ) -> tuple[Path, Path]:
    """The host run, and a copy of the generic run whose every time is 1000x shorter: the
    generic target's records are then faster than any host record."""
    host = stock_work_dirs["GMM"]
    generic = tmp_path_factory.mktemp("merge") / "generic_fast"
    generic.mkdir()
    shutil.copy(generic_work_dir / WORKLOADS, generic / WORKLOADS)
    lines = []
    for workload, (trace, secs, target, args) in read_lines(generic_work_dir / RECORDS):
        secs = [s / 1000 for s in secs] if max(secs) < 1e10 else secs
        lines.append(json.dumps([workload, [trace, secs, target, args]]))
    (generic / RECORDS).write_text("\n".join(lines) + "\n")
    return host, generic


def test_compile_tir_picks_each_targets_best(runs: tuple[Path, Path], tmp_path: Path) -> None:
    host, generic = runs
    out = tmp_path / "merged"
    result = msviz.merge([host, generic, host], out)  # the host dir twice: all duplicates
    mine = parse_work_dir(host) + parse_work_dir(generic)
    assert len({r[0] for r in mine}) == 1  # one workload, two targets
    unique = {(k, json.dumps(t), g, tuple(s)) for k, t, g, s in mine}
    assert (result.workloads, result.records) == (1, len(unique))
    assert result.duplicates == len(parse_work_dir(host))
    merged = parse_work_dir(out)
    assert sorted(map(json.dumps, merged)) == sorted(map(json.dumps, mine))
    best = best_traces(merged)
    host_target, generic_target = (tvm.target.Target(read_lines(d / RECORDS)[0][1][2])
                                   for d in (host, generic))
    host_text, generic_text = str(host_target), str(generic_target)
    assert set(best) == {host_text, generic_text}
    assert best[host_text] != best[generic_text]
    assert result.targets == {host_text: len(parse_work_dir(host)),
                              generic_text: len(parse_work_dir(generic))}
    # stock: the merged dir loads, but its query ignores the target (the generic record wins)
    stock = compat.JSONDatabase(work_dir=str(out), allow_missing=False)
    assert len(stock.get_all_tuning_records()) == result.records
    assert picked_trace(stock, host_target) == best[generic_text]
    # msviz.database: each target's own best
    assert picked_trace(msviz.database(out, target=host_target), host_target) == best[host_text]
    assert picked_trace(msviz.database(out, target=generic_target), generic_target) == \
        best[generic_text]
    # every record of the target, failures too, when asked: the same best
    everything = msviz.database(out, target=host_target, top_k=None)
    assert len(everything.get_all_tuning_records()) == result.targets[host_text]
    assert picked_trace(everything, host_target) == best[host_text]
    assert len(msviz.database(out, target=host_target).get_all_tuning_records()) == 1
    # "llvm" is this machine's CPU, the host run's target
    assert picked_trace(msviz.database(out, target="llvm"), host_target) == best[host_text]
    # a per-target merge is a dir stock compile_tir reads as is
    only_host = msviz.merge([host, generic], tmp_path / "host_only", target=host_target)
    assert only_host.other_target == len(parse_work_dir(generic))
    stock_host = compat.JSONDatabase(work_dir=str(tmp_path / "host_only"), allow_missing=False)
    assert picked_trace(stock_host, host_target) == best[host_text]


def test_database_of_another_target(runs: tuple[Path, Path]) -> None:
    host, _ = runs
    with pytest.raises(TargetError, match=r"holds no record of target.*its records' targets"):
        msviz.database(host, target={"kind": "llvm", "mcpu": "skylake", "num-cores": 8})


def test_one_name_two_workloads(stock_work_dirs: dict, tmp_path: Path) -> None:
    gmm, c2d = stock_work_dirs["GMM"], stock_work_dirs["C2D"]
    with pytest.warns(MsvizWarning, match=r"task 'main' is a different workload in .*GMM and "
                      r".*C2D \(structural hash \d+ and \d+\): kept apart"):
        result = msviz.merge([gmm, c2d], tmp_path / "merged")
    keys = [k for k, _ in read_lines(tmp_path / "merged" / WORKLOADS)]
    assert result.workloads == len(set(keys)) == 2
    assert result.records == len(parse_work_dir(gmm)) + len(parse_work_dir(c2d))
    run = msviz.open(tmp_path / "merged")
    assert len(run.tasks) == 2


def test_unreadable_records_are_skipped(runs: tuple[Path, Path], tmp_path: Path) -> None:
    host, _ = runs
    bad = tmp_path / "bad"
    shutil.copytree(host, bad)
    lines = (host / RECORDS).read_text().splitlines()
    workload, (trace, secs, target, args) = json.loads(lines[0])
    lines.insert(1, json.dumps([workload, [trace, secs, {"kind": "no_such_kind"}, args]]))
    lines.insert(3, json.dumps([7, [trace, secs, target, args]]))  # no workload 7
    old = json.loads(json.dumps(trace))  # as TVM before the s_tir rename wrote it
    assert old[0][0][0] == "GetSBlock"
    old[0][0][0] = "GetBlock"
    lines.insert(5, json.dumps([workload, [old, secs, target, args]]))
    lines.append(lines[0][: len(lines[0]) // 2])  # torn
    (bad / RECORDS).write_text("\n".join(lines) + "\n")
    torn = len(lines)
    with pytest.warns(MsvizWarning) as seen:
        result = msviz.merge([bad], tmp_path / "merged")
    text = "\n".join(str(w.message) for w in seen)
    assert f"{bad / RECORDS} line 2: its target cannot be read" in text
    assert f"{bad / RECORDS} line 4: its workload cannot be read" in text
    assert f"{bad / RECORDS} line 6: its trace uses the instruction 'GetBlock'" in text
    assert f"{bad / RECORDS} line {torn}: not a tuning record" in text
    assert len(result.skipped) == 4
    assert result.records == len(parse_work_dir(host))
    assert len(compat.JSONDatabase(work_dir=str(tmp_path / "merged"), allow_missing=False)
               .get_all_tuning_records()) == result.records


def test_bad_output_and_sources(runs: tuple[Path, Path], tmp_path: Path) -> None:
    host, generic = runs
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("x")
    with pytest.raises(WriteError, match=f"cannot merge into {taken}: it exists"):
        msviz.merge([host], taken)
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(WriteError, match=f"cannot write the work dir {blocker}/merged"):
        msviz.merge([host], blocker / "merged")
    with pytest.raises(WorkDirError, match="is not a MetaSchedule work dir"):
        msviz.merge([host, tmp_path / "nowhere"], tmp_path / "merged")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "taken"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert msviz.merge([generic], empty).records == len(parse_work_dir(generic))


def test_cli_merge(runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture
                   ) -> None:
    host, generic = runs
    out = tmp_path / "merged"
    target = json.dumps(read_lines(generic / RECORDS)[0][1][2])
    assert main(["merge", str(host), str(generic), "-o", str(out), "--target", target]) == 0
    n = len(parse_work_dir(generic))
    text = str(tvm.target.Target(json.loads(target)))
    assert capsys.readouterr().out.splitlines() == [
        f"wrote {out}: 1 workload(s), {n} record(s); dropped 0 exact duplicate(s), "
        f"{len(parse_work_dir(host))} record(s) of other targets",
        f"  {n} record(s) of {text}"]
    assert {r[2] for r in parse_work_dir(out)} == {text}
    assert main(["merge", str(host), "-o", str(out)]) == 2
    assert f"cannot merge into {out}" in capsys.readouterr().err
    assert not math.isnan(msviz.open(out).trials["latency_us"].min())
