"""The forecast task scheduler in a real session: every pick says why in words, each joined batch
brings a ``forecast`` event (each task's band, how well the forecasts held, the model at the end
of the time budget), and the stock task scheduler log names the picks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from msviz.engine import Session
from tests.engine.conftest import TINY


@pytest.fixture(scope="module")
def forecast_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    work_dir = tmp_path_factory.mktemp("forecast") / "wd"
    session = Session("mlp", work_dir=work_dir, max_trials=14, max_seconds=600,
                      task_scheduler="forecast", end_to_end_check=False,
                      **{**TINY, "trials_per_batch": 2})
    session.start()
    assert session.wait(900) == "finished"
    return session


def test_each_task_gets_a_first_batch_then_a_reasoned_pick(forecast_run: Any) -> None:
    events = forecast_run.events.snapshot()
    scheduled = [e for e in events if e.kind == "scheduled"]
    n = len(forecast_run.tasks)
    assert [e.data["pick"] for e in scheduled[:n]] == list(range(n))
    assert all(e.data["reason"] == "first batch: never tried" for e in scheduled[:n])
    later = scheduled[n:]
    assert later, "the budget leaves batches after the first round"
    names = {t.index: t.name for t in forecast_run.tasks}
    for e in later:
        # "task 2 fused_matmul_add_relu: expected -1.2 us of model latency in ~0.8 s; next ..."
        match = re.match(r"(?:every task's expected gain is below the threshold; )?task (\d+) "
                         r"(\S+): expected -([\d.]+) us of model latency in ~([\d.]+) s",
                         e.data["reason"])
        assert match, e.data["reason"]
        assert int(match[1]) == e.data["pick"] and match[2] == names[e.data["pick"]]
        assert e.data["scheduler"] == "forecast"


def test_every_joined_batch_brings_a_forecast_event(forecast_run: Any) -> None:
    events = forecast_run.events.snapshot()
    forecasts = [e for e in events if e.kind == "forecast"]
    measured_batches = [e for e in events if e.kind == "scheduled"]
    assert len(forecasts) == len(measured_batches)
    last = forecasts[-1].data
    assert [t["index"] for t in last["tasks"]] == list(range(len(forecast_run.tasks)))
    for row in last["tasks"]:
        if row.get("best_ms") is not None:
            assert row["low_ms"] <= row["expected_ms"] <= row["high_ms"] <= row["best_ms"]
    assert 0 <= last["inside"] <= last["total"] <= len(measured_batches) - len(
        forecast_run.tasks)
    at = last["at_budget"]
    assert at["low_us"] <= at["mean_us"] <= at["high_us"] <= at["now_us"] + 1e-9
    # the model now: weight x best (us) over the tasks, from the task table
    table = forecast_run.task_table()
    assert at["now_us"] == pytest.approx(sum(r["weighted_latency_us"] for r in table
                                             if r["weighted_latency_us"] is not None), rel=1e-6)


def test_the_stock_log_names_the_forecast_picks(forecast_run: Any) -> None:
    log = Path(forecast_run.work_dir) / "logs" / \
        "tvm.s_tir.meta_schedule.logging.task_scheduler.log"
    picks = re.findall(r"TaskScheduler picks Task #(\d+)", log.read_text())
    scheduled = [e.data["pick"] for e in forecast_run.events.snapshot() if e.kind == "scheduled"]
    assert [int(p) for p in picks] == scheduled
