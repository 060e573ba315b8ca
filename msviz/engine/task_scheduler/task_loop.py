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
import time
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msviz.engine.task_scheduler import scheduler as scheduler_mod

if TYPE_CHECKING:  # msviz.engine.config imports this package's scheduler
    from msviz.engine.config import SessionConfig

__all__ = ["SCHEDULER_LOG", "STEERING", "TaskLoop"]

#: The stock task scheduler log of a model's work dir (under ``logs/``).
SCHEDULER_LOG = "tvm.s_tir.meta_schedule.logging.task_scheduler.log"
#: Steering commands :meth:`TaskLoop.steer` applies.
STEERING = ("tune_next", "scheduler", "pin", "skip", "budget")


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

    # -- what the scheduler and the events see ----------------------------------------------------

    def states(self) -> list[scheduler_mod.TaskState]:
        """Every task's state, for :meth:`TaskScheduler.next_task`."""
        return [scheduler_mod.TaskState(
            weight=float(task.weight), best_history_ms=list(tuner.best_history_ms),
            trials=tuner.trials_done, done=self.done[task.index] is not None,
            pinned=self.pinned[task.index], skipped=self.skipped[task.index])
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

    def drive(self) -> Generator[str, None, str]:
        """``TaskScheduler::Tune``, one batch at a time: pick a task, run one batch of it, until
        the config's ``max_trials`` (batches of at most ``trials_per_batch``).

        Yields ``"stage"``/``"batch"`` (the pause points); returns why tuning ended.
        """
        max_trials, trials_per_batch = self.config.max_trials, self.config.trials_per_batch
        while True:
            tuners = self.tuners()
            trials_done = sum(t.trials_done for t in tuners)
            if trials_done >= max_trials:
                return "reached max_trials"
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
            self.emit(
                "scheduled", self.name, batch=self.batch, scheduler=self.scheduler.kind,
                pick=index, pick_name=self.tasks[index].name, reason=pick.reason,
                forced=pick.forced, gradients=list(pick.gradients),
                best_us=[u.best_secs * 1e6 if u.best_secs != float("inf") else None
                         for u in tuners],
                trials=[u.trials_done for u in tuners],
                done=[d is not None for d in self.done])
            self.batch += 1
            self.log(f"TaskScheduler picks Task #{index}: {self.tasks[index].name}")
            n = min(trials_per_batch, max_trials - trials_done)
            if budget is not None:
                n = min(n, budget - tuner.trials_done)
            outcome = yield from tuner.run_batch(n)
            self.log(f"[Updated] Task #{index}: {self.tasks[index].name}", table=True)
            if outcome is None:
                self.task_done(index, tuner.end_reason or "search space exhausted")
            elif len(self.tasks) > 1 and tuner.trials_done and tuner.best_secs == float("inf") \
                    and tuner.batch >= 2:
                self.task_done(index, "every candidate failed")
