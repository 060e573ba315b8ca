"""msviz.open on work dirs written by stock tune_tir, checked against our own parse of the files."""

from __future__ import annotations

import json
import math
import shutil
import warnings
from pathlib import Path

import pytest

import msviz
from msviz import compat
from msviz.records.database import RECORD_FILE


def _own_parse(work_dir: Path) -> list[list]:
    lines = (work_dir / RECORD_FILE).read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _expected_best_us(records: list[list]) -> float:
    means = [
        sum(secs) / len(secs) * 1e6
        for _, (_, secs, _, _) in records
        if secs and max(secs) < 1e10
    ]
    return min(means)


@pytest.mark.parametrize("key", ["GMM", "C2D", "SFM"])
def test_open_matches_stock_database(stock_work_dirs: dict[str, Path], key: str) -> None:
    wd = stock_work_dirs[key]
    records = _own_parse(wd)
    run = msviz.open(wd)
    assert len(run.trials) == len(records) > 0
    assert list(run.trials["trial"]) == list(range(len(records)))
    assert run.best().latency_us == pytest.approx(_expected_best_us(records), rel=1e-12)
    for row, (_, (_, secs, _, _)) in zip(run.trials.itertuples(), records, strict=True):
        failed = max(secs) >= 1e10
        assert (row.status != "ok") == failed
        assert (row.latency_us != row.latency_us) == failed  # NaN exactly for failures
        assert row.run_secs == tuple(secs)

    target = compat.make_target("llvm")
    stock = compat.ms.tir_integration.compile_tir(
        compat.JSONDatabase(work_dir=str(wd)), run.best().record.workload.mod, target
    )
    assert compat.structural_equal(run.best().mod, stock.mod)


def test_task_table(stock_work_dirs: dict[str, Path]) -> None:
    run = msviz.open(stock_work_dirs["GMM"])
    (task,) = run.tasks.itertuples()
    assert task.task == "main"
    assert task.flop == 2 * 128 * 128 * 128
    assert task.weight == 1.0
    assert task.trials == len(run.trials) == 12
    # the 4 of the timing-out second run, plus any the first run had on a loaded machine
    assert task.failed == int((run.trials["status"] != "ok").sum()) >= 4
    assert task.best_latency_us == run.trials["latency_us"].min()
    assert task.best_gflops == pytest.approx(task.flop / task.best_latency_us / 1e3)


def test_failed_trials_carry_log_error_text(stock_work_dirs: dict[str, Path]) -> None:
    trials = msviz.open(stock_work_dirs["GMM"]).trials
    second_run = trials.iloc[8:12]  # the stock run whose builder always times out
    assert list(second_run["status"]) == ["build_timeout"] * 4
    assert all("LocalBuilder: Timeout, killed after 0.001" in e for e in second_run["error"])
    failed = trials[trials["status"] != "ok"]
    assert failed["error"].map(lambda e: isinstance(e, str) and len(e) > 0).all()
    assert trials[trials["status"] == "ok"]["error"].isna().all()
    assert trials["logged_at"].notna().all()


def test_trial_objects(stock_work_dirs: dict[str, Path]) -> None:
    run = msviz.open(stock_work_dirs["SFM"])
    k = min(3, len(run) - 1)  # stock search may stop early on a small softmax space
    trial = run.trial(k)
    assert trial.index == k and trial.task == "main"
    _, (_, secs, _, _) = _own_parse(stock_work_dirs["SFM"])[k]
    if max(secs) < 1e10:
        assert trial.status == "ok"
        assert trial.latency_us == pytest.approx(sum(secs) / len(secs) * 1e6, rel=1e-12)
    else:
        assert trial.status != "ok" and math.isnan(trial.latency_us)
    assert trial.run_secs == tuple(secs)
    kinds = [inst.kind.name for inst in trial.trace.insts]
    assert "EnterPostproc" in kinds
    assert "T.sblock" in trial.mod.script()
    assert run.trial(-1).index == len(run) - 1
    with pytest.raises(IndexError, match="out of range"):
        run.trial(len(run))
    with pytest.raises(KeyError, match="no task 'nope'"):
        run.best("nope")


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_torn_last_line_is_skipped_with_one_warning(
    stock_work_dirs: dict[str, Path], tmp_path: Path
) -> None:
    wd = _copy(stock_work_dirs["C2D"], tmp_path / "torn")
    path = wd / RECORD_FILE
    lines = path.read_text().splitlines(keepends=True)
    last = lines[-1]
    path.write_text("".join(lines[:-1]) + last[: len(last) // 2])
    with pytest.warns(msviz.MsvizWarning) as caught:
        run = msviz.open(wd)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert str(path) in message and f"line {len(lines)}" in message
    assert len(run.trials) == len(lines) - 1
    assert run.best().latency_us > 0


def test_corrupt_middle_line_keeps_the_others(
    stock_work_dirs: dict[str, Path], tmp_path: Path
) -> None:
    wd = _copy(stock_work_dirs["SFM"], tmp_path / "corrupt")
    path = wd / RECORD_FILE
    lines = path.read_text().splitlines(keepends=True)
    original = _own_parse(wd)
    lines[2] = "garbage\n"
    lines[4] = lines[4][:100] + "@@" + lines[4][100:]  # bytes flipped inside a trace
    # (a NUL byte makes the whole line corrupt: tests/faults/test_corrupt_records.py)
    path.write_text("".join(lines))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = msviz.open(wd)
    assert [type(w.message) for w in caught] == [msviz.MsvizWarning]
    assert f"{path}: skipped 1 torn or corrupt record line(s) (line 3)" in str(caught[0].message)
    # Only the tail of a line (run_secs, target, args) is parsed on open: line 5 is kept, with
    # its own numbers; its trace is parsed (and found corrupt) when the trial is opened.
    kept = [n for n in range(1, len(lines) + 1) if n != 3]
    assert list(run.trials["line"]) == kept
    assert list(run.trials["run_secs"]) == [tuple(original[n - 1][1][1]) for n in kept]
    index = kept.index(5)
    with pytest.raises(msviz.WorkDirError, match=f"line 5 \\(trial {index}\\)"):
        _ = run.trial(index).trace
    assert run.trial(kept.index(4)).trace is not None  # its neighbours still open


def test_not_a_work_dir_names_path_and_files(tmp_path: Path) -> None:
    with pytest.raises(msviz.WorkDirError) as err:
        msviz.open(tmp_path)
    text = str(err.value)
    assert str(tmp_path) in text
    assert "database_workload.json" in text and "database_tuning_record.json" in text
    with pytest.raises(msviz.WorkDirError, match="does not exist"):
        msviz.open(tmp_path / "missing")


def test_empty_work_dir_opens_with_no_trials(tmp_path: Path) -> None:
    (tmp_path / "database_workload.json").write_text("")
    (tmp_path / RECORD_FILE).write_text("")
    run = msviz.open(tmp_path)
    assert len(run.trials) == 0 and len(run.tasks) == 0
    with pytest.raises(ValueError) as err:
        run.best()
    assert str(err.value).startswith(f"no tuning records in {tmp_path}: there is no best trial")


def test_reading_pauses_the_cycle_collector_and_restores_it() -> None:
    import gc

    from msviz.records.run import _no_cycle_collection

    assert gc.isenabled()
    with pytest.raises(RuntimeError), _no_cycle_collection():
        assert not gc.isenabled()
        raise RuntimeError("a reader error")
    assert gc.isenabled()  # re-enabled after an error too
    gc.disable()
    try:
        with _no_cycle_collection():
            pass
        assert not gc.isenabled()  # paused by someone else: left paused
    finally:
        gc.enable()


def test_a_zero_tile_factor_is_refused_not_a_crash(
    stock_work_dirs: dict[str, Path], tmp_path: Path
) -> None:
    """TVM replaying a SamplePerfectTile decision with a 0 factor dies (SIGFPE); msviz says
    which line and instruction instead, in a trial and in ``msviz.database``. Read in a child
    process, so a crash fails this test, not the suite."""
    import subprocess
    import sys

    wd = _copy(stock_work_dirs["GMM"], tmp_path / "zero")
    path = wd / RECORD_FILE
    records = _own_parse(wd)
    ok = [i for i, (_, (_, secs, _, _)) in enumerate(records) if secs and max(secs) < 1e10]
    best = min(ok, key=lambda i: sum(records[i][1][1]) / len(records[i][1][1]))
    insts, decisions = records[best][1][0]
    index, value = next((i, v) for i, v in decisions if insts[i][0] == "SamplePerfectTile")
    edited = [*value[:-1], 0]
    records[best][1][0][1] = [[i, edited if i == index else v] for i, v in decisions]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    child = f"""
import json, warnings
import msviz
from msviz import compat, workloads
out = {{}}
run = msviz.open({str(wd)!r})
try:
    run.trial({best}).trace
except msviz.WorkDirError as err:
    out["trial"] = str(err)
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    db = msviz.database({str(wd)!r}, top_k=1)
out["database_warned"] = [str(w.message) for w in said]
mod = workloads.get("GMM-0").mod
top = db.get_top_k(db.commit_workload(mod), 5)
out["database_top"] = [float(s) for s in top[0].run_secs] if top else None
print(json.dumps(out))
"""
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    said = (f"instruction {index} (SamplePerfectTile) decides tile factors {edited}: a factor "
            "of 0 splits nothing (TVM would divide by it)")
    assert out["trial"] == (f"{path} line {best + 1} (trial {best}) cannot be read as a tuning "
                            f"record: {said}")
    # merge and msviz.database keep out what cannot be true first (issue 53): the same record
    assert out["database_warned"] == [f"skipped 1 record(s): {path} line {best + 1}: cannot be "
                                      f"true (instruction #{index} SamplePerfectTile: {edited}: "
                                      "a factor below 1)"]
    # the next fastest stands in for it, as the stock database would skip an unreadable line
    second = min((i for i in ok if i != best),
                 key=lambda i: sum(records[i][1][1]) / len(records[i][1][1]))
    assert out["database_top"] == pytest.approx(records[second][1][1])
