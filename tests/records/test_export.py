"""Trials out: Run.to_parquet / to_csv / export, msviz export, msviz.open_many (real tuned work
dirs: stock tune_tir for this machine's CPU, an msviz session for a generic CPU)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import tvm

import msviz
from msviz.archive import export as export_module
from msviz.cli import main
from msviz.errors import MissingExtraError, MsvizWarning, WriteError
from msviz.records.typed_trials import export_frame

#: The exported columns and their dtypes, written out by hand.
EXPORT_DTYPES = {
    "task": "category", "trial": "int64", "task_trial": "int64", "status": "category",
    "latency_us": "float64", "gflops": "float64", "run_secs": "object", "error": "string",
    "workload": "int64", "line": "int64", "logged_at": "datetime64[ns, UTC]",
    "timestamp": "datetime64[ns, UTC]", "batch": "Int64", "generation": "Int64",
    "iteration": "Int64", "origin": "string", "pick": "string", "predicted_score": "float64",
    "design_space": "Int64", "mutator": "string", "parent": "Int64", "ancestor_line": "Int64",
    "check": "string", "check_detail": "string", "device": "string",
    "carried_from": "string", "carry": "string", "adjusted": "string",
    "remeasured_secs": "object", "target": "string", "workload_key": "string",
    "task_index": "Int64", "flop": "float64", "weight": "float64",
    "task_best_latency_us": "float64", "task_done": "boolean",
}


def parse_records(work_dir: Path) -> list[dict]:
    """The record file read with json, one dict per line: run_secs, mean µs, target text."""
    keys = [json.loads(line)[0]
            for line in (work_dir / "database_workload.json").read_text().splitlines()
            if line.strip()]
    out = []
    for line in (work_dir / "database_tuning_record.json").read_text().splitlines():
        workload, (_, run_secs, target, _) = json.loads(line)
        ok = run_secs is not None and max(run_secs) < 1e10
        out.append({"run_secs": run_secs, "target": str(tvm.target.Target(target)),
                    "key": keys[workload],
                    "us": sum(run_secs) / len(run_secs) * 1e6 if ok else math.nan})
    return out


def same_number(a: object, b: object) -> bool:
    if pd.isna(a) and pd.isna(b):
        return True
    return math.isclose(float(a), float(b), rel_tol=1e-9)  # type: ignore[arg-type]


def check_values(frame: pd.DataFrame, run: msviz.Run, work_dir: Path) -> None:
    """``frame`` (read back) against run.trials and an own parse of the record file."""
    parsed = parse_records(work_dir)
    trials = run.trials
    assert len(frame) == len(trials) == len(parsed)
    assert list(frame["task"].astype(str)) == list(trials["task"])
    assert list(frame["status"].astype(str)) == list(trials["status"])
    assert all(map(same_number, frame["latency_us"], [p["us"] for p in parsed]))
    assert [None if v is None else list(v) for v in frame["run_secs"]] == [
        p["run_secs"] for p in parsed]
    assert list(frame["target"]) == [p["target"] for p in parsed]
    assert list(frame["workload_key"]) == [p["key"] for p in parsed]
    best = min(p["us"] for p in parsed if not math.isnan(p["us"]))
    assert all(math.isclose(v, best) for v in frame["task_best_latency_us"])
    for column in ("timestamp", "batch", "generation", "predicted_score", "origin", "mutator"):
        assert all(map(lambda a, b: (pd.isna(a) and pd.isna(b)) or a == b,
                       frame[column], trials[column])), column


def test_parquet_round_trips(generic_work_dir: Path, tmp_path: Path) -> None:
    run = msviz.open(generic_work_dir)
    path = run.to_parquet(tmp_path / "trials.parquet")
    back = pd.read_parquet(path)
    assert {c: str(t) for c, t in back.dtypes.items()} == EXPORT_DTYPES
    check_values(back, run, generic_work_dir)
    # the sidecar made it: timestamps, batches, the re-measurement as a list of lists
    assert back["timestamp"].notna().all() and back["batch"].notna().all()
    again = [v for v in back["remeasured_secs"] if v is not None]
    expected = [v for v in run.trials["remeasured_secs"] if v is not None]
    assert [[list(s) for s in v] for v in again] == [[list(s) for s in v] for v in expected]
    assert len(again) == 1 and len(again[0][0]) == 2
    # and nothing but the file: no temporary left next to it
    assert [p.name for p in tmp_path.iterdir()] == ["trials.parquet"]


def test_parquet_of_stock_work_dir(stock_work_dirs: dict, tmp_path: Path) -> None:
    work_dir = stock_work_dirs["GMM"]
    run = msviz.open(work_dir)
    back = pd.read_parquet(run.to_parquet(tmp_path / "t.parquet"))
    assert {c: str(t) for c, t in back.dtypes.items()} == EXPORT_DTYPES
    check_values(back, run, work_dir)
    assert set(back["status"].cat.categories) >= {"ok", "build_timeout"}
    assert (back["status"] != "ok").sum() == 4  # the fixture's timed-out builds
    assert back["logged_at"].notna().all()


def test_csv_is_readable(generic_work_dir: Path, tmp_path: Path) -> None:
    run = msviz.open(generic_work_dir)
    path = run.to_csv(tmp_path / "trials.csv")
    back = pd.read_csv(path)
    assert list(back.columns) == list(EXPORT_DTYPES)
    parsed = parse_records(generic_work_dir)
    assert [json.loads(v) for v in back["run_secs"]] == [p["run_secs"] for p in parsed]
    assert list(back["target"]) == [p["target"] for p in parsed]
    stamps = pd.to_datetime(back["timestamp"], utc=True, format="ISO8601")
    assert list(stamps) == list(run.trials["timestamp"])


def test_without_pyarrow(generic_work_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture) -> None:
    # as if the extra were not installed (pandas itself uses pyarrow: it stays importable)
    monkeypatch.setattr(export_module, "PARQUET_MODULE", "pyarrow_not_installed")
    run = msviz.open(generic_work_dir)
    with pytest.raises(MissingExtraError, match=r"msviz\[parquet\]"):
        run.to_parquet(tmp_path / "t.parquet")
    assert not any(tmp_path.iterdir())
    assert main(["export", str(generic_work_dir), "-o", str(tmp_path / "t.parquet")]) == 2
    assert "pip install msviz[parquet]" in capsys.readouterr().err
    copy = tmp_path / "wd"
    copy.mkdir()
    for name in ("database_workload.json", "database_tuning_record.json"):
        (copy / name).write_bytes((generic_work_dir / name).read_bytes())
    with pytest.warns(MsvizWarning, match="pyarrow is not installed: wrote CSV"):
        path = msviz.open(copy).export()
    assert path == copy / "trials.csv"
    assert len(pd.read_csv(path)) == len(run.trials)


def test_unwritable_paths(generic_work_dir: Path, tmp_path: Path) -> None:
    run = msviz.open(generic_work_dir)
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(WriteError, match=f"{blocker}/t.parquet"):
        run.to_parquet(blocker / "t.parquet")
    folder = tmp_path / "t.csv"  # a folder where the file should go
    folder.mkdir()
    with pytest.raises(WriteError, match=f"cannot write the file {folder}"):
        run.to_csv(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "t.csv"]
    assert not any(folder.iterdir())
    with pytest.raises(WriteError, match=r"one of \.parquet, \.csv"):
        run.export(tmp_path / "t.xlsx")


def test_cli_export(generic_work_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
                    ) -> None:
    out = tmp_path / "t.parquet"
    assert main(["export", str(generic_work_dir), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    assert len(pd.read_parquet(out)) == len(msviz.open(generic_work_dir).trials)


def test_open_many(stock_work_dirs: dict, generic_work_dir: Path) -> None:
    dirs = [stock_work_dirs["GMM"], generic_work_dir]
    frame = msviz.open_many(dirs)
    parsed = [parse_records(d) for d in dirs]
    assert list(frame.columns) == ["run", *EXPORT_DTYPES]
    assert str(frame["run"].dtype) == "category"
    assert list(frame["run"].cat.categories) == ["GMM", "gmm_generic"]
    assert list(frame["run"]) == ["GMM"] * len(parsed[0]) + ["gmm_generic"] * len(parsed[1])
    assert list(frame["target"]) == [p["target"] for p in parsed[0] + parsed[1]]
    assert list(frame.index) == list(range(len(frame)))
    # one workload on two targets: a groupby gives each target's best
    best = frame.groupby("target")["latency_us"].min()
    expected = {}
    for p in parsed[0] + parsed[1]:
        if not math.isnan(p["us"]):
            expected[p["target"]] = min(expected.get(p["target"], math.inf), p["us"])
    assert set(best.index) == set(expected) and len(expected) == 2
    assert all(math.isclose(best[t], us) for t, us in expected.items())
    named = msviz.open_many([msviz.open(d) for d in dirs], names=["host", "generic"])
    assert list(named["run"].cat.categories) == ["host", "generic"]
    with pytest.raises(ValueError, match="2 names for 1 runs"):
        msviz.open_many(dirs[:1], names=["a", "b"])


def test_export_frame_is_what_is_written(generic_work_dir: Path, tmp_path: Path) -> None:
    run = msviz.open(generic_work_dir)
    frame = export_frame(run)
    back = pd.read_parquet(run.to_parquet(tmp_path / "t.parquet"))
    lists = ["run_secs", "remeasured_secs"]
    pd.testing.assert_frame_equal(back.drop(columns=lists), frame.drop(columns=lists))


def test_empty_work_dir_round_trips(tmp_path: Path) -> None:
    work_dir = tmp_path / "wd"
    work_dir.mkdir()
    for name in ("database_workload.json", "database_tuning_record.json"):
        (work_dir / name).write_text("")
    run = msviz.open(work_dir)
    back = pd.read_parquet(run.to_parquet(tmp_path / "t.parquet"))
    assert len(back) == 0
    assert {c: str(t) for c, t in back.dtypes.items()} == EXPORT_DTYPES
    assert list(pd.read_csv(run.to_csv(tmp_path / "t.csv")).columns) == list(EXPORT_DTYPES)
