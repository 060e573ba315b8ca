"""The model view's infos (per-task table, estimated model latency, trials per task,
end-to-end), compared whole against hand-written expectations."""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest

from msviz.errors import MsvizWarning
from msviz.views import tasks as V
from msviz.views.end_to_end import EndToEndInfo, end_to_end_info
from msviz.views.tasks import ModelLatencyInfo, TasksInfo, TaskTrials

NAN = math.nan
#: A model of three tasks (as the ``tasks`` event lists them); ``dense`` occurs twice.
TASKS = [
    {"index": 0, "name": "mm", "flop": 20000.0, "weight": 1, "max_trials": None,
     "pinned": False, "skipped": False},
    {"index": 1, "name": "dense", "flop": 8000.0, "weight": 2, "max_trials": None,
     "pinned": False, "skipped": False},
    {"index": 2, "name": "relu", "flop": 100.0, "weight": 1, "max_trials": 4,
     "pinned": False, "skipped": False},
]
#: The scheduler's last decision: dense next, by the largest gradient; relu is done.
SCHEDULED = {"batch": 3, "scheduler": "gradient", "pick": 1, "pick_name": "dense",
             "reason": "largest gradient", "forced": False, "gradients": [0.5, 1.25, None],
             "best_us": [8.0, 4.0, 2.0], "trials": [2, 2, 2], "done": [False, False, True]}
END_TO_END = {"untuned_us": 90.0, "tuned_us": 30.0, "match": True, "max_abs_diff": 1e-6,
              "fallback": ["relu"], "error": None}
START = pd.Timestamp("2026-11-22T10:00:00", tz="UTC")


@pytest.fixture
def trials() -> pd.DataFrame:
    rows = [  # task, latency_us, seconds since the first trial
        ("mm", 10.0, 0.0), ("relu", NAN, 1.0), ("dense", 4.0, 2.0),
        ("relu", 2.0, 4.0), ("mm", 8.0, 5.0), ("dense", 5.0, 7.0),
    ]
    frame = pd.DataFrame(rows, columns=["task", "latency_us", "seconds"])
    frame.insert(1, "trial", range(len(frame)))
    frame["status"] = ["ok" if v == v else "build_error" for v in frame["latency_us"]]
    frame["timestamp"] = START + pd.to_timedelta(frame.pop("seconds"), unit="s")
    return frame


def _frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["ID", *V.TASK_TABLE_COLUMNS]).set_index("ID")


def test_tasks_info_with_the_schedulers_decision(trials: pd.DataFrame) -> None:
    info = V.tasks_info(TASKS, trials, SCHEDULED)
    expected = TasksInfo(
        _frame([
            (0, "mm", 20000.0, 1.0, 2.5, 8.0, 8.0, 2, False, 0.5, False),
            (1, "dense", 8000.0, 2.0, 2.0, 4.0, 8.0, 2, False, 1.25, True),
            (2, "relu", 100.0, 1.0, 0.05, 2.0, 2.0, 2, True, NAN, False),
        ]),
        1, "gradient", "largest gradient", 18.0)
    pd.testing.assert_frame_equal(info.frame, expected.frame)
    assert info._replace(frame=None) == expected._replace(frame=None)


def test_tasks_info_before_any_trial_and_from_task_done() -> None:
    empty = pd.DataFrame({"task": [], "latency_us": []})
    info = V.tasks_info({"tasks": TASKS}, empty, done=[0])
    expected = _frame([
        (0, "mm", 20000.0, 1.0, NAN, NAN, NAN, 0, True, NAN, False),
        (1, "dense", 8000.0, 2.0, NAN, NAN, NAN, 0, False, NAN, False),
        (2, "relu", 100.0, 1.0, NAN, NAN, NAN, 0, False, NAN, False),
    ])
    pd.testing.assert_frame_equal(info.frame, expected)
    assert info._replace(frame=None) == TasksInfo(None, None, None, None, None)


def test_tasks_info_from_a_run_tasks_frame(trials: pd.DataFrame) -> None:
    run_tasks = pd.DataFrame({  # Run.tasks of a work dir without logs: weights unknown
        "task": ["dense", "mm"], "flop": [8000.0, 20000.0], "weight": [NAN, 1.0],
        "index": [1, 0], "done": [None, True]})
    info = V.tasks_info(run_tasks, trials[trials["task"] != "relu"])
    expected = _frame([
        (0, "mm", 20000.0, 1.0, 2.5, 8.0, 8.0, 2, True, NAN, False),
        (1, "dense", 8000.0, 1.0, 2.0, 4.0, 4.0, 2, False, NAN, False),
    ])
    pd.testing.assert_frame_equal(info.frame, expected)
    # no scheduler event: nothing picked; the model's latency 8 x 1 + 4 x 1 (weight unknown: 1)
    assert info._replace(frame=None) == TasksInfo(None, None, None, None, 12.0)


def test_bad_tasks_are_named() -> None:
    with pytest.raises(ValueError, match="task 1 of the tasks list"):
        V.tasks_info([TASKS[0], "dense"], None)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['weight'\]"):
        V.tasks_info(pd.DataFrame({"task": ["a"], "flop": [1.0]}), None)


def test_model_latency_info(trials: pd.DataFrame, same) -> None:
    info = V.model_latency_info(TASKS, trials, END_TO_END)
    expected = ModelLatencyInfo(
        trial=(0, 1, 2, 3, 4, 5),
        seconds=(0.0, 1.0, 2.0, 4.0, 5.0, 7.0),
        # unknown until relu has a latency (trial 3): 10 + 2 x 4 + 2, then mm 8: 8 + 8 + 2
        latency_us=(NAN, NAN, NAN, 20.0, 18.0, 18.0),
        known_from=3,
        tasks=(TaskTrials("mm", (0, 4), (0.0, 5.0), (1, 2)),
               TaskTrials("dense", (2, 5), (2.0, 7.0), (1, 2)),
               TaskTrials("relu", (1, 3), (1.0, 4.0), (1, 2))),
        end_to_end=EndToEndInfo(90.0, 30.0, 3.0, True, 1e-6, ("relu",), None),
    )
    assert same(info, expected)


def test_model_latency_never_known_while_a_task_has_no_success(trials: pd.DataFrame,
                                                               same) -> None:
    info = V.model_latency_info(TASKS, trials[trials["task"] != "relu"].reset_index(drop=True))
    expected = ModelLatencyInfo(
        trial=(0, 2, 4, 5),  # the run's trial numbers, relu's left out
        seconds=(0.0, 2.0, 5.0, 7.0),
        latency_us=(NAN,) * 4,  # relu never succeeds
        known_from=None,
        tasks=(TaskTrials("mm", (0, 4), (0.0, 5.0), (1, 2)),
               TaskTrials("dense", (2, 5), (2.0, 7.0), (1, 2)),
               TaskTrials("relu", (), (), ())),
        end_to_end=None,
    )
    assert same(info, expected)
    fig = V.model_latency_figure(info)
    assert fig.layout.annotations[0].text == ("unknown until every task has a successful trial "
                                              "or an untuned time")


#: Untuned times (µs) as a session's ``untuned`` event gives them; relu's is unknown.
UNTUNED = {"mm": 50.0, "dense": 30.0, "relu": None}


def test_untried_tasks_count_at_their_untuned_time(trials: pd.DataFrame, same) -> None:
    # relu never succeeds but has an untuned time of 6: by hand, mm then dense then mm
    untuned = {**UNTUNED, "relu": 6.0}
    info = V.model_latency_info(TASKS, trials[trials["task"] != "relu"].reset_index(drop=True),
                                untuned_us=untuned)
    expected = ModelLatencyInfo(
        trial=(0, 2, 4, 5),
        seconds=(0.0, 2.0, 5.0, 7.0),
        # 10 + 2 x 30 + 6 = 76; 10 + 2 x 4 + 6 = 24; 8 + 8 + 6 = 22; dense's 5 is no better
        latency_us=(76.0, 24.0, 22.0, 22.0),
        known_from=0,
        tasks=(TaskTrials("mm", (0, 4), (0.0, 5.0), (1, 2)),
               TaskTrials("dense", (2, 5), (2.0, 7.0), (1, 2)),
               TaskTrials("relu", (), (), ())),
        end_to_end=None,
    )
    assert same(info, expected)
    table = V.tasks_info(TASKS, trials[trials["task"] != "relu"], untuned_us=untuned)
    assert (table.total_latency_us, table.untuned_tasks) == (22.0, 1)
    assert V.total_text(table, 1, " µs") == "22.0 µs (1 task at the untuned time)"
    # relu's untuned time unknown: the total stays unknown, and says what would make it known
    table = V.tasks_info(TASKS, trials[trials["task"] != "relu"], untuned_us=UNTUNED)
    assert (table.total_latency_us, table.untuned_tasks) == (None, 0)
    assert V.total_text(table) == ("unknown until every task has a successful trial or an "
                                   "untuned time")
    # before any trial: every task at its untuned time, 50 + 2 x 30 + 6
    table = V.tasks_info(TASKS, None, untuned_us=untuned)
    assert (table.total_latency_us, table.untuned_tasks) == (116.0, 3)
    assert V.total_text(table, 0) == "116 (3 tasks at the untuned time)"


def test_untuned_times_from_the_event_or_a_work_dir() -> None:
    event = {"tasks": [{"index": 0, "name": "mm", "untuned_us": 50.0, "error": None},
                       {"index": 1, "name": "relu", "untuned_us": None, "error": "boom"}]}
    assert V.untuned_times(event) == {"mm": 50.0, "relu": None}
    assert V.untuned_times() == {}


def test_no_trials_warns_and_still_draws() -> None:
    with pytest.warns(MsvizWarning, match="no trials yet"):
        info = V.model_latency_info(TASKS, pd.DataFrame({"task": [], "latency_us": []}))
    assert info == ModelLatencyInfo((), (), (), None, tuple(
        TaskTrials(t["name"], (), (), ()) for t in TASKS), None)
    for figure in (V.model_latency_figure, V.task_trials_figure):
        fig = figure(info)
        assert fig.layout.annotations[0].text == "no trials yet"


def test_end_to_end_failure() -> None:
    info = end_to_end_info({"untuned_us": 90.0, "tuned_us": None, "match": None,
                              "max_abs_diff": None, "fallback": [], "error": "build failed"})
    assert info == EndToEndInfo(90.0, None, None, None, None, (), "build failed")


def test_figures(trials: pd.DataFrame) -> None:
    info = V.model_latency_info(TASKS, trials, END_TO_END)
    fig = V.model_latency_figure(info)
    assert list(fig.data[0].x) == [3.0, 4.0, 5.0] and list(fig.data[0].y) == [20.0, 18.0, 18.0]
    assert [s.y0 for s in fig.layout.shapes] == [90.0, 30.0]
    assert [a.text for a in fig.layout.annotations] == ["end-to-end untuned: 90 µs",
                                                        "end-to-end tuned: 30 µs"]
    assert fig.layout.xaxis.title.text == "Trial"
    by_time = V.model_latency_figure(info, x="time")
    assert list(by_time.data[0].x) == [4.0, 5.0, 7.0]
    assert by_time.layout.xaxis.title.text == "Wall time (s)"
    bars = V.task_trials_figure(info)
    assert [t.name for t in bars.data] == ["mm", "dense", "relu"]
    assert [list(t.y) for t in bars.data] == [[1, 2]] * 3
    with pytest.raises(ValueError, match="x must be 'trial' or 'time'"):
        V.task_trials_figure(info, x="batch")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        V.tasks_info(TASKS, trials, SCHEDULED)


def test_model_latency_drawn_at_its_steps_on_a_log_axis() -> None:
    """The estimate is drawn where it changes (and its last trial), on a log axis that holds
    the end-to-end lines too."""
    tasks = [{"index": 0, "name": "a", "flop": 1.0, "weight": 1}]
    frame = pd.DataFrame({"task": ["a"] * 6, "trial": range(6),
                          "latency_us": [NAN, 40.0, 40.0, 20.0, 30.0, 20.0]})
    info = V.model_latency_info(tasks, frame, {"untuned_us": 400.0, "tuned_us": None})
    fig = V.model_latency_figure(info)
    assert list(fig.data[0].x) == [1.0, 3.0, 5.0] and list(fig.data[0].y) == [40.0, 20.0, 20.0]
    assert fig.layout.yaxis.type == "log"
    assert 10 ** fig.layout.yaxis.range[0] < 20.0 and 10 ** fig.layout.yaxis.range[1] > 400.0
    # the end-to-end line's label where the line is: at log10(400) on the log axis
    (label,) = fig.layout.annotations
    assert (label.text, label.y) == ("end-to-end untuned: 400 µs", pytest.approx(2.60206))


def test_many_tasks_trials_as_a_heat_map(monkeypatch: pytest.MonkeyPatch) -> None:
    """From SMALL_MULTIPLES_FROM tasks on: a row per task, the run in bins, trials counted."""
    monkeypatch.setattr(V, "TRIAL_BINS", 2)
    tasks = [{"index": i, "name": f"t{i}", "flop": 1.0, "weight": 1} for i in range(7)]
    # trials 0..7: t0 four times (0, 1, 2, 5), t1..t4 once each (3, 4, 6, 7), t5 and t6 never
    order = ["t0", "t0", "t0", "t1", "t2", "t0", "t3", "t4"]
    frame = pd.DataFrame({"task": order, "trial": range(8), "latency_us": 1.0})
    fig = V.task_trials_figure(V.model_latency_info(tasks, frame))
    (heat,) = fig.data
    assert heat.type == "heatmap"
    assert list(heat.y) == [f"t{i}" for i in range(7)]
    assert list(heat.x) == [1.75, 5.25]  # bins [0, 3.5) and [3.5, 7]
    assert heat.z.tolist() == [[3, 1], [1, 0], [0, 1], [0, 1], [0, 1], [0, 0], [0, 0]]
    assert fig.layout.yaxis.autorange == "reversed"
    assert fig.layout.title.text == "Trials per task"
    assert fig.layout.xaxis.title.text == "Trial (a column per 3.5 trials)"
