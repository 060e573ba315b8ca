"""The forecast scheduler's view: :func:`forecast_info` of hand-made events compared whole with a
hand-written info, and the figure's traces against the events' numbers."""

from __future__ import annotations

import time
from typing import Any

import pytest

from msviz.engine.events import Event
from msviz.views import forecast as F
from msviz.views._plotly_imports import qualitative
from msviz.views.forecast import AtBudget, ForecastInfo, Pick, TaskForecast

#: Two tasks; ``dense`` weighs 2.
TASKS = {"tasks": [
    {"index": 0, "name": "dense", "flop": 8000.0, "weight": 2, "max_trials": None,
     "pinned": False, "skipped": False},
    {"index": 1, "name": "relu", "flop": 100.0, "weight": 1, "max_trials": None,
     "pinned": False, "skipped": False},
]}


def _scheduled(batch: int, pick: int, reason: str) -> dict:
    return {"batch": batch, "scheduler": "forecast", "pick": pick,
            "pick_name": ["dense", "relu"][pick], "reason": reason, "forced": False,
            "gradients": [None, None], "trials_asked": 2, "seconds": 1.0 * batch,
            "task_seconds": [0.0, 0.0], "best_us": [None, None], "trials": [0, 0],
            "done": [False, False]}


#: dense measured twice (8 us, then 5 us after 1 and 3 s on it), its band carried on over
#: three points; relu never measured yet.
FORECAST = {
    "tasks": [
        {"index": 0, "name": "dense", "flat": False, "best_ms": 0.005, "batch_s": 1.5,
         "expected_ms": 0.004, "low_ms": 0.003, "high_ms": 0.005, "gain_us": 2.0,
         "optimistic_gain_us": 4.0, "score": 1.3, "log_ratio": -0.2, "log_sd": 0.2,
         "slope": -0.3, "own_weight": 0.5, "history_s": [1.0, 3.0],
         "history_ms": [0.008, 0.005],
         "curve": {"seconds": [3.0, 30.0, 60.0], "mean_ms": [0.005, 0.003, 0.0025],
                   "low_ms": [0.005, 0.002, 0.0015], "high_ms": [0.005, 0.004, 0.0035]}},
        {"index": 1, "name": "relu", "flat": False, "best_ms": None, "batch_s": None,
         "expected_ms": None, "low_ms": None, "high_ms": None, "gain_us": None,
         "optimistic_gain_us": None, "score": None, "log_ratio": None, "log_sd": None,
         "slope": None, "own_weight": None, "history_s": [], "history_ms": [],
         "curve": None},
    ],
    "inside": 3, "total": 4, "band": 0.8, "seconds": 30.0,
    "at_budget": {"horizon_s": 1170.0, "now_us": 10.0, "mean_us": 6.0, "low_us": 4.0,
                  "high_us": 9.0, "batches": [200, 0], "unknown": [1]},
}

REASONS = ["first batch: never tried", "first batch: never tried",
           "task 0 dense: expected -2.0 us of model latency in ~1.5 s; next best task 1 relu: "
           "-0.5 us",
           "forced by user",
           "task 0 dense: expected -1.0 us of model latency in ~1.5 s; next best task 1 relu: "
           "-0.5 us",
           "task 0 dense: expected -0.8 us of model latency in ~1.5 s; next best task 1 relu: "
           "-0.6 us"]
PICKS = [0, 1, 0, 1, 0, 0]


def _events(kinds_data: list[tuple[str, dict]]) -> list[Event]:
    now = time.time()
    return [Event(i, kind, now + i, "mlp", data) for i, (kind, data) in enumerate(kinds_data)]


def _session_events(forecast: dict = FORECAST) -> list[Event]:
    """tasks, then six picks, a forecast after the fifth (the sixth's batch still runs)."""
    picks = [("scheduled", _scheduled(b, p, r))
             for b, (p, r) in enumerate(zip(PICKS, REASONS, strict=True))]
    return _events([("started", {"model": "mlp", "num_tasks": 2}), ("tasks", TASKS),
                    *picks[:5], ("forecast", forecast), picks[5]])


DENSE = TaskForecast(
    0, "dense", 2.0, 5.0, 4.0, 3.0, 5.0, (1.0, 3.0), (8.0, 5.0),
    (3.0, 30.0, 60.0), (5.0, 3.0, 2.5), (5.0, 2.0, 1.5), (5.0, 4.0, 3.5))
RELU = TaskForecast(1, "relu", 1.0, None, None, None, None, (), (), (), (), (), ())


def test_forecast_info_of_a_session(same: Any) -> None:
    info = F.forecast_info(_session_events())
    expected = ForecastInfo(
        reason=REASONS[5],
        picks=(Pick(1, "relu", REASONS[1]), Pick(2, "dense", REASONS[2]),
               Pick(3, "relu", REASONS[3]), Pick(4, "dense", REASONS[4]),
               Pick(5, "dense", REASONS[5])),
        inside=3, total=4, band=0.8, seconds=30.0,
        calibration="3 of 4 outcomes inside the 80% band (75%)",
        at_budget=AtBudget(1200.0, 1170.0, 10.0, 6.0, 4.0, 9.0, ("relu",)),
        at_budget_text="at the end of the budget (20m, in 19m30s): 6 µs (80% band 4 to 9 µs; "
                       "now 10 µs), leaving out 1 task with no latency yet",
        tasks=(DENSE, RELU))
    assert same(info, expected), info


def test_no_forecast_event_no_info() -> None:
    """The gradient scheduler's session (no forecast event), or before the first join."""
    events = _events([("tasks", TASKS), ("scheduled", {**_scheduled(0, 0, "largest gradient"),
                                                       "scheduler": "gradient"})])
    assert F.forecast_info(events) is None
    assert F.forecast_info([]) is None
    assert F.forecast_html(None) == ""


def test_forecast_info_before_any_check_and_without_a_budget(same: Any) -> None:
    """The first forecast: nothing checked yet; no ``max_seconds``: no model at the budget's
    end; no ``tasks`` event among the events given: weights 1; dicts as the JSON has them."""
    first = {**FORECAST, "inside": 0, "total": 0, "at_budget": None}
    events = [{"kind": "scheduled", "data": _scheduled(0, 0, REASONS[0])},
              {"kind": "forecast", "data": first}]
    expected = ForecastInfo(
        REASONS[0], (Pick(0, "dense", REASONS[0]),), 0, 0, 0.8, 30.0,
        "no forecast checked yet (a pick's 80% band is checked once its batch has joined)",
        None, None, (DENSE._replace(weight=1.0), RELU))
    assert same(F.forecast_info(events), expected)


def test_calibration_and_budget_texts() -> None:
    assert F.calibration_text(12, 15, 0.8) == "12 of 15 outcomes inside the 80% band (80%)"
    assert F.calibration_text(1, 1, 0.9) == "1 of 1 outcome inside the 90% band (100%)"
    at = AtBudget(600.0, 42.4, 700.0, 612.0, 572.0, 652.0, ())
    assert F.at_budget_text(at, 0.8) == ("at the end of the budget (10m, in 42s): 612 µs "
                                         "(80% band 572 to 652 µs; now 700 µs)")
    assert [F.duration_text(s) for s in (600, 577.3, 59.6, 5400, 3725)] == [
        "10m", "9m37s", "1m", "1h30m", "1h2m5s"]


def test_forecast_html_names_the_last_pick_and_the_ones_before() -> None:
    text = F.forecast_html(F.forecast_info(_session_events()))
    assert (f"<b>Last pick</b> (batch 5): {REASONS[5]}" in text)
    assert "<b>Forecasts held</b>: 3 of 4 outcomes inside the 80% band (75%)" in text
    assert "<b>Model</b>: at the end of the budget (20m, in 19m30s): 6 µs" in text
    # newest first; a reason that does not name its task gets the name
    items = text.split("<li>")[1:]
    assert [i.split(":")[0] for i in items] == ["batch 4", "batch 3", "batch 2", "batch 1"]
    assert "<li>batch 3: relu: forced by user</li>" in text


def test_forecast_figure_draws_history_mean_and_band() -> None:
    info = F.forecast_info(_session_events())
    fig = F.forecast_figure(info)
    # relu has no curve yet: only dense is drawn, band first (under the lines)
    assert [t.name for t in fig.data] == ["dense 80% band", "dense forecast", "dense"]
    band, mean, history = fig.data
    assert list(band.x) == [3.0, 30.0, 60.0, 60.0, 30.0, 3.0]
    assert list(band.y) == pytest.approx([5.0, 4.0, 3.5, 1.5, 2.0, 5.0], rel=1e-12)
    assert band.fill == "toself"
    assert list(mean.x) == [3.0, 30.0, 60.0] and mean.line.dash == "dash"
    assert list(mean.y) == pytest.approx([5.0, 3.0, 2.5], rel=1e-12)
    assert list(history.x) == [1.0, 3.0]
    assert list(history.y) == pytest.approx([8.0, 5.0], rel=1e-12)
    # the task's colour in plotly's palette by its index, as in the trials-per-task plot
    assert history.line.color == mean.line.color == qualitative.Plotly[0]
    assert fig.layout.title.text == "Forecast per task"
    assert fig.layout.yaxis.title.text == "best latency (µs)"
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    assert "shaded: 80% band" in fig.layout.annotations[0].text


def test_forecast_figure_empty_states() -> None:
    none = F.forecast_figure(None)
    assert none.data == () and "does not forecast" in none.layout.annotations[0].text
    first = {**FORECAST, "tasks": [FORECAST["tasks"][1]]}
    early = F.forecast_figure(F.forecast_info(_session_events(first)))
    assert early.data == ()
    assert early.layout.annotations[0].text.startswith("no forecast yet")
    assert early.layout.xaxis.visible is False


def _row(index: int, best_ms: float) -> dict:
    return {**FORECAST["tasks"][0], "index": index, "name": f"t{index}", "best_ms": best_ms}


def test_a_25_task_model_draws_the_6_largest_and_the_focused_task() -> None:
    """Weight x best ranks the tasks: t24 (weight 1, 0.024 ms) below t3 (weight 10)."""
    tasks = {"tasks": [{"index": i, "name": f"t{i}", "weight": 10 if i == 3 else 1}
                       for i in range(25)]}
    rows = [_row(i, 0.001 * i) for i in range(25)]
    events = _events([("tasks", tasks), ("forecast", {**FORECAST, "tasks": rows})])
    info = F.forecast_info(events)
    # t3: 10 x 3 = 30 us, then t24 .. t20: 24 .. 20 us; in the tasks' order
    assert F.shown_tasks(info) == ["t3", "t20", "t21", "t22", "t23", "t24"]
    assert F.shown_tasks(info, "t0") == ["t0", "t3", "t20", "t21", "t22", "t23", "t24"]
    fig = F.forecast_figure(info, F.shown_tasks(info, "t0"))
    assert [t.name for t in fig.data if t.showlegend is not False] == [
        "t0", "t3", "t20", "t21", "t22", "t23", "t24"]
    assert len(fig.data) == 3 * 7
    colors = [t.line.color for t in fig.data if t.showlegend is not False]
    # by index, where free: t20 would share t0's, t21 .. t24 then the ones t20 .. t23 took
    assert [qualitative.Plotly.index(c) for c in colors] == [0, 3, 1, 2, 4, 5, 6]
