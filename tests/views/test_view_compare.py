"""compare_info / summary_frame / compare_figure on hand-built runs (the views are pure)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from msviz.errors import MsvizWarning
from msviz.views.compare import (
    CompareInfo,
    RunCurve,
    RunSummary,
    compare_figure,
    compare_info,
    run_names,
    summary_frame,
)

NAN = math.nan
START = pd.Timestamp("2026-11-22T10:00:00", tz="UTC")


def _run(tasks: list[tuple[str, float]], rows: list[tuple[str, str, float, float]]
         ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials, tasks): ``tasks`` as (name, weight), ``rows`` as (task, status, latency_us,
    seconds since the first trial)."""
    trials = pd.DataFrame(rows, columns=["task", "status", "latency_us", "seconds"])
    trials.insert(0, "trial", range(len(trials)))
    trials["timestamp"] = START + pd.to_timedelta(trials.pop("seconds"), unit="s")
    frame = pd.DataFrame([(n, 1e6, w) for n, w in tasks], columns=["task", "flop", "weight"])
    return trials, frame


def test_one_task_runs_compare_their_best_so_far(same: Any) -> None:
    base = _run([("GMM", NAN)], [("GMM", "ok", 100.0, 0.0), ("GMM", "build_error", NAN, 1.0),
                                 ("GMM", "ok", 60.0, 2.5)])
    fast = _run([("GMM", 1.0)], [("GMM", "run_error", NAN, 0.0), ("GMM", "ok", 50.0, 4.0),
                                 ("GMM", "ok", 70.0, 5.0), ("GMM", "ok", 40.0, 8.0)])
    info = compare_info({"stock": base, "msviz": fast})
    # the best of all is 40; within 5% means <= 42: stock never, msviz at its 4th trial
    assert same(info, CompareInfo("Best latency so far (µs)", (
        RunCurve("stock", (0, 1, 2), (0.0, 1.0, 2.5), (100.0, 100.0, 60.0)),
        RunCurve("msviz", (0, 1, 2, 3), (0.0, 4.0, 5.0, 8.0), (NAN, 50.0, 50.0, 40.0)),
    ), (
        RunSummary("stock", 1, 3, 1, 60.0, 1.0, None, 2.5),
        RunSummary("msviz", 1, 4, 1, 40.0, 1.5, 4, 8.0),
    )))
    frame = summary_frame(info)
    assert list(frame.columns) == ["Tasks", "Trials", "Failed", "Best (us)",
                                   "Speedup over stock", "Trials to within 5%", "Wall time (s)"]
    assert frame.index.name == "Run" and list(frame.index) == ["stock", "msviz"]
    assert frame["Trials to within 5%"].isna().tolist() == [True, False]
    fig = compare_figure(info)
    assert [t.name for t in fig.data] == ["stock", "msviz"]
    assert list(fig.data[1].x) == [1, 2, 3] and list(fig.data[1].y) == [50.0, 50.0, 40.0]
    assert fig.layout.yaxis.title.text == "Best latency so far (µs)"
    assert fig.layout.yaxis.type == "log"
    lo, hi = fig.layout.yaxis.range  # log10 of 40 and 100, with a margin either side
    assert lo < math.log10(40.0) < math.log10(100.0) < hi and hi - lo < 0.5
    assert list(fig.layout.yaxis.tickvals) == [50.0, 100.0]  # 1, 2, 5 x 10^k in the range
    assert list(fig.layout.yaxis.ticktext) == ["50", "100"]
    by_time = compare_figure(info, x="time")
    assert list(by_time.data[0].x) == [0.0, 1.0, 2.5]
    assert by_time.layout.xaxis.title.text == "Wall time (s)"
    assert by_time.layout.xaxis.rangemode == "tozero" and fig.layout.xaxis.rangemode is None
    with pytest.raises(ValueError, match="x must be"):
        compare_figure(info, x="batch")


def test_wall_time_counts_from_each_runs_start(same: Any) -> None:
    """A run's first batch is stored together after it was searched, built and run: counted
    from the first trial it sits at 0 s; counted from the run's start, at its batch's end. A
    start with no time zone beside tz-aware stamps (or after the first trial) is not used."""
    base = _run([("GMM", 1.0)], [("GMM", "ok", 100.0, 0.0), ("GMM", "ok", 60.0, 0.01)])
    fast = _run([("GMM", 1.0)], [("GMM", "ok", 50.0, 0.0), ("GMM", "ok", 40.0, 6.0)])
    info = compare_info({"stock": base, "msviz": fast}, started={
        "stock": START - pd.Timedelta(seconds=12), "msviz": START - pd.Timedelta(seconds=3)})
    # by hand: stock 12 s and 12.01 s after its start, msviz 3 s and 9 s after its own
    assert same(info, CompareInfo("Best latency so far (µs)", (
        RunCurve("stock", (0, 1), (12.0, 12.01), (100.0, 60.0)),
        RunCurve("msviz", (0, 1), (3.0, 9.0), (50.0, 40.0)),
    ), (
        RunSummary("stock", 1, 2, 0, 60.0, 1.0, None, 12.01),
        RunSummary("msviz", 1, 2, 0, 40.0, 1.5, 2, 9.0),
    )))
    ignored = compare_info({"stock": base, "msviz": fast}, started={
        "stock": pd.Timestamp("2026-11-22T09:59:00"),  # naive beside UTC stamps
        "msviz": START + pd.Timedelta(seconds=1)})  # after the first trial
    assert [c.seconds for c in ignored.runs] == [(0.0, 0.01), (0.0, 6.0)]


def test_model_runs_compare_their_estimated_latency(same: Any) -> None:
    tasks = [("dense", 2.0), ("relu", 1.0)]
    one = _run(tasks, [("dense", "ok", 10.0, 0.0), ("relu", "ok", 3.0, 1.0),
                       ("dense", "ok", 8.0, 2.0)])
    two = _run(tasks, [("relu", "ok", 2.0, 0.0), ("relu", "ok", 1.0, 1.0)])  # dense: never
    info = compare_info({"one": one, "two": two})
    assert same(info, CompareInfo("Estimated model latency (µs)", (
        RunCurve("one", (0, 1, 2), (0.0, 1.0, 2.0), (NAN, 23.0, 19.0)),
        RunCurve("two", (0, 1), (0.0, 1.0), (NAN, NAN)),
    ), (
        RunSummary("one", 2, 3, 0, 19.0, 1.0, 3, 2.0),
        RunSummary("two", 2, 2, 0, NAN, NAN, None, 1.0),
    )))
    assert [t.name for t in compare_figure(info).data] == ["one"]  # two has nothing to draw


def test_runs_of_other_tasks_warn_and_empty_runs_say_why(same: Any) -> None:
    a = _run([("GMM", 1.0)], [("GMM", "ok", 5.0, 0.0)])
    b = _run([("C2D", 1.0)], [])
    with pytest.warns(MsvizWarning, match="different workloads .*a: GMM; b: C2D"):
        info = compare_info({"a": a, "b": b})
    # named differently, the same workload by its key: no warning (warnings are errors here)
    assert same(compare_info({"a": a, "b": b}, workloads={"a": ["123"], "b": ["123"]}), info)
    # a: its one trial is the best of all; b: nothing measured, nothing known
    assert same(info, CompareInfo("Best latency so far (µs)", (
        RunCurve("a", (0,), (0.0,), (5.0,)),
        RunCurve("b", (), (), ()),
    ), (
        RunSummary("a", 1, 1, 0, 5.0, 1.0, 1, 0.0),
        RunSummary("b", 1, 0, 0, NAN, NAN, None, NAN),
    )))
    empty = compare_info({"b": b})
    assert same(empty, CompareInfo("Best latency so far (µs)", (RunCurve("b", (), (), ()),),
                                   (RunSummary("b", 1, 0, 0, NAN, NAN, None, NAN),)))
    fig = compare_figure(empty)
    assert fig.data == () and "no successful trial" in fig.layout.annotations[0].text
    with pytest.raises(ValueError, match="at least one run"):
        compare_info({})


def test_run_names_tell_work_dirs_apart() -> None:
    assert run_names([Path("/x/a/wd"), Path("/x/b/wd")]) == ["a/wd", "b/wd"]
    assert run_names([Path("/x/stock"), Path("/y/msviz")]) == ["stock", "msviz"]
    assert run_names([Path("/x/wd"), Path("/x/wd"), None]) == ["wd", "wd (2)", "run 3"]
