"""best_so_far_info against histories written out by hand; wall time in seconds."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from msviz.views import HistoryInfo, TaskHistory, best_so_far_figure, best_so_far_info
from msviz.views.history import seconds_since_first

NAN = math.nan
SECONDS_A = (0.0, 3.0, 6.0, 10.0)
SECONDS_B = (1.5, 4.0)


def test_best_so_far_latency(trials, same) -> None:
    expected = HistoryInfo("latency_us", "Latency (µs)", (
        TaskHistory("A", (0, 1, 2, 3), (100.0, 50.0, 80.0, 40.0), (100.0, 50.0, 50.0, 40.0),
                    ("ok", "ok", "ok", "ok"), SECONDS_A),
        TaskHistory("B", (0, 1), (NAN, NAN), (NAN, NAN), ("build_error", "infra_error"),
                    SECONDS_B),
    ), "Trial of its task")
    assert same(best_so_far_info(trials), expected)


def test_best_so_far_gflops(trials, same) -> None:
    expected = HistoryInfo("gflops", "Throughput (GFLOPS)", (
        TaskHistory("A", (0, 1, 2, 3), (2.0, 4.0, 2.5, 5.0), (2.0, 4.0, 4.0, 5.0),
                    ("ok", "ok", "ok", "ok"), SECONDS_A),
        TaskHistory("B", (0, 1), (NAN, NAN), (NAN, NAN), ("build_error", "infra_error"),
                    SECONDS_B),
    ), "Trial of its task")
    assert same(best_so_far_info(trials, metric="gflops"), expected)


@pytest.mark.parametrize("form", ["datetime64[ns, UTC]", "datetime64[us, UTC]",
                                  "datetime64[ms]", "iso text", "epoch seconds"])
def test_wall_time_is_seconds_in_every_form(trials, form: str) -> None:
    """pandas 2 stores ns, pandas 3 µs: the axis is seconds whatever the storage."""
    stamps = trials["timestamp"]
    if form == "iso text":
        trials["timestamp"] = pd.Series([t.isoformat() for t in stamps], dtype=object)
    elif form == "epoch seconds":
        trials["timestamp"] = [1.7e9 + (t - stamps.min()).total_seconds() for t in stamps]
    elif form == "datetime64[ms]":
        trials["timestamp"] = stamps.dt.tz_localize(None).astype(form)
    else:
        trials["timestamp"] = stamps.astype(form)
    hist = best_so_far_info(trials).tasks
    assert (hist[0].seconds, hist[1].seconds) == (SECONDS_A, SECONDS_B)


def test_wall_time_from_the_log_without_sidecar(trials) -> None:
    trials["logged_at"] = (trials.pop("timestamp").dt.tz_localize(None)).dt.floor("s")
    hist = best_so_far_info(trials).tasks
    assert (hist[0].seconds, hist[1].seconds) == ((0.0, 3.0, 6.0, 10.0), (1.0, 4.0))


def test_wall_time_from_the_runs_start(trials) -> None:
    """Given when the run started (2.5 s before its first trial), every second counts from it;
    a start after the first trial, or naive beside tz-aware stamps, is not used."""
    first = trials["timestamp"].min()
    hist = best_so_far_info(trials, started=first - pd.Timedelta(seconds=2.5)).tasks
    assert (hist[0].seconds, hist[1].seconds) == (
        tuple(s + 2.5 for s in SECONDS_A), tuple(s + 2.5 for s in SECONDS_B))
    for ignored in (first + pd.Timedelta(seconds=1), first.tz_localize(None)):
        hist = best_so_far_info(trials, started=ignored).tasks
        assert (hist[0].seconds, hist[1].seconds) == (SECONDS_A, SECONDS_B)
    # the log's naive stamps with a naive start (a stock run's scheduler log)
    trials["logged_at"] = (trials.pop("timestamp").dt.tz_localize(None)).dt.floor("s")
    start = trials["logged_at"].min() - pd.Timedelta(seconds=4)
    hist = best_so_far_info(trials, started=start).tasks
    assert (hist[0].seconds, hist[1].seconds) == ((4.0, 7.0, 10.0, 14.0), (5.0, 8.0))


def test_seconds_since_first_keeps_missing_stamps_missing() -> None:
    stamps = pd.Series([pd.Timestamp("2026-01-01T00:00:02Z"), pd.NaT,
                        pd.Timestamp("2026-01-01T00:00:00.5Z")])
    out = seconds_since_first(stamps)
    assert out[0] == 1.5 and math.isnan(out[1]) and out[2] == 0.0


def test_figure_splits_candidate_and_infrastructure_failures(trials) -> None:
    fig = best_so_far_figure(best_so_far_info(trials), x="time")
    names = [t.name for t in fig.data]
    assert names == ["A: trial", "A: best so far", "B: trial", "B: best so far",
                     "B: failed", "B: infrastructure failure"]
    assert tuple(fig.data[4].x) == (1.5,) and tuple(fig.data[5].x) == (4.0,)
    assert fig.layout.xaxis.title.text == "Wall time (s)"
    # 40..100 µs: round ticks at 1, 2, 5 x 10^k, not every digit
    assert fig.layout.yaxis.type == "log" and list(fig.layout.yaxis.tickvals) == [50.0, 100.0]
    gflops = best_so_far_figure(best_so_far_info(trials, metric="gflops"))
    assert gflops.layout.yaxis.type is None and gflops.layout.yaxis.tickvals is None


def test_empty_figure_says_why(trials) -> None:
    with pytest.warns(Warning, match="no trials"):
        info = best_so_far_info(trials.iloc[:0])
    assert info == HistoryInfo("latency_us", "Latency (µs)", ())
    fig = best_so_far_figure(info)
    assert [a.text for a in fig.layout.annotations] == ["no trials yet"]
    stock = trials.drop(columns=["timestamp"])
    fig = best_so_far_figure(best_so_far_info(stock), x="time")
    assert "no wall times" in fig.layout.annotations[0].text


def test_bad_metric_is_named(trials) -> None:
    with pytest.raises(ValueError, match="'speed'"):
        best_so_far_info(trials, metric="speed")


def test_best_line_drawn_only_where_it_steps(same) -> None:
    # failures (NaN) first, then 30, 30, 20, 25, 20, 20: the best steps at trials 2 and 4
    frame = pd.DataFrame({
        "task": ["A"] * 8, "task_trial": range(8),
        "status": ["build_error", "build_error", "ok", "ok", "ok", "ok", "ok", "ok"],
        "latency_us": [NAN, NAN, 30.0, 30.0, 20.0, 25.0, 20.0, 20.0]})
    info = best_so_far_info(frame)
    assert same(info.tasks[0].best, (NAN, NAN, 30.0, 30.0, 20.0, 20.0, 20.0, 20.0))
    line = best_so_far_figure(info).data[1]
    assert line.line.shape == "hv"
    # first point, the points where the best changes, and the last point
    assert same(tuple(line.x), (0.0, 2.0, 4.0, 7.0))
    assert same(tuple(line.y), (NAN, 30.0, 20.0, 20.0))


def test_trial_axis_says_when_it_counts_each_tasks_own_trials(trials) -> None:
    """The trials table and scatter number the run's trials; per-task counts are named."""
    fig = best_so_far_figure(best_so_far_info(trials))
    assert fig.layout.xaxis.title.text == "Trial of its task"
    focused = trials[trials["task"] == "B"]  # the dashboard's focus on one task of the run
    assert best_so_far_info(focused).trial_axis == "Trial of its task"
    one_task = trials[trials["task"] == "A"].assign(trial=lambda f: f["task_trial"])
    info = best_so_far_info(one_task)
    assert info.trial_axis == "Trial"
    assert best_so_far_figure(info).layout.xaxis.title.text == "Trial"


def test_wrong_results_are_not_drawn_as_failures(trials) -> None:
    trials.loc[3, "status"] = "wrong_result"  # B's second trial: it ran, the check failed
    fig = best_so_far_figure(best_so_far_info(trials))
    wrong = [t for t in fig.data if t.name == "B: wrong result"]
    assert [t.name for t in fig.data][-2:] == ["B: failed", "B: wrong result"]
    assert tuple(wrong[0].x) == (1.0,) and wrong[0].marker.symbol == "hexagram-open"


def test_many_tasks_get_a_panel_each_and_one_legend(same) -> None:
    """Eight tasks (SMALL_MULTIPLES_FROM is 7): a panel per task, each legend entry once."""
    from msviz.views.history import SMALL_MULTIPLES_FROM

    assert SMALL_MULTIPLES_FROM == 7
    rows = []
    for k in range(8):  # task k: latencies 40+k, 30+k, 35+k; task 5 also has a failed build
        rows += [{"task": f"T{k}", "task_trial": i, "status": "ok", "latency_us": v + k}
                 for i, v in enumerate((40.0, 30.0, 35.0))]
        if k == 5:
            rows.append({"task": "T5", "task_trial": 3, "status": "build_error",
                         "latency_us": NAN})
    fig = best_so_far_figure(best_so_far_info(pd.DataFrame(rows)))
    assert [a.text for a in fig.layout.annotations] == [f"T{k}" for k in range(8)]
    assert fig.layout.title.text == "Best so far, 8 tasks (a panel each)"
    shown = [t.name for t in fig.data if t.showlegend is not False]
    assert shown == ["trial", "best so far", "failed"]
    lines = [t for t in fig.data if t.name == "best so far"]
    assert len(lines) == 8
    for k, line in enumerate(lines):  # steps: first point, the drop at trial 1, the last point
        assert same(tuple(line.y), (40.0 + k, 30.0 + k, 30.0 + k))
        assert (line.xaxis, line.yaxis) == (("x", "y") if k == 0 else (f"x{k + 1}", f"y{k + 1}"))
    # each panel's latency axis is its own (log, around its task's values)
    assert fig.layout.yaxis8.type == "log"
    assert fig.layout.height == 90 + 170 * 2


def test_six_tasks_still_share_one_plot() -> None:
    frame = pd.DataFrame([{"task": f"T{k}", "task_trial": 0, "status": "ok",
                           "latency_us": 10.0 + k} for k in range(6)])
    fig = best_so_far_figure(best_so_far_info(frame))
    assert [t.name for t in fig.data][:2] == ["T0: trial", "T0: best so far"]
    assert not fig.layout.annotations and fig.layout.title.text == "Best so far"


def test_many_points_draw_with_webgl_in_every_panel() -> None:
    """Eight tasks of 300 trials (2,400 points over the figure): every panel's trial dots and
    failures are WebGL (one canvas), the best-so-far steps stay SVG lines; axis titles under
    the bottom panels and left of the first column."""
    from msviz.views.common import WEBGL_ABOVE

    rows = [{"task": f"T{k}", "task_trial": i, "status": "ok" if i % 10 else "build_error",
             "latency_us": 100.0 - i / 10 if i % 10 else NAN}
            for k in range(8) for i in range(300)]
    assert len(rows) > WEBGL_ABOVE
    fig = best_so_far_figure(best_so_far_info(pd.DataFrame(rows)))
    kinds = {(t.name, t.type) for t in fig.data}
    assert kinds == {("trial", "scattergl"), ("best so far", "scatter"),
                     ("failed", "scattergl")}
    # 2 rows of 4 panels: x titles on panels 5-8, y titles on panels 1 and 5
    x_titles = [fig.layout[f"xaxis{'' if k == 1 else k}"].title.text for k in range(1, 9)]
    y_titles = [fig.layout[f"yaxis{'' if k == 1 else k}"].title.text for k in range(1, 9)]
    assert x_titles == [None] * 4 + ["Trial"] * 4
    assert y_titles == ["Latency (µs)", None, None, None, "Latency (µs)", None, None, None]
    # make_subplots's grid: 4 columns, 0.06 apart
    assert fig.layout.xaxis.domain == pytest.approx((0.0, 0.205))
    assert fig.layout.xaxis8.domain == pytest.approx((0.795, 1.0))


def test_panel_titles_fit_their_panel() -> None:
    """Long task names lose a ``fused_`` prefix, then are cut to 22 characters."""
    names = ["fused_conv2d19_add14_add15_relu11", "fused_conv2d_add_relu", "max_pool2d",
             *(f"T{k}" for k in range(4))]
    frame = pd.DataFrame([{"task": n, "task_trial": 0, "status": "ok", "latency_us": 1.0}
                          for n in names])
    fig = best_so_far_figure(best_so_far_info(frame))
    assert [a.text for a in fig.layout.annotations][:3] == [
        "conv2d19_add14_add15_…", "fused_conv2d_add_relu", "max_pool2d"]
