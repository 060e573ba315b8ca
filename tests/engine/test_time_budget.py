"""Time budgets: ``max_seconds`` and ``max_seconds_per_task`` end tuning at a batch boundary
inside the budget, cutting or not starting a batch by the task's measured costs, and say so."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest

from msviz.engine import Session
from msviz.engine.arguments import DEFAULT_MAX_TRIALS, TIME_ONLY_MAX_TRIALS
from msviz.engine.config import SessionConfig
from msviz.engine.task_scheduler import scheduler as scheduler_mod
from msviz.engine.task_scheduler.task_loop import TaskLoop
from msviz.models import ModelTask
from tests.engine.conftest import make_tiny_session


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, True, "10"])
@pytest.mark.parametrize("name", ["max_seconds", "max_seconds_per_task"])
def test_a_bad_time_budget_is_named(name: str, bad: Any) -> None:
    with pytest.raises(ValueError, match=f"{name} must be a number of seconds > 0"):
        SessionConfig(**{name: bad})


def test_trials_default_to_64_or_to_no_limit_of_their_own_with_seconds() -> None:
    assert SessionConfig(max_seconds=5).max_seconds == 5.0
    assert DEFAULT_MAX_TRIALS == 64
    assert Session("GMM-0").max_trials == 64
    timed = Session("GMM-0", max_seconds=30)
    assert (timed.max_trials, timed.config.max_seconds) == (TIME_ONLY_MAX_TRIALS, 30.0)
    assert Session("GMM-0", max_seconds=30, max_trials=8).max_trials == 8


class _Spent:
    """A clock stand-in whose seconds the test sets (the loop's arithmetic, not time, is
    checked here)."""

    def __init__(self, spent: float) -> None:
        self.spent = spent

    def spent_s(self) -> float:
        return self.spent


def _loop(**config: Any) -> TaskLoop:
    tasks = [ModelTask(i, f"t{i}", 1, None) for i in range(2)]
    return TaskLoop(tasks, scheduler_mod.RoundRobin(), config=SessionConfig(**config),
                    tuners=lambda: [], emit=lambda *a, **k: None, name="m")


def test_a_batch_is_cut_to_the_trials_that_fit() -> None:
    loop = _loop(max_seconds=10)
    loop.clock = _Spent(6.0)  # type: ignore[assignment]
    assert loop.fit_time(0, 16) == (16, None)  # no cost known yet: the batch runs
    loop.costs[0] = [(1.0, 0.5), (3.0, 0.5)]  # search 2 s, 0.5 s per trial on average
    assert loop.fit_time(0, 16) == (4, None)  # (10 - 6 - 2) / 0.5
    assert loop.fit_time(1, 16) == (4, None)  # a task never run: every task's mean
    loop.clock.spent = 8.2  # 1.8 s left: not even the search fits
    _, why = loop.fit_time(0, 16)
    assert why == "reached max_seconds (8.2 of 10 s spent; a batch of task #0 would take ~10.0 s)"
    loop.clock.spent = 10.0
    assert loop.fit_time(0, 16)[1] == "reached max_seconds (10.0 of 10 s spent)"


def test_the_per_task_budget_counts_the_task_s_own_seconds() -> None:
    loop = _loop(max_seconds_per_task=5)
    loop.clock = _Spent(100.0)  # the session's seconds do not matter here
    loop.costs[0] = [(1.0, 0.25)]
    loop.task_seconds = [3.0, 0.0]
    assert loop.fit_time(0, 16) == (4, None)  # (5 - 3 - 1) / 0.25
    assert loop.fit_time(1, 16) == (16, None)  # 5 - 0 - 1 = 4 s: all 16 trials fit
    loop.task_seconds = [5.5, 0.0]
    assert loop.fit_time(0, 16)[1] == "reached max_seconds_per_task (5.5 of 5 s spent)"


def test_a_session_ends_inside_its_time_budget(tmp_path: Path) -> None:
    budget = 25.0
    session = make_tiny_session(tmp_path / "wd", max_trials=10_000, max_seconds=budget)
    tic = time.perf_counter()
    session.start()
    assert session.wait(600) == "finished"
    wall = time.perf_counter() - tic
    assert session.end_reason.startswith("reached max_seconds (")
    assert 4 <= session.trials_done < 10_000
    loop = session._loop
    worst_batch = max(search + per_trial * 4 for costs in loop.costs for search, per_trial in costs)
    # tuning stops inside the budget, or over it by less than one batch (the estimate's error)
    assert loop.clock.spent_s() <= budget + worst_batch
    assert wall >= loop.clock.spent_s()  # the clock is the session's own, not longer
    # each joined batch has its seconds: the task's curve against time
    history = loop.seconds_history[0]
    assert len(history) == len(session._worker.tuners[0].best_history_ms)
    assert history == sorted(history) and history[-1] <= loop.clock.spent_s()
    scheduled = [e for e in session.events.snapshot() if e.kind == "scheduled"]
    assert [e.data["seconds"] for e in scheduled] == sorted(e.data["seconds"] for e in scheduled)


def test_paused_time_is_not_spent(tmp_path: Path) -> None:
    session = make_tiny_session(tmp_path / "wd", max_trials=8, max_seconds=600)
    session.step("batch")
    assert session.wait(600) == "paused"
    before = session._loop.clock.spent_s()
    time.sleep(2.0)
    assert session._loop.clock.spent_s() - before < 0.5  # paused: the clock holds still
    session.resume()
    assert session.wait(600) == "finished"
    assert session.end_reason == "reached max_trials"
