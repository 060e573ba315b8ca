"""The ``"forecast"`` task scheduler: the next batch goes to the task with the best optimistic
gain per second, and each pick says why.

Each task's forecast (its best latency against the seconds spent on it, with an uncertainty
band) is made in :mod:`msviz.engine.task_scheduler.task_forecast`, whose docstring states the
model; this module ranks the tasks by it (the forecast's names are importable from here too).
Pure: no TVM, no threads, no randomness.

The same concept drawn: :mod:`msviz.views.forecast`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, fields

from msviz.engine.task_scheduler.scheduler import Pick, TaskScheduler, TaskState
from msviz.engine.task_scheduler.task_forecast import (
    DEFAULT_BATCH_S,
    DEFAULT_SLOPE,
    DEFAULT_VAR,
    Curve,
    Forecast,
    ModelForecast,
    Pool,
    band_z,
    batch_costs,
    best_latency,
    curve,
    effective_batches,
    forecast_task,
    model_forecast,
    pool_of,
    slopes,
)

__all__ = [
    "DEFAULT_BATCH_S",
    "DEFAULT_SLOPE",
    "DEFAULT_VAR",
    "Curve",
    "Forecast",
    "Forecasting",
    "ModelForecast",
    "Pool",
    "batch_costs",
    "curve",
    "effective_batches",
    "forecast_task",
    "model_forecast",
    "pool_of",
    "slopes",
]


def _label(i: int, state: TaskState) -> str:
    return f"task {i} {state.name}" if state.name else f"task {i}"


class Forecasting(TaskScheduler):
    """The ``"forecast"`` task scheduler: the task with the best optimistic gain per second.

    Each task never tried (empty history) gets one batch first, in task order ("first batch:
    never tried"). Then the alive task with the largest :attr:`Forecast.score` (ties: the lowest
    index), leaving out flat tasks (see :meth:`flat`) unless every task is flat, which the
    reason says. Tasks tried without a valid latency are picked only when no task has one.
    ``Pick.gradients`` holds each alive task's score.

    Parameters
    ----------
    seed : int
        Accepted as every scheduler's; unused (the rule draws nothing).
    band : float
        The central probability of a forecast's band; its low end is the optimistic one.
    min_gain_fraction : float
        A task whose optimistic gain is below this fraction of the model's weighted latency
        (``sum(weight * best)`` over tasks with a valid best) is flat.
    prior_count, decay : float
        See :class:`Pool`.
    """

    kind = "forecast"

    def __init__(self, *, seed: int = 1, band: float = 0.8, min_gain_fraction: float = 0.001,
                 prior_count: float = 2.0, decay: float = 0.9) -> None:
        band_z(band)
        if min_gain_fraction < 0:
            raise ValueError(f"min_gain_fraction must be >= 0, not {min_gain_fraction}")
        pool_of([], prior_count=prior_count, decay=decay)  # checks them
        self.seed = seed
        self.band = float(band)
        self.min_gain_fraction = float(min_gain_fraction)
        self.prior_count = float(prior_count)
        self.decay = float(decay)
        #: (task, its history's length when picked) -> the forecast band (low_ms, high_ms).
        self.forecast_bands: dict[tuple[int, int], tuple[float, float]] = {}

    def pool(self, tasks: Sequence[TaskState]) -> Pool:
        """The prior of every task's forecast now."""
        return pool_of(tasks, prior_count=self.prior_count, decay=self.decay)

    def forecasts(self, tasks: Sequence[TaskState]) -> list[Forecast | None]:
        """Every task's forecast (None without a valid best latency)."""
        pool = self.pool(tasks)
        return [forecast_task(t, pool, self.band) if best_latency(t) is not None else None
                for t in tasks]

    def _flat(self, tasks: Sequence[TaskState],
              forecasts: Sequence[Forecast | None]) -> list[int]:
        threshold = self.min_gain_fraction * sum(
            t.weight * f.best_ms * 1e3 for t, f in zip(tasks, forecasts) if f is not None)
        return [i for i, (t, f) in enumerate(zip(tasks, forecasts))
                if f is not None and not t.done and not t.skipped
                and f.optimistic_gain_us < threshold]

    def flat(self, tasks: Sequence[TaskState]) -> list[int]:
        """The alive tasks whose optimistic gain is below ``min_gain_fraction`` of the model's
        weighted latency: the ones the loop may stop."""
        return self._flat(tasks, self.forecasts(tasks))

    def gradients(self, tasks: Sequence[TaskState], alive: Sequence[int]) -> list[float | None]:
        forecasts = self.forecasts(tasks)
        return [forecasts[i].score if i in alive and forecasts[i] is not None else None
                for i in range(len(tasks))]

    def _next(self, tasks: Sequence[TaskState], alive: list[int]) -> Pick:
        forecasts = self.forecasts(tasks)
        scores = [forecasts[i].score if i in alive and forecasts[i] is not None else None
                  for i in range(len(tasks))]
        for i in alive:
            if not tasks[i].best_history_ms:
                return Pick(i, scores, "first batch: never tried")
        ranked = sorted((i for i in alive if forecasts[i] is not None),
                        key=lambda i: (-forecasts[i].score, i))
        if not ranked:
            return Pick(alive[0], scores,
                        f"no task has a valid latency: {_label(alive[0], tasks[alive[0]])}")
        flat = set(self._flat(tasks, forecasts))
        keen = [i for i in ranked if i not in flat]
        pick = (keen or ranked)[0]
        f = forecasts[pick]
        self.forecast_bands[(pick, len(tasks[pick].best_history_ms))] = (f.low_ms, f.high_ms)
        reason = (f"{_label(pick, tasks[pick])}: expected -{f.gain_us:.1f} us of model latency "
                  f"in ~{f.batch_s:.1f} s")
        others = [i for i in ranked if i != pick]
        if others:
            j = others[0]
            reason += f"; next best {_label(j, tasks[j])}: -{forecasts[j].gain_us:.1f} us"
        if not keen:
            reason = "every task's expected gain is below the threshold; " + reason
        return Pick(pick, scores, reason)

    def calibration(self, tasks: Sequence[TaskState]) -> tuple[int, int]:
        """``(inside, total)``: of this scheduler's picks (after the warm-up) whose batch has
        joined since, how many bests after that batch fell inside the forecast band."""
        inside = total = 0
        for (i, length), (low, high) in self.forecast_bands.items():
            if i >= len(tasks) or len(tasks[i].best_history_ms) <= length:
                continue
            outcome = tasks[i].best_history_ms[length]
            tol = 1e-9 * max(abs(high), 1.0)
            total += 1
            inside += low - tol <= outcome <= high + tol
        return inside, total

    def explain(self, tasks: Sequence[TaskState]) -> list[dict]:
        """Per task, for a table: ``index``, ``name``, ``flat`` and the :class:`Forecast`'s
        fields (None without a valid best latency)."""
        forecasts = self.forecasts(tasks)
        flat = set(self._flat(tasks, forecasts))
        empty = {f.name: None for f in fields(Forecast)}
        return [{"index": i, "name": t.name, "flat": i in flat,
                 **(asdict(f) if f is not None else empty)}
                for i, (t, f) in enumerate(zip(tasks, forecasts))]
