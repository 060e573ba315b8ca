"""The task loop of a session: ``TaskScheduler::Tune``, one batch at a time, steerable.

A :class:`TaskLoop` holds what the C++ ``TaskScheduler`` holds around its ``NextTaskId``: the
tasks, which are done and why, and the stock ``task_scheduler.log`` of a model's work dir; and what
msviz adds: the user's steering (a forced next pick, pinned and skipped tasks, per-task budgets).
:meth:`TaskLoop.drive` is the loop: pick a task (:mod:`msviz.engine.task_scheduler.scheduler`), run
one batch of its tuner, and say when a task or tuning ends. The session runs it in its worker
thread and applies steering commands between batches.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msviz.compat import MS_NAMESPACE
from msviz.engine.task_scheduler import scheduler as scheduler_mod
from msviz.engine.task_scheduler import task_forecast as forecast_mod

if TYPE_CHECKING:  # msviz.engine.config imports this package's scheduler
    from msviz.engine.config import SessionConfig

__all__ = ["SCHEDULER_LOG", "STEERING", "BudgetClock", "TaskLoop"]

#: The stock task scheduler log of a model's work dir (under ``logs/``).
SCHEDULER_LOG = f"{MS_NAMESPACE}.logging.task_scheduler.log"
#: Steering commands :meth:`TaskLoop.steer` applies.
STEERING = ("tune_next", "scheduler", "pin", "skip", "budget")


class BudgetClock:
    """Seconds of tuning: from :meth:`start` (kept if already started: setting tasks up counts),
    less the time spent paused (:meth:`paused`, around a pause point)."""

    def __init__(self) -> None:
        self.started_at: float | None = None
        self.paused_s = 0.0
        self._pause_began: float | None = None

    def start(self) -> None:
        if self.started_at is None:
            self.started_at = time.perf_counter()

    def spent_s(self) -> float:
        if self.started_at is None:
            return 0.0
        now = self._pause_began or time.perf_counter()  # a pause in progress holds it still
        return now - self.started_at - self.paused_s

    @contextlib.contextmanager
    def paused(self) -> Generator[None, None, None]:
        self._pause_began = tic = time.perf_counter()
        try:
            yield
        finally:
            self.paused_s += time.perf_counter() - tic
            self._pause_began = None


class TaskLoop:
    """Which task gets the next batch, and when each task and tuning end.

    Parameters
    ----------
    tasks : sequence of ModelTask
        The session's tasks (one for a single PrimFunc).
    scheduler : TaskScheduler
        The task scheduler.
    tuners : callable
        ``tuners()`` -> the session's current tuners, one per task.
    emit : callable
        ``emit(kind, task, **data)``: the session's event log.
    config : SessionConfig
        The session's settings: its trial budget, batch size and every task's budget at first
        (``max_trials``, ``trials_per_batch``, ``max_trials_per_task``).
    name : str
        The session's name (the task of session-level events).
    log_dir : Path, optional
        Where the stock ``task_scheduler.log`` goes (None: not written, as for one PrimFunc).
    """

    def __init__(self, tasks: Sequence[Any], scheduler: scheduler_mod.TaskScheduler, *,
                 config: SessionConfig, tuners: Callable[[], list[Any]],
                 emit: Callable[..., Any], name: str, log_dir: Path | None = None,
                 timeit: Callable[[str], Any] | None = None) -> None:
        n = len(tasks)
        self.config = config
        self.timeit = timeit or (lambda _stage: contextlib.nullcontext())
        self.tasks = list(tasks)
        self.scheduler = scheduler
        self.tuners = tuners
        self.emit = emit
        self.name = name
        self.log_dir = log_dir
        self.budget: list[int | None] = [config.max_trials_per_task] * n
        self.pinned = [False] * n
        self.skipped = [False] * n
        #: Why each task ended (None while it goes on).
        self.done: list[str | None] = [None] * n
        self.forced: int | None = None
        #: Batches scheduled so far (all tasks).
        self.batch = 0
        #: The time budget's clock: tuning seconds spent so far (paused time not counted).
        self.clock = BudgetClock()
        #: Per task, the seconds its batches took (this run), and after each joined batch the
        #: seconds spent on it so far (aligned with the end of its best-latency history).
        self.task_seconds = [0.0] * n
        self.seconds_history: list[list[float]] = [[] for _ in range(n)]
        #: Per task, each batch's search seconds and measuring seconds per trial (this run).
        self.costs: list[list[tuple[float, float]]] = [[] for _ in range(n)]

    # -- what the scheduler and the events see ----------------------------------------------------

    def states(self) -> list[scheduler_mod.TaskState]:
        """Every task's state, for :meth:`TaskScheduler.next_task`."""
        return [scheduler_mod.TaskState(
            weight=float(task.weight), best_history_ms=list(tuner.best_history_ms),
            trials=tuner.trials_done, done=self.done[task.index] is not None,
            pinned=self.pinned[task.index], skipped=self.skipped[task.index],
            name=task.name, seconds_history=list(self.seconds_history[task.index]))
            for task, tuner in zip(self.tasks, self.tuners())]

    def info(self) -> list[dict]:
        """The ``tasks`` event's list: one dict per task."""
        return [{"index": t.index, "name": t.name, "flop": float(t.flop), "weight": int(t.weight),
                 "max_trials": self.budget[t.index], "pinned": self.pinned[t.index],
                 "skipped": self.skipped[t.index]} for t in self.tasks]

    def table(self) -> list[dict]:
        """MetaSchedule's task table now (see :meth:`Session.task_table`)."""
        tuners = self.tuners()
        rows = []
        for task in self.tasks:
            tuner = tuners[task.index] if tuners else None
            ok = tuner is not None and tuner.best_median_ms < scheduler_mod.INVALID_MS
            best = tuner.best_median_ms * 1e3 if ok else float("inf")
            rows.append({"index": task.index, "name": task.name, "flop": float(task.flop),
                         "weight": int(task.weight),
                         "gflops": task.flop / best / 1e3 if ok and task.flop > 0 else None,
                         "latency_us": best if ok else None,
                         "weighted_latency_us": best * task.weight if ok else None,
                         "trials": tuner.trials_done if tuner is not None else 0,
                         "done": self.done[task.index] is not None})
        return rows

    def warm_up_done(self) -> int:
        """Leading tasks that already have a best-latency history (skipped by the warm-up)."""
        count = 0
        for tuner in self.tuners():
            if not tuner.best_history_ms:
                break
            count += 1
        return count

    # -- steering ---------------------------------------------------------------------------------

    def index_of(self, task: Any = None) -> int:
        """The index of a task given by index or name (None: the only task of a PrimFunc)."""
        if task is None:
            if len(self.tasks) == 1:
                return 0
            raise ValueError(f"{self.name} has {len(self.tasks)} tasks: pass task= (an index "
                             "or a task name)")
        if isinstance(task, str):
            for t in self.tasks:
                if t.name == task:
                    return t.index
            raise ValueError(f"no task named {task!r}; tasks: "
                             f"{', '.join(t.name for t in self.tasks)}")
        if isinstance(task, bool) or not isinstance(task, int) or not \
                0 <= task < len(self.tasks):
            raise ValueError(f"task must be a task name or an index in 0..{len(self.tasks) - 1},"
                             f" not {task!r}")
        return task

    def use_scheduler(self, scheduler: scheduler_mod.TaskScheduler) -> None:
        """Switch schedulers; a new ``GradientBased`` warms up over the tasks not tuned yet."""
        if isinstance(scheduler, scheduler_mod.GradientBased):
            scheduler.round_robin_rounds = self.warm_up_done()
        self.scheduler = scheduler

    def steer(self, name: str, arg: Any) -> bool:
        """Apply one steering command (:data:`STEERING`); True if the tasks' info changed."""
        if name == "tune_next":
            self.forced = arg
            return False
        if name == "scheduler":
            self.use_scheduler(arg)
            return False
        index, value = arg
        if name == "pin":
            self.pinned[index] = value
        elif name == "skip":
            self.skipped[index] = value
        elif name == "budget":
            self.budget[index] = value
            if self.done[index] == "reached max_trials_per_task" and (
                    value is None or self.tuners()[index].trials_done < value):
                self.done[index] = None  # a larger budget brings it back
        else:
            raise ValueError(f"unknown steering command {name!r}; one of {STEERING}")
        return True

    # -- the loop ---------------------------------------------------------------------------------

    def task_done(self, index: int, reason: str) -> None:
        """Terminate a task (``TerminateTask``): a ``task_done`` event and the log lines."""
        self.done[index] = reason
        self.tuners()[index].emit("task_done", reason=reason)
        left = sum(d is None for d in self.done)
        self.log(f"Task #{index} has finished. Remaining task(s): {left}", table=True)

    def end_all(self, reason: str) -> None:
        """``TaskScheduler::Tune`` terminates every task still alive when tuning ends."""
        for index, done in enumerate(self.done):
            if done is None and len(self.tasks) > 1:
                self.task_done(index, f"tuning ended: {reason}")

    def log(self, message: str, *, table: bool = False) -> None:
        """A line of the stock ``task_scheduler.log`` (a model's work dir): picks, finished
        tasks and the task table, so readers of ``tune_relax`` work dirs read it too."""
        if self.log_dir is None:
            return
        stamp = time.strftime("%Y-%m-%d %H:%M:%S") + f".{int(time.time() * 1000) % 1000:03d}"
        text = f"{stamp} [INFO] [task_scheduler.cc:0] {message}\n"
        if table:
            text += f"{stamp} [INFO] [task_scheduler.cc:0] \n" + scheduler_mod.format_task_table(
                self.table())
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            with open(self.log_dir / SCHEDULER_LOG, "a", encoding="utf-8") as f:
                f.write(text)
        except OSError as err:  # never let logging stop tuning
            self.emit("warning", self.name, message=f"task scheduler log: {err}")

    # -- the forecast scheduler -------------------------------------------------------------------

    def emit_forecast(self) -> None:
        """After a joined batch, with a scheduler that forecasts: a ``forecast`` event holding
        each task's forecast (:meth:`Forecasting.explain`), how well the forecasts held so far
        (``inside`` of ``total`` outcomes within their band) and, with ``max_seconds``, the
        model's estimate forecast to the end of the budget (``at_budget``)."""
        explain = getattr(self.scheduler, "explain", None)
        if explain is None:
            return
        states = self.states()
        inside, total = self.scheduler.calibration(states)
        at_budget = None
        if self.config.max_seconds is not None:
            left = max(0.0, self.config.max_seconds - self.clock.spent_s())
            at_budget = dataclasses.asdict(forecast_mod.model_forecast(
                states, self.scheduler.pool(states), left, self.scheduler.band))
        rows = explain(states)
        pool = self.scheduler.pool(states)
        for row, state, spent in zip(rows, states, self.task_seconds):
            # the curve so far (seconds spent on the task, best after each of its batches) and
            # its band carried on: to the end of the budget, else over 5 of its batches
            row["history_s"] = list(state.seconds_history)
            row["history_ms"] = list(state.best_history_ms[-len(state.seconds_history):]) \
                if state.seconds_history else []
            row["curve"] = None
            if row["best_ms"] is not None and not (state.done or state.skipped):
                horizon = (self.config.max_seconds - self.clock.spent_s()
                           if self.config.max_seconds is not None else 5 * row["batch_s"])
                if horizon > 0:
                    c = forecast_mod.curve(state, pool, horizon, self.scheduler.band, points=11)
                    row["curve"] = {"seconds": [spent + t for t in c.seconds],
                                    "mean_ms": c.mean_ms, "low_ms": c.low_ms,
                                    "high_ms": c.high_ms}
        self.emit("forecast", self.name, tasks=rows, inside=inside, total=total,
                  band=self.scheduler.band, seconds=self.clock.spent_s(), at_budget=at_budget)

    # -- time budgets -----------------------------------------------------------------------------

    def batch_cost(self, index: int) -> tuple[float, float] | None:
        """A batch's expected (search seconds, measuring seconds per trial) for a task: the mean
        of its own batches this run, else of every task's; None before any batch ran."""
        own = self.costs[index] or [c for costs in self.costs for c in costs]
        if not own:
            return None
        return (sum(c[0] for c in own) / len(own), sum(c[1] for c in own) / len(own))

    def fit_time(self, index: int, n: int) -> tuple[int, str | None]:
        """The trials of task ``index``'s next batch that fit the time budgets (the session's
        ``max_seconds``, the task's ``max_seconds_per_task``), and why tuning (or the task)
        ends instead: ``(n, None)`` when the batch fits or nothing is known of its cost yet."""
        limits = []
        if self.config.max_seconds is not None:
            limits.append(("max_seconds", self.config.max_seconds, self.clock.spent_s()))
        if self.config.max_seconds_per_task is not None:
            limits.append(("max_seconds_per_task", self.config.max_seconds_per_task,
                           self.task_seconds[index]))
        cost = self.batch_cost(index)
        for name, limit, spent in limits:
            left = limit - spent
            if left <= 0:
                return n, f"reached {name} ({spent:.1f} of {limit:g} s spent)"
            if cost is None:
                continue
            search_s, per_trial_s = cost
            fits = n if per_trial_s <= 0 else int((left - search_s) // per_trial_s)
            if fits < 1:
                return n, (f"reached {name} ({spent:.1f} of {limit:g} s spent; a batch of "
                           f"task #{index} would take ~{search_s + per_trial_s * n:.1f} s)")
            n = min(n, fits)
        return n, None

    def timed_batch(self, index: int, tuner: Any, n: int) -> Generator[str, None, Any]:
        """``tuner.run_batch(n)``, its seconds (paused time not counted) charged to the task:
        the search's (until its last stage) and the measuring's per trial."""
        spent0 = self.clock.spent_s()
        trials0, joined = tuner.trials_done, len(tuner.best_history_ms)
        searched = spent0
        batch = tuner.run_batch(n)
        try:
            while True:
                kind = next(batch)
                if kind == "stage":
                    searched = self.clock.spent_s()
                elif kind == "batch":  # measured and joined: its forecast before the pause
                    self._charge(index, spent0, searched, tuner.trials_done - trials0)
                    spent0 = None
                    self._joined(index, tuner, joined)
                yield kind
        except StopIteration as end:
            return end.value
        finally:
            if spent0 is not None:  # ended without measuring (empty, exhausted, stopped)
                self._charge(index, spent0, self.clock.spent_s(), 0)
                self._joined(index, tuner, joined)

    def _joined(self, index: int, tuner: Any, joined: int) -> None:
        """After a batch joined the task's best-latency history: its seconds, the forecast."""
        if len(tuner.best_history_ms) > joined:
            self.seconds_history[index].append(self.task_seconds[index])
            self.emit_forecast()

    def _charge(self, index: int, start: float, searched: float, trials: int) -> None:
        now = self.clock.spent_s()
        self.task_seconds[index] += now - start
        per_trial = (now - searched) / trials if trials > 0 else 0.0
        if trials > 0 or not self.costs[index]:
            self.costs[index].append((searched - start, per_trial))

    def drive(self) -> Generator[str, None, str]:
        """``TaskScheduler::Tune``, one batch at a time: pick a task, run one batch of it, until
        the config's ``max_trials`` (batches of at most ``trials_per_batch``).

        Yields ``"stage"``/``"batch"`` (the pause points); returns why tuning ended.
        """
        max_trials, trials_per_batch = self.config.max_trials, self.config.trials_per_batch
        self.clock.start()
        while True:
            tuners = self.tuners()
            trials_done = sum(t.trials_done for t in tuners)
            if trials_done >= max_trials:
                return "reached max_trials"
            if self.config.max_seconds is not None and \
                    self.clock.spent_s() >= self.config.max_seconds:
                return (f"reached max_seconds ({self.clock.spent_s():.1f} of "
                        f"{self.config.max_seconds:g} s spent)")
            forced, self.forced = self.forced, None
            with self.timeit("TaskScheduler/NextTaskId"):
                pick = self.scheduler.next_task(self.states(), forced=forced)
            if pick.task is None:
                if len(self.tasks) == 1 and self.done[0] is not None:
                    return self.done[0]
                if any(self.skipped[i] and self.done[i] is None for i in range(len(self.tasks))):
                    return "every task not skipped is done"
                return "every task is done"
            index = pick.task
            tuner = tuners[index]
            budget = self.budget[index]
            if budget is not None and tuner.trials_done >= budget:
                self.task_done(index, "reached max_trials_per_task")
                continue
            n = min(trials_per_batch, max_trials - trials_done)
            if budget is not None:
                n = min(n, budget - tuner.trials_done)
            n, over = self.fit_time(index, n)
            if over is not None:
                if over.startswith("reached max_seconds_per_task"):
                    self.task_done(index, over)
                    continue
                return over
            self.emit(
                "scheduled", self.name, batch=self.batch, scheduler=self.scheduler.kind,
                pick=index, pick_name=self.tasks[index].name, reason=pick.reason,
                forced=pick.forced, gradients=list(pick.gradients), trials_asked=n,
                seconds=self.clock.spent_s(), task_seconds=list(self.task_seconds),
                best_us=[u.best_secs * 1e6 if u.best_secs != float("inf") else None
                         for u in tuners],
                trials=[u.trials_done for u in tuners],
                done=[d is not None for d in self.done])
            self.batch += 1
            self.log(f"TaskScheduler picks Task #{index}: {self.tasks[index].name}")
            outcome = yield from self.timed_batch(index, tuner, n)
            self.log(f"[Updated] Task #{index}: {self.tasks[index].name}", table=True)
            if outcome is None:
                self.task_done(index, tuner.end_reason or "search space exhausted")
            elif len(self.tasks) > 1 and tuner.trials_done and tuner.best_secs == float("inf") \
                    and tuner.batch >= 2:
                self.task_done(index, "every candidate failed")
