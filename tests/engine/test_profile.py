"""Every second of a session is accounted for: the profile's stages sum to the wall time."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pandas.testing as pdt
import pytest

import msviz
from msviz.engine.profile import Profile
from msviz.records.profile import OTHER, profile_frame

SEARCH = {"EvoSearch/SampleInitPopulation", "EvoSearch/Evolve/PredictNormalizedScore",
          "EvoSearch/Evolve/Mutation", "EvoSearch/PickWithEpsGreedy"}


def test_nested_timers_count_each_second_once() -> None:
    # Real sleeps, checked between bounds that hold on any host: a stage is at least what it
    # slept (sleep never wakes early) and at most what the test's own clock saw around it (a
    # loaded host may oversleep, or stall between the lines, by any amount)
    eps = 1e-3  # clock granularity
    before = time.perf_counter()
    profile = Profile()
    a = time.perf_counter()
    with profile.timeit("outer"):
        time.sleep(0.05)
        b = time.perf_counter()
        with profile.timeit("inner"):
            time.sleep(0.10)
        c = time.perf_counter()
        time.sleep(0.05)
    d = time.perf_counter()
    time.sleep(0.03)  # no timer: "other"
    e = time.perf_counter()
    row = profile.close("T", 0)
    f = time.perf_counter()
    stages = row["stages"]
    assert set(stages) == {"outer", "inner", OTHER}
    assert 0.10 - eps <= stages["inner"] <= c - b
    # the outer stage without the inner one: its own two sleeps, and what the inner one took
    # out of the time the test saw around the outer one (counted twice, it would not fit)
    assert 0.10 - eps <= stages["outer"] <= (d - a) - stages["inner"]
    # other: the sleep outside the timers, and at most the wall less the timed sleeps
    assert 0.03 - eps <= stages[OTHER] <= (f - before) - 0.20 + eps
    assert sum(stages.values()) == pytest.approx(row["wall"], rel=1e-9)
    assert 0.23 - eps <= row["wall"] <= f - before
    again = profile.close("T", None)  # the next row starts where the last one closed
    assert 0 <= again["wall"] <= time.perf_counter() - e and again["batch"] is None


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.engine.conftest import make_tiny_session

    wd = tmp_path_factory.mktemp("profiled") / "wd"
    session = make_tiny_session(wd, max_trials=32, trials_per_batch=16)
    session.start()
    assert session.wait(900) == "finished"
    return session


def test_profile_sums_to_the_session_wall_time(profiled: Any) -> None:
    events = profiled.events.snapshot()
    started = next(e for e in events if e.kind == "started").time
    wall = events[-1].time - started  # "started" to "finished"
    profile = profiled.profile
    assert list(profile.columns) == ["task", "batch", "stage", "seconds"]
    # the rows tile the run from "started" to "finished": only the moments between the clock's
    # start and "started" (taking the work dir's lock), and the last row and "finished", differ;
    # file I/O: milliseconds, but a loaded host may stall it (0.3 s, or 2% of a run slowed
    # down that much, leaves room for that; a stage left out or counted twice is seconds)
    assert profile["seconds"].sum() == pytest.approx(wall, rel=0.02, abs=0.3)
    by_stage = profile.groupby("stage")["seconds"].sum()
    assert all(by_stage.get(stage, 0) > 0 for stage in SEARCH), by_stage
    assert by_stage["SendToBuilder"] > 0 and by_stage["SendToRunner"] > 0
    assert by_stage[OTHER] < 0.05 * wall  # what no timer covers is small
    # the final event's timing is the profile in three groups
    timing = events[-1]["timing"]
    assert timing["search"] == pytest.approx(
        sum(v for k, v in by_stage.items() if k.startswith("EvoSearch/")))
    assert timing["cost_model"] == pytest.approx(by_stage["MeasureCallback/UpdateCostModel"])
    assert timing["measure"] == pytest.approx(sum(by_stage.get(k, 0.0) for k in (
        "SendToBuilder", "SendToRunner", "msviz/CheckResults", "MeasureCallback/AddToDatabase",
        "MeasureCallback/RemoveBuildArtifact")))


def test_profile_events_rows_and_the_work_dir_agree(profiled: Any) -> None:
    rows = [{"task": e.task, **e.data} for e in profiled.events.of_kind("profile")]
    batches = sorted({r["batch"] for r in rows if r["batch"] is not None})
    measured = [e["batch"] for e in profiled.events.of_kind("measured")]
    assert batches == measured  # one profile event per batch, with its row
    # setting up, each batch in order, the end: 32 trials of at most 16 a batch (two batches,
    # or three where the tiny population of 16 finds only 15 new schedules for the second)
    assert [r["batch"] for r in rows] == [None, *range(len(measured)), None]
    assert len(measured) in (2, 3) and len(profiled.trials) == 32
    for row in rows:
        assert sum(row["stages"].values()) == pytest.approx(row["wall"], rel=1e-9)
    # the frame by hand: a line per (row, stage), in the rows' order
    lines = [(r["task"], r["batch"], stage, secs) for r in rows for stage, secs in
             r["stages"].items()]
    expected = pd.DataFrame({"task": [x[0] for x in lines],
                             "batch": pd.array([x[1] for x in lines], dtype="Int64"),
                             "stage": [x[2] for x in lines],
                             "seconds": [float(x[3]) for x in lines]})
    pdt.assert_frame_equal(profile_frame(rows), expected)
    pdt.assert_frame_equal(profiled.profile, expected)
    pdt.assert_frame_equal(msviz.open(profiled.work_dir).profile, expected)  # the sidecar's
    pdt.assert_frame_equal(profiled.run.profile, expected)  # the live table's


def test_profile_frame_by_hand() -> None:
    frame = profile_frame([
        {"task": "A", "batch": None, "wall": 3.0, "stages": {"InitializeTask": 2.0, OTHER: 1.0}},
        {"task": "A", "batch": 0, "wall": 5.0, "stages": {"SendToBuilder": 5.0}},
    ])
    expected = pd.DataFrame({"task": ["A", "A", "A"],
                             "batch": pd.array([None, None, 0], dtype="Int64"),
                             "stage": ["InitializeTask", OTHER, "SendToBuilder"],
                             "seconds": [2.0, 1.0, 5.0]})
    pdt.assert_frame_equal(frame, expected)


def test_stock_work_dir_profile_is_the_logs_time_between_batches(
        stock_work_dirs: dict[str, Path]) -> None:
    run = msviz.open(stock_work_dirs["GMM"])
    profile = run.profile
    assert not profile.empty  # GMM's work dir holds two runs: two batches, one gap at least
    assert set(profile["stage"]) == {"logs: time between batches"}
    # by hand: per task, the distinct stamps of its trials, one batch from each to the next
    for task, group in run.trials.groupby("task"):
        stamps = sorted({pd.Timestamp(s) for s in group["logged_at"].dropna()})
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(stamps)]
        mine = profile[profile["task"] == task]
        assert mine["seconds"].tolist() == gaps
        assert mine["batch"].tolist() == list(range(1, len(gaps) + 1))
