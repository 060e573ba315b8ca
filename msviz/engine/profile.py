"""Where a session's time goes: every second of its worker thread, by stage, per task and batch.

MetaSchedule's ``ms.Profiler`` prints minutes per component after the fact. A session's
:class:`Profile` times the same components, under the same names where MetaSchedule has one
(``EvoSearch/Evolve/Mutation``, ``SendToBuilder``, ``MeasureCallback/UpdateCostModel``, ...),
batch by batch while it tunes. Timers nest: entering a stage pauses the one around it, so each
second is counted once, under the innermost stage, and the stages of a batch sum to its wall
time; what no timer covers is ``other``. A batch's row is closed when its measurement ends
(after the cost model's update); the time from there to the next close (the next pick, the
search, a pause, ...) is the next batch's.

The same concept read and drawn: :mod:`msviz.records.profile`, :mod:`msviz.views.profile`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from msviz.records.profile import OTHER

__all__ = ["Profile"]



class Profile:
    """Seconds per stage of one session's worker thread, closed into rows batch by batch.

    Only the worker thread times (:meth:`timeit`); any thread may read :attr:`rows`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Closed rows: ``{"task", "batch", "wall", "stages": {stage: seconds}}``.
        self.rows: list[dict[str, Any]] = []
        self._open: dict[str, float] = {}
        self._stack: list[list[Any]] = []  # [stage, started] of the timers entered, innermost last
        self._mark = time.perf_counter()
        #: Timers entered so far (what the profile itself costs is about this many timer
        #: entries: ``benchmarks/profiles.py`` prints it).
        self.calls = 0

    def restart(self) -> None:
        """Start the clock of the first row now (the worker thread has just started)."""
        self._mark = time.perf_counter()
        self._open = {}

    @contextmanager
    def timeit(self, stage: str) -> Iterator[None]:
        """Count the time inside to ``stage`` (not to the stage around it)."""
        now = time.perf_counter()
        self.calls += 1
        if self._stack:  # pause the enclosing stage
            outer = self._stack[-1]
            self._open[outer[0]] = self._open.get(outer[0], 0.0) + now - outer[1]
        entry = [stage, now]
        self._stack.append(entry)
        try:
            yield
        finally:
            now = time.perf_counter()
            self._stack.pop()
            self._open[stage] = self._open.get(stage, 0.0) + now - entry[1]
            if self._stack:  # resume it
                self._stack[-1][1] = now

    def close(self, task: str, batch: int | None) -> dict[str, Any]:
        """Close the open row: everything since the last close, under ``task`` and ``batch``
        (None for what is no batch: setting the tasks up, the end). Returns the row."""
        now = time.perf_counter()
        wall = now - self._mark
        stages = {k: v for k, v in self._open.items() if v > 0}
        stages[OTHER] = max(0.0, wall - sum(stages.values()))
        row = {"task": task, "batch": batch, "wall": wall, "stages": stages}
        with self._lock:
            self.rows.append(row)
        self._mark, self._open = now, {}
        return row

    @staticmethod
    def event_data(row: dict[str, Any]) -> dict[str, Any]:
        """A row as a ``profile`` event's data (the event names its task itself)."""
        return {k: v for k, v in row.items() if k != "task"}

    def snapshot(self) -> list[dict[str, Any]]:
        """A copy of the closed rows."""
        with self._lock:
            return list(self.rows)

