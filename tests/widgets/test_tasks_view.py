"""The Tasks tab with real widget state: on a stock ``tune_relax`` run of 4 tasks, and live
from hand-built events of the agreed multi-task schema on a real session's dashboard."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pandas as pd
import pytest

import msviz
from msviz.engine.events import Event
from msviz.views.tasks import TASK_TABLE_COLUMNS, TasksInfo
from msviz.widgets import Dashboard
from msviz.widgets.tasks_view import ALL_TASKS, TasksView
from tests.conftest import MODEL_TASKS


@pytest.fixture(scope="module")
def model_run(stock_model_work_dir: Path) -> msviz.Run:
    return msviz.open(stock_model_work_dir)


def test_run_dashboard_has_a_tasks_tab(model_run: msviz.Run) -> None:
    dash = Dashboard(model_run)
    assert dash.tabs.titles == ("Trials", "Tasks", "Plots", "Time", "Trace", "Code")
    view = dash.tasks_view
    assert list(view.focus.options) == [ALL_TASKS, *MODEL_TASKS]
    frame = view.info.frame
    assert list(frame["Name"]) == list(MODEL_TASKS)
    best = model_run.trials.groupby("task")["latency_us"].min()
    assert list(frame["Latency (us)"]) == [best[n] for n in MODEL_TASKS]
    assert list(frame["Trials"]) == [4, 4, 4, 4]
    assert list(frame["Weighted Latency (us)"]) == [
        best[n] * (2 if n == "fused_matmul2_add_relu" else 1) for n in MODEL_TASKS]
    total = sum(frame["Weighted Latency (us)"])
    assert view.info.total_latency_us == pytest.approx(total, rel=1e-12)
    assert f"Total latency (us): {total:.4f}" in view.table.value
    assert dash.progress_label.value == f"16/16 trials · model est. {total:.3f} µs"
    assert view.table.value.count("msviz-task-row") == 4
    # the estimate is known once every task had a success: the last task's first success
    ok = model_run.trials[model_run.trials["status"] == "ok"]
    known = int(ok.groupby("task")["trial"].min().max())
    assert view.latency_info.known_from == known > 4
    # drawn where the estimate steps: from the trial it is known, each change, the last trial
    x, y = list(view.latency.data[0].x), list(view.latency.data[0].y)
    estimate = view.latency_info.latency_us
    steps = [t for t in range(known, len(estimate))
             if t in (known, len(estimate) - 1) or estimate[t] != estimate[t - 1]]
    assert x == [float(t) for t in steps] and y == [estimate[t] for t in steps]
    assert view.latency.data[0].y[-1] == pytest.approx(total, rel=1e-12)
    assert [t.name for t in view.task_trials.data] == list(MODEL_TASKS)
    assert [len(t.x) for t in view.task_trials.data] == [4, 4, 4, 4]
    view.x_axis.value = "time"
    assert view.latency.layout.xaxis.title.text == "Wall time (s)"


def test_a_single_task_run_has_no_tasks_tab(stock_run) -> None:
    assert "Tasks" not in Dashboard(stock_run).tabs.titles


def test_selecting_a_task_focuses_every_tab(model_run: msviz.Run) -> None:
    dash = Dashboard(model_run)
    trials = model_run.trials
    mine = trials[trials["task"] == "matmul"]
    best = int(mine.loc[mine["latency_us"].idxmin(), "trial"])
    dash.tasks_view.focus.value = "matmul"
    assert dash.selection.task == "matmul"
    assert dash.table.filters == {"task": "matmul"} and dash.table.total == len(mine)
    assert {row["task"] for row in dash.table.rows} == {"matmul"}
    assert dash.selection.trial == best
    assert dash.trace_view.trial.index == best and dash.trace_view.trial.task == "matmul"
    assert f"trial {best}" in dash.code_view.children[0].children[1].value
    assert "msviz-focused" in dash.tasks_view.table.value
    dash.tabs.selected_index = dash.tabs.titles.index("Plots")
    points = sum(len(t.x) for t in dash.plots.scatter.data)
    assert points == len(mine)
    # back to all tasks
    dash.tasks_view.focus.value = ALL_TASKS
    assert dash.selection.task == "" and dash.table.total == len(trials)
    assert sum(len(t.x) for t in dash.plots.scatter.data) == len(trials)


def _events(kinds_data: list[tuple[str, dict]], task: str = "mlp") -> list[Event]:
    now = time.time()
    return [Event(i, kind, now + i, data.pop("_task", task), data)
            for i, (kind, data) in enumerate(kinds_data)]


TASKS = [{"index": 0, "name": "dense", "flop": 8000.0, "weight": 2, "max_trials": None,
          "pinned": False, "skipped": False},
         {"index": 1, "name": "relu", "flop": 100.0, "weight": 1, "max_trials": None,
          "pinned": False, "skipped": False}]


def _trials(rows: list[tuple[str, float]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["task", "latency_us"])
    frame.insert(1, "trial", range(len(frame)))
    frame["status"] = ["ok" if v == v else "build_error" for v in frame["latency_us"]]
    return frame


def _task_frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["ID", *TASK_TABLE_COLUMNS]).set_index("ID")


def _same_tasks_info(info: TasksInfo, expected: TasksInfo) -> None:
    pd.testing.assert_frame_equal(info.frame, expected.frame)
    assert info._replace(frame=None) == expected._replace(frame=None)


def test_tasks_view_live_from_events() -> None:
    view = TasksView()
    assert "no tasks yet" in view.table.value
    events = _events([
        ("started", {"model": "mlp", "num_tasks": 2}),
        ("tasks", {"tasks": [dict(t) for t in TASKS]}),
        ("scheduled", {"batch": 0, "scheduler": "gradient", "pick": 0, "pick_name": "dense",
                       "reason": "round-robin warm-up", "forced": False,
                       "gradients": [None, None], "best_us": [None, None],
                       "trials": [0, 0], "done": [False, False], "task_index": 0,
                       "_task": "dense"}),
    ])
    view.update_from_events(events, _trials([]))
    nan = math.nan
    _same_tasks_info(view.info, TasksInfo(_task_frame([
        (0, "dense", 8000.0, 2.0, nan, nan, nan, 0, False, nan, True),
        (1, "relu", 100.0, 1.0, nan, nan, nan, 0, False, nan, False),
    ]), 0, "gradient", "round-robin warm-up", None))
    assert "round-robin warm-up" in view.table.value
    assert view.latency.layout.annotations[0].text == "no trials yet"
    later = _events([
        ("scheduled", {"batch": 2, "scheduler": "gradient", "pick": 1, "pick_name": "relu",
                       "reason": "forced by user", "forced": True, "gradients": [3.5, 0.25],
                       "best_us": [4.0, 2.0], "trials": [2, 1], "done": [False, False],
                       "task_index": 1, "_task": "relu"}),
        ("task_done", {"task_index": 0, "reason": "reached max_trials_per_task",
                       "_task": "dense"}),
        ("end_to_end", {"untuned_us": 50.0, "tuned_us": 12.5, "match": True,
                        "max_abs_diff": 0.0, "fallback": ["relu"], "error": None}),
    ])
    trials = _trials([("dense", 6.0), ("relu", 2.0), ("dense", 4.0)])
    view.update_from_events(later, trials)
    # dense: best 4 us of 8,000 FLOP = 2 GFLOPS, weight 2; relu: 100 FLOP in 2 us = 0.05
    _same_tasks_info(view.info, TasksInfo(_task_frame([
        (0, "dense", 8000.0, 2.0, 2.0, 4.0, 8.0, 2, True, 3.5, False),
        (1, "relu", 100.0, 1.0, 0.05, 2.0, 2.0, 1, False, 0.25, True),
    ]), 1, "gradient", "forced by user", 10.0))
    assert "&#9654; relu <i>(next)</i>" in view.table.value
    assert "forced by user" in view.table.value
    # estimated model latency: unknown at trial 0, then 2 x 6 + 2, then 2 x 4 + 2
    assert list(view.latency.data[0].x) == [1.0, 2.0]
    assert list(view.latency.data[0].y) == [14.0, 10.0]
    assert [s.y0 for s in view.latency.layout.shapes] == [50.0, 12.5]
    e2e = view.end_to_end.value
    assert "untuned 50.000 µs" in e2e and "tuned 12.500 µs" in e2e and "speed-up 4.00x" in e2e
    assert "outputs match" in e2e and "relu" in e2e
    assert view.error.text == ""


def test_live_dashboard_gains_the_tab_from_a_tasks_event(tuned_session) -> None:
    dash = Dashboard(tuned_session)
    titles = dash.tabs.titles
    assert "Tasks" not in titles  # one PrimFunc: one task, no tab
    dash.tabs.selected_index = titles.index("Code")
    name = tuned_session.workload.name
    single = _events([("tasks", {"tasks": [{"index": 0, "name": name, "flop": 1.0,
                                            "weight": 1}]})])
    dash.on_events(single)
    assert "Tasks" not in dash.tabs.titles
    n = len(tuned_session.events)
    two = [Event(n + i, e.kind, e.time, e.task, e.data) for i, e in enumerate(_events([
        ("tasks", {"tasks": [{"index": 0, "name": name, "flop": 2.0 * 128**3, "weight": 1},
                             {"index": 1, "name": "other", "flop": 10.0, "weight": 3}]}),
        ("scheduled", {"batch": 3, "scheduler": "round-robin", "pick": 1,
                       "pick_name": "other", "reason": "round-robin", "forced": False,
                       "gradients": [None, None], "best_us": [1.0, None], "trials": [16, 0],
                       "done": [False, False]}),
    ]))]
    dash.on_events(two)
    assert dash.tabs.titles == ("Trials", "Tasks", "Plots", "Time", "Trace", "Code", "Evolution",
                                "Design spaces", "Rules")
    assert dash.tabs.titles[dash.tabs.selected_index] == "Code"  # the shown tab stays
    dash.tabs.selected_index = 1
    frame = dash.tasks_view.info.frame
    trials = tuned_session.trials
    assert list(frame["Name"]) == [name, "other"]
    assert list(frame["Trials"]) == [len(trials), 0]
    assert frame["Latency (us)"].iloc[0] == trials["latency_us"].min()
    assert math.isnan(frame["Latency (us)"].iloc[1])
    assert dash.tasks_view.info.total_latency_us is None
    assert ("unknown until every task has a successful trial or an untuned time"
            in dash.tasks_view.table.value)
    assert dash.tasks_view.latency.layout.annotations[0].text.startswith("unknown")
    assert dash.tasks_view.info.next_pick == 1
    assert "model est. unknown (a task has no successful trial yet)" in dash.progress_label.value
