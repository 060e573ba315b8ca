"""A session's live trials table: the work dir read once, then the rows of its events appended,
so a refresh costs the same at trial 10,000 as at trial 10."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from msviz.engine.measure.run_actions import ENGINE_ACTIONS
from msviz.records.live import LiveRun

__all__ = ["LiveTrials"]

#: The events that change the table.
_FED_BY = ("started", "tasks", "picked", "measured", "remeasured", "profile", "environment")


class LiveTrials:
    """Keeps a :class:`~msviz.records.live.LiveRun` fed from a session's events.

    Parameters
    ----------
    work_dir : Path
        The session's work dir.
    task, flop : str, float
        The session's workload (its name and FLOP count: a single PrimFunc's rows).
    tasks : sequence of ModelTask
        The tasks (names, FLOPs, weights of a model's rows).
    tuners : callable
        The session's tuners now (each knows its workload index in the database once set up).
    snapshot : callable
        The events so far (a table made late learns the model's tasks from them).
    warn : callable
        ``warn(message)``: a ``warning`` event.
    """

    def __init__(self, work_dir: Path, *, task: str, flop: float, tasks: Sequence[Any],
                 tuners: Callable[[], list], snapshot: Callable[[], list],
                 warn: Callable[[str], None]) -> None:
        self._work_dir, self._task, self._flop = work_dir, task, flop
        self._model_tasks = list(tasks) if len(tasks) > 1 else []
        self._tuners, self._snapshot, self._warn = tuners, snapshot, warn
        self._lock = threading.Lock()
        self._live: LiveRun | None = None

    def get(self) -> LiveRun:
        """The table (read from the work dir on first use, before any commit)."""
        with self._lock:
            if self._live is None:
                self._live = LiveRun(self._work_dir, task=self._task, flop=self._flop,
                                     actions=ENGINE_ACTIONS)
                self._name_workloads(self._live)
                past = self._snapshot()
                told = [e for e in past if e.kind == "tasks"]
                if told:  # the model's task IDs and weights, if they were told before
                    self._live.feed(told[-1])
                for event in past:  # the rules its records were made with, so far
                    if event.kind == "environment":
                        self._live.feed(event)
            return self._live

    def reread(self) -> None:
        """Forget the table: the next :meth:`get` reads the work dir again (after a failure,
        so no row claims a record that did not reach the disk)."""
        with self._lock:
            self._live = None

    def tuners_ready(self) -> None:
        """The tuners know their workload indices now: name them in the table, if it exists."""
        with self._lock:
            if self._live is not None:
                self._name_workloads(self._live)

    def feed(self, event: Any) -> None:
        """Append the rows a ``measured``/``remeasured`` event carries (an event subscriber)."""
        if event.kind not in _FED_BY:
            return
        try:
            tuners = self._tuners()
            workload = getattr(tuners[event.get("task_index", 0)] if tuners else None,
                               "workload_index", None)
            self.get().feed(event, workload=workload)
        except Exception as err:  # never lose the table: read the work dir again when asked
            with self._lock:
                self._live = None
            self._warn(f"the live trials table could not take a {event.kind} event "
                       f"({type(err).__name__}: {err}); it will be read from the work dir again")

    def _name_workloads(self, live: LiveRun) -> None:
        """Give the table each task's name, FLOP and weight (its rows carry the workload)."""
        for task, tuner in zip(self._model_tasks, self._tuners()):
            index = getattr(tuner, "workload_index", None)
            if index is not None:
                live.name_workload(index, task=task.name, flop=task.flop, weight=task.weight)
