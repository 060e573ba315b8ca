"""A session's live trials table: rows appended from events, equal to a fresh read at the end."""

from __future__ import annotations

import itertools
import math
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

import msviz
from msviz.engine.events import Event
from msviz.records import live as live_module
from msviz.records.live import LiveRun
from msviz.records.row import ALL_COLUMNS
from tests.engine.conftest import TINY

GMM_FLOP = 2 * 128**3  # GMM-0: a 128x128x128 matmul


def _session(work_dir: Path, **kw) -> msviz.Session:
    return msviz.Session("GMM-0", work_dir=work_dir, **{**TINY, "max_trials": 8,
                                                         "trials_per_batch": 4, **kw})


def _assert_same_as_disk(session: msviz.Session) -> None:
    """Session.trials equals msviz.open(work_dir).trials: columns, dtypes, values."""
    live, disk = session.trials, msviz.open(session.work_dir).trials
    assert list(live.columns) == list(disk.columns) == ALL_COLUMNS
    assert list(live.dtypes) == list(disk.dtypes)
    assert len(live) == len(disk) > 0
    # Timestamps: the live row's stamp is the event's; the log line is written just after it,
    # in whole seconds. Before the engine passes the event's stamp to the sidecar, the
    # sidecar's own stamp is a few ms later.
    exact = [c for c in ALL_COLUMNS if c not in ("timestamp", "logged_at")]
    pd.testing.assert_frame_equal(live[exact], disk[exact])
    lag = (disk["logged_at"] - live["logged_at"]).dt.total_seconds()
    assert lag.between(0, 1).all(), lag
    carried = all("timestamp" in row for e in session.events.of_kind("measured")
                  for row in e["trials"])
    if carried:
        pd.testing.assert_series_equal(live["timestamp"], disk["timestamp"])
    else:
        gap = (live["timestamp"] - disk["timestamp"]).dt.total_seconds().abs()
        assert (gap < 1.0).all(), gap


def test_session_trials_equal_a_fresh_read_and_resume_reads_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wd = tmp_path / "wd"
    first = _session(wd)
    sizes: list[int] = []  # the table as a subscriber sees it after each measured batch
    carried: list[int] = []  # the rows each measured event carried

    def watch(event: Event) -> None:
        if event.kind == "measured":
            sizes.append(len(first.trials))
            carried.append(len(event.data["trials"]))

    first.subscribe(watch)
    first.start()
    assert first.wait(600) == "finished"
    # batches hold up to 4 (fewer when the tiny population has fewer new schedules)
    assert sizes == list(itertools.accumulate(carried)) and sizes[-1] == 8
    assert all(1 <= n <= 4 for n in carried)
    _assert_same_as_disk(first)
    best = first.best()
    assert best.latency_us == pytest.approx(first.trials["latency_us"].min(), rel=1e-15)
    assert best.mod is not None  # its trace is read from the record file by offset

    reads: list[Path] = []

    class CountingRun(live_module.Run):
        def __init__(self, work_dir):
            reads.append(Path(work_dir))
            super().__init__(work_dir)

    monkeypatch.setattr(live_module, "Run", CountingRun)
    second = _session(wd, max_trials=12, resume=True, seed=2)
    second.start()
    assert second.wait(600) == "finished"
    trials = second.trials
    assert reads == [wd]  # the one read of the 8 earlier trials; the 4 new ones came by event
    assert list(trials["trial"]) == list(range(12))
    assert list(trials["task_trial"]) == list(range(12))
    assert list(trials["line"]) == list(range(1, 13))
    _assert_same_as_disk(second)


def _event(seq: int, kind: str, **data) -> Event:
    return Event(seq, kind, time.time(), "main", data)


def test_rows_from_events_on_a_stock_work_dir(
    stock_work_dirs: dict[str, Path], tmp_path: Path
) -> None:
    wd = tmp_path / "gmm"
    shutil.copytree(stock_work_dirs["GMM"], wd)
    run = LiveRun(wd, task="GMM-0", flop=123.0)  # the stock dir's own FLOP count wins
    assert len(run) == 12 and list(run.trials["line"]) == list(range(1, 13))
    run.feed(_event(0, "picked", generation=7))
    rows = [
        {"line": 12, "run_secs": [1e-6]},  # already read from the work dir: skipped
        {"line": 13, "run_secs": [1e-5, 3e-5], "origin": "mutated", "mutator": "MutateTileSize",
         "parent": 3, "predicted_score": 0.5, "timestamp": 1767323045.678901},
        {"line": 14, "run_secs": None, "error_kind": "infra",
         "error": "watchdog: the runner did not answer (Timeout)"},
        {"line": 15, "run_secs": None, "error_kind": "build",
         "error": "LocalBuilder: Timeout, killed after 30 seconds", "generation": 9},
    ]
    run.feed(_event(1, "measured", batch=4, trials=rows), workload=0)
    trials = run.trials
    new = trials.iloc[12:]
    assert list(new["trial"]) == [12, 13, 14] and list(new["task_trial"]) == [12, 13, 14]
    assert list(new["task"]) == ["main"] * 3  # the stock dir's name for workload 0
    assert list(new["status"]) == ["ok", "infra_error", "build_timeout"]
    assert new["latency_us"].iloc[0] == pytest.approx(20.0, rel=1e-15)
    assert new["gflops"].iloc[0] == pytest.approx(GMM_FLOP / 20.0 / 1e3, rel=1e-12)
    assert new["latency_us"].iloc[1:].isna().all() and new["gflops"].iloc[1:].isna().all()
    assert list(new["run_secs"]) == [(1e-5, 3e-5), (1e10,), (1e10,)]
    assert list(new["batch"]) == [4, 4, 4] and list(new["generation"]) == [7, 7, 9]
    assert new["timestamp"].iloc[0] == pd.Timestamp("2026-01-02T03:04:05.678", tz="UTC")
    assert new["mutator"].iloc[0] == "MutateTileSize" and new["parent"].iloc[0] == 3
    assert list(trials.dtypes) == list(msviz.open(wd).trials.dtypes)

    run.feed(_event(2, "remeasured", line=13, run_secs=[2e-5], new_trial=False))
    run.feed(_event(3, "remeasured", line=13, run_secs=None, new_trial=False))
    assert run.trials["remeasured_secs"].iloc[12] == [[2e-5], None]
    assert trials["remeasured_secs"].iloc[12] is None  # a frame handed out earlier is unchanged

    (task,) = run.tasks.itertuples()
    assert task.trials == 15 and task.failed == int((run.trials["status"] != "ok").sum())
    assert task.flop == GMM_FLOP and task.best_latency_us == run.trials["latency_us"].min()
    with pytest.raises(msviz.WorkDirError, match="has no complete line 13"):
        _ = run.trial(12).trace  # the event came without its record: said, not a crash


def test_empty_work_dir_then_first_batch(tmp_path: Path) -> None:
    run = LiveRun(tmp_path / "new", task="GMM-0", flop=GMM_FLOP)  # nothing on disk yet
    assert len(run.trials) == 0 and list(run.trials.columns) == ALL_COLUMNS
    with pytest.raises(ValueError, match="no tuning records in"):
        run.best()
    run.feed(_event(0, "measured", batch=0, trials=[{"line": 1, "run_secs": [4e-6]}]),
             workload=0)
    assert run.trials["task"].iloc[0] == "main"  # the event's task
    assert run.trials["gflops"].iloc[0] == pytest.approx(GMM_FLOP / 4.0 / 1e3, rel=1e-12)
    assert math.isnan(run.tasks["weight"].iloc[0])


def test_a_bad_event_never_loses_the_table(
    stock_work_dirs: dict[str, Path], tmp_path: Path
) -> None:
    wd = tmp_path / "gmm"
    shutil.copytree(stock_work_dirs["GMM"], wd)
    session = msviz.Session("GMM-0", work_dir=wd, resume=True)  # idle: events by hand
    assert len(session.trials) == 12
    session.events.emit("measured", "GMM-0", batch=0, trials=[{"line": 13, "run_secs": "x"}])
    (warning,) = session.events.of_kind("warning")
    assert warning["message"].startswith(
        "the live trials table could not take a measured event (ValueError")
    assert not session.events.of_kind("callback_error")  # still subscribed
    assert list(session.trials["line"]) == list(range(1, 13))  # read again from the work dir
    session.events.emit("measured", "GMM-0", batch=0, trials=[
        {"line": 13, "run_secs": [5e-6], "workload": 0}])
    assert list(session.trials["line"]) == list(range(1, 14))
