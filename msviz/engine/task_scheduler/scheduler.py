"""Task schedulers: which task gets the next batch of trials (pure; no TVM, no threads).

Faithful ports of MetaSchedule's ``GradientBased`` and ``RoundRobin`` task schedulers
(``src/s_tir/meta_schedule/task_scheduler/gradient_based.cc``, ``round_robin.cc``), made
step-able: :meth:`TaskScheduler.next_task` takes every task's state and returns a :class:`Pick`
(the task, every task's gradient, and why), and the session runs one batch of that task.

What ``TaskScheduler::Tune`` does around ``NextTaskId`` is the session's: a task whose search
returns ``None`` is terminated; a task that reached ``max_trials_per_task`` is terminated when
picked; an empty batch counts as a joined batch (the best-latency history grows by the same
value, as ``JoinRunningTask`` appends ``min(latency_ms)`` of the task's whole history).

The user's steering (a forced pick, a pinned or skipped task) is applied on top: a forced pick
wins, then a pinned task; a skipped task is treated like a terminated one.

A third kind, ``"forecast"`` (:class:`~msviz.engine.task_scheduler.forecast.Forecasting`, not
in stock), forecasts each task's learning curve against seconds and gives the next batch to the
task with the best optimistic gain per second.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "GradientBased",
    "LinearCongruentialEngine",
    "Pick",
    "RoundRobin",
    "TaskScheduler",
    "TaskState",
    "format_task_table",
    "gradient",
]

#: A best latency at or above this (ms) means "no valid measurement" (``TaskCleanUp`` uses 1e9).
INVALID_MS = 1e9


@dataclass
class TaskState:
    """What a task scheduler sees of one task.

    Parameters
    ----------
    weight : float
        How often the model calls the task.
    best_history_ms : list of float
        ``best_latency_history_``: after each joined batch, the best latency (ms) of every trial
        of the task so far (``INVALID_MS`` if none ran).
    trials : int
        Trials measured (``latency_ms.size()``).
    done : bool
        Terminated (``is_terminated``).
    pinned, skipped : bool
        The user's steering.
    name : str
        The task's name, for reasons in words ("" if unknown).
    seconds_history : list of float
        After each joined batch, the seconds spent on the task so far (counted from zero),
        aligned with the end of ``best_history_ms``; shorter or empty where unknown.
    """

    weight: float = 1.0
    best_history_ms: list[float] = field(default_factory=list)
    trials: int = 0
    done: bool = False
    pinned: bool = False
    skipped: bool = False
    name: str = ""
    seconds_history: list[float] = field(default_factory=list)


class Pick(NamedTuple):
    """A task scheduler's decision.

    ``task`` is None when every task is done (``NextTaskId`` returns -1). ``gradients`` has one
    entry per task (None for tasks not alive, or not computed during the warm-up).
    """

    task: int | None
    gradients: list[float | None]
    reason: str
    forced: bool = False


class LinearCongruentialEngine:
    """TVM's ``LinearCongruentialEngine`` (``s_tir/random_engine.h``) and ``SampleInt``."""

    MULTIPLIER = 48271
    MODULUS = 2147483647

    def __init__(self, seed: int) -> None:
        self.state = self.normalize_seed(seed)

    @classmethod
    def normalize_seed(cls, seed: int) -> int:
        if seed < 0:
            raise ValueError("Random seed must be non-negative")
        seed %= cls.MODULUS
        return seed or 1

    def __call__(self) -> int:
        self.state = (self.state * self.MULTIPLIER) % self.MODULUS
        return self.state

    def sample_int(self, low: int, high: int) -> int:
        """``SampleInt(rand_state, low, high)``: libstdc++'s ``uniform_int_distribution`` over
        this engine (range 0 .. 2**31 - 2: the down-scaling branch with rejection)."""
        if low >= high:
            raise ValueError("max_exclusive must be greater than min_inclusive.")
        if low + 1 == high:
            return low
        urng_range = self.MODULUS - 1 - 0  # engine max() - min()
        u_erange = (high - 1 - low) + 1
        scaling = urng_range // u_erange
        past = u_erange * scaling
        while True:
            ret = self() - 0
            if ret < past:
                return low + ret // scaling


def gradient(history_ms: Sequence[float], weight: float, *, alpha: float = 0.2,
             window_size: int = 3) -> float:
    """``GradientBased::NextTaskId`` step 3 for one alive task.

    With ``h`` the best-latency history and ``n = len(h)``: if ``n > 0`` and ``h[-1] < 1e9``,
    ``g1 = (h[n-1-w] - h[n-1]) / w`` when ``n >= w + 1`` (else 0), ``g2 = h[n-1] / n``, and the
    gradient is ``(alpha * g1 + (1 - alpha) * g2) * weight``; otherwise ``-1e9``.
    """
    n = len(history_ms)
    if n > 0 and history_ms[-1] < INVALID_MS:
        best = history_ms[-1]
        g1 = (history_ms[n - 1 - window_size] - best) / window_size if n >= 1 + window_size \
            else 0.0
        g2 = best / n
        return (alpha * g1 + (1 - alpha) * g2) * weight
    return -1e9


class TaskScheduler:
    """Base: the user's steering around a scheduler's own rule (:meth:`_next`)."""

    kind = ""

    def next_task(self, tasks: Sequence[TaskState], *, forced: int | None = None) -> Pick:
        """The next task to tune.

        Parameters
        ----------
        tasks : sequence of TaskState
            Every task, in MetaSchedule's task order.
        forced : int, optional
            A task the user asked to tune next (obeyed unless it is done).
        """
        alive = [i for i, t in enumerate(tasks) if not t.done and not t.skipped]
        if not alive:
            return Pick(None, [None] * len(tasks), "every task is done")
        if forced is not None and forced in alive:
            return Pick(forced, self.gradients(tasks, alive), "forced by user", True)
        pinned = [i for i in alive if tasks[i].pinned]
        if pinned:
            return Pick(pinned[0], self.gradients(tasks, alive), "pinned")
        return self._next(tasks, alive)

    def gradients(self, tasks: Sequence[TaskState], alive: Sequence[int]) -> list[float | None]:
        """Every task's gradient (None for tasks not alive); for display."""
        return [None] * len(tasks)

    def _next(self, tasks: Sequence[TaskState], alive: list[int]) -> Pick:
        raise NotImplementedError


class RoundRobin(TaskScheduler):
    """``RoundRobin``: the next task after the last pick that is not terminated."""

    kind = "round-robin"

    def __init__(self) -> None:
        self.task_id = -1

    def _next(self, tasks: Sequence[TaskState], alive: list[int]) -> Pick:
        n = len(tasks)
        for _ in range(n):
            self.task_id = (self.task_id + 1) % n
            if self.task_id in alive:
                return Pick(self.task_id, [None] * n, "round-robin")
        return Pick(None, [None] * n, "every task is done")  # pragma: no cover


class GradientBased(TaskScheduler):
    """``GradientBased(alpha=0.2, window_size=3, seed)``: a round-robin warm-up (each task once,
    in order), then the task with the largest gradient (see :func:`gradient`); when all
    gradients are equal, a random alive task drawn with TVM's engine and ``seed``."""

    kind = "gradient"

    def __init__(self, *, alpha: float = 0.2, window_size: int = 3, seed: int = 1) -> None:
        self.alpha = float(alpha)
        self.window_size = int(window_size)
        self.rand = LinearCongruentialEngine(seed)
        self.round_robin_rounds = 0

    def gradients(self, tasks: Sequence[TaskState], alive: Sequence[int]) -> list[float | None]:
        out: list[float | None] = [None] * len(tasks)
        for i in alive:
            out[i] = gradient(tasks[i].best_history_ms, tasks[i].weight, alpha=self.alpha,
                              window_size=self.window_size)
        return out

    def _next(self, tasks: Sequence[TaskState], alive: list[int]) -> Pick:
        n = len(tasks)
        while self.round_robin_rounds < n:  # Step 1: warm-up (skipping tasks the user skipped)
            i = self.round_robin_rounds
            self.round_robin_rounds += 1
            if i in alive:
                return Pick(i, [None] * n, "round-robin warm-up")
        grads = self.gradients(tasks, alive)  # Steps 2-3
        values = [grads[i] for i in alive]
        top, bottom = max(values), min(values)  # type: ignore[type-var]
        if top == bottom:
            pick = alive[self.rand.sample_int(0, len(alive))]
            reason = "all gradients equal: random pick"
        else:
            pick = alive[values.index(top)]  # std::max_element: the first largest
            reason = "largest gradient"
        return Pick(pick, grads, reason)


def is_valid_ms(value: float) -> bool:
    return math.isfinite(value) and value < INVALID_MS


def format_task_table(rows: Sequence[dict]) -> str:
    """MetaSchedule's task table, as ``TaskScheduler::PrintTuningStatistics`` prints it
    (``support::TablePrinter``), from rows with ``index``, ``name``, ``flop``, ``weight``,
    ``gflops``, ``latency_us``, ``weighted_latency_us``, ``trials`` and ``done``."""
    table = [["ID", "Name", "FLOP", "Weight", "Speed (GFLOPS)", "Latency (us)",
              "Weighted Latency (us)", "Trials", "Done"], []]
    total_trials, total_latency = 0, 0.0
    for r in rows:
        cells = [str(r["index"]), r["name"], str(int(r["flop"])), str(int(r["weight"]))]
        if r["latency_us"] is None:
            cells += ["N/A", "N/A", "N/A"]
        else:
            cells += [f"{r['gflops'] or 0.0:.4f}", f"{r['latency_us']:.4f}",
                      f"{r['weighted_latency_us']:.4f}"]
            total_latency += r["weighted_latency_us"]
            total_trials += r["trials"]  # as stock: only tasks with a valid latency count
        table.append([*cells, str(r["trials"]), "Y" if r["done"] else ""])
    table.append([])
    widths = [max(len(row[i]) for row in table if row) for i in range(9)]
    lines = []
    for row in table:
        if not row:
            lines.append("-" * (sum(widths) + 3 * len(widths) - 1))
        else:
            lines.append("|".join(" " * (w + 1 - len(c)) + c + " " for c, w in zip(row, widths)))
    return "\n".join(lines) + (f"\nTotal trials: {total_trials}"
                               f"\nTotal latency (us): {total_latency:.4f}\n")
