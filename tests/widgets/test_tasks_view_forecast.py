"""The Tasks tab's Forecast section with real widget state, fed by a real forecast-scheduler
session (the catalogue MLP, 4 tasks, 10 trials in batches of 2: a first batch each, then a
reasoned pick), and hidden for a session whose scheduler does not forecast."""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Any

import pytest

import msviz
from msviz.engine.events import Event
from msviz.widgets import Dashboard
from msviz.widgets.tasks_view import TasksView


@pytest.fixture(scope="module")
def forecast_session(tmp_path_factory: pytest.TempPathFactory) -> msviz.Session:
    session = msviz.Session(
        "mlp", work_dir=tmp_path_factory.mktemp("forecast") / "wd", max_trials=10,
        max_seconds=600, task_scheduler="forecast", end_to_end_check=False,
        population_size=16, init_min_unmeasured=8, genetic_num_iters=1,
        cost_model_task_warmup=0,
        evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0}, seed=1,
        trials_per_batch=2)
    session.start()
    assert session.wait(600) == "finished"
    return session


def _last(events: list[Event], kind: str) -> dict[str, Any]:
    return next(e.data for e in reversed(events) if e.kind == kind)


def _check_forecast_section(view: TasksView, events: list[Event]) -> None:
    scheduled, forecast = _last(events, "scheduled"), _last(events, "forecast")
    assert view.forecast_box.layout.display is None  # shown
    text = view.forecast_text.value
    assert scheduled["reason"].startswith("task ")  # a reasoned pick, not a first batch
    assert (f"<b>Last pick</b> (batch {scheduled['batch']}): "
            f"{html.escape(scheduled['reason'])}") in text
    inside, total = forecast["inside"], forecast["total"]
    if total:
        assert f"{inside} of {total} outcome" in text
    else:
        assert "no forecast checked yet" in text
    assert "<b>Model</b>: at the end of the budget (10m, in " in text
    # every task of the model has had a batch: a curve each (4 tasks, all drawn), its band
    # first, then the dashed mean, then the measured bests, equal to the event's numbers
    rows = [r for r in forecast["tasks"] if r["history_s"]]
    assert len(rows) == 4
    fig = view.forecast_plot
    by_name = {t.name: t for t in fig.data}
    for row in rows:
        name = row["name"]
        history = by_name[name]
        assert list(history.x) == row["history_s"]
        assert list(history.y) == pytest.approx([v * 1e3 for v in row["history_ms"]])
        if row["curve"] is None:
            continue
        band, mean = by_name[f"{name} 80% band"], by_name[f"{name} forecast"]
        curve = row["curve"]
        assert band.fill == "toself"
        assert list(band.x) == [*curve["seconds"], *reversed(curve["seconds"])]
        assert list(band.y) == pytest.approx(
            [v * 1e3 for v in [*curve["high_ms"], *reversed(curve["low_ms"])]])
        assert list(mean.y) == pytest.approx([v * 1e3 for v in curve["mean_ms"]])
    assert sum(1 for t in fig.data if t.name.endswith("80% band")) == sum(
        1 for r in rows if r["curve"] is not None) > 0
    assert fig.layout.title.text == "Forecast per task"
    assert not fig.layout.annotations[0].text.startswith("no forecast")
    assert view.error.text == ""


def test_tasks_view_shows_the_forecast_of_a_real_session(forecast_session) -> None:
    events = forecast_session.events.snapshot()
    view = TasksView()
    view.update_from_events(events, forecast_session.trials)
    _check_forecast_section(view, events)


def test_dashboard_feeds_the_forecast_section(forecast_session) -> None:
    dash = Dashboard(forecast_session)
    dash.tabs.selected_index = dash.tabs.titles.index("Tasks")
    events = forecast_session.events.snapshot()
    _check_forecast_section(dash.tasks_view, events)
    # focusing a task keeps it drawn (4 tasks: all of them are anyway) and the text
    name = _last(events, "forecast")["tasks"][0]["name"]
    dash.tasks_view.focus.value = name
    assert name in {t.name for t in dash.tasks_view.forecast_plot.data}
    _check_forecast_section(dash.tasks_view, events)


def test_no_forecast_section_without_a_forecasting_scheduler() -> None:
    now = time.time()
    tasks = [{"index": 0, "name": "dense", "flop": 8000.0, "weight": 2},
             {"index": 1, "name": "relu", "flop": 100.0, "weight": 1}]
    events = [Event(0, "tasks", now, "mlp", {"tasks": tasks}),
              Event(1, "scheduled", now, "dense",
                    {"batch": 0, "scheduler": "gradient", "pick": 0, "pick_name": "dense",
                     "reason": "round-robin warm-up", "forced": False,
                     "gradients": [None, None], "best_us": [None, None], "trials": [0, 0],
                     "done": [False, False]})]
    view = TasksView()
    view.update_from_events(events)
    assert view.forecast_info is None
    assert view.forecast_box.layout.display == "none"
    assert view.forecast_text.value == "" and view.forecast_plot.data == ()


def test_work_dir_dashboard_has_no_forecast(tmp_path: Path, forecast_session) -> None:
    """A forecast session's work dir read back: the Tasks tab, no Forecast section (the
    forecasts live in the session's events only)."""
    dash = Dashboard(msviz.open(forecast_session.work_dir))
    dash.tabs.selected_index = dash.tabs.titles.index("Tasks")
    assert dash.tasks_view.forecast_box.layout.display == "none"
