"""Quarantine: what raised during a task's search, skipped and counted instead of ending the run.

Stock MetaSchedule ends a whole run when one design space, postproc or mutator raises
(apache/tvm#18423, #18380, #17960). msviz skips the candidate (or the mutation, or the design
space) and keeps one entry per *where* (``"candidate"``, ``"design_space"``, ``"postproc"``,
``"mutator"``) and *what* (the step's name): TVM's message and how often it happened. The tuner
reports the entries that changed after each stage (a ``quarantine`` event and a sidecar line),
so the user sees what was skipped: :attr:`Session.quarantine`, the Trials tab, the report.

The same concept drawn: :mod:`msviz.views.quarantine`.
"""

from __future__ import annotations

import threading
from typing import Any

from msviz.records.sidecar import QUARANTINE_KIND
from msviz.trace.replay_errors import tvm_summary

__all__ = ["QUARANTINE_KIND", "WHERE", "Quarantine", "quarantine_raised"]

#: Where something can raise.
WHERE = ("candidate", "design_space", "postproc", "mutator")


class Quarantine:
    """The quarantine entries of one task; safe to share between the search's threads.

    Parameters
    ----------
    task : str
        The task's name (each entry carries it).
    """

    def __init__(self, task: str) -> None:
        self.task = task
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], dict[str, Any]] = {}
        self._changed: set[tuple[str, str]] = set()

    def add(self, where: str, what: str, error: BaseException | str) -> None:
        """Count one skip of ``what`` (a step's name) at ``where`` because of ``error``."""
        if where not in WHERE:
            raise ValueError(f"where must be one of {WHERE}, not {where!r}")
        message = error if isinstance(error, str) else tvm_summary(error)
        key = (where, str(what))
        with self._lock:
            entry = self._entries.setdefault(key, {
                "task": self.task, "where": where, "what": str(what), "message": message,
                "count": 0})
            entry["count"] += 1
            entry["last_message"] = message
            self._changed.add(key)

    def take_changed(self) -> list[dict[str, Any]]:
        """Copies of the entries that changed since the last call (and forget that)."""
        with self._lock:
            out = [dict(self._entries[k]) for k in sorted(self._changed)]
            self._changed.clear()
        return out

    def entries(self) -> list[dict[str, Any]]:
        """Copies of every entry."""
        with self._lock:
            return [dict(e) for e in self._entries.values()]



def quarantine_raised(quarantine: Quarantine | None, outcome: Any) -> None:
    """Quarantine what raised in a replay (:class:`msviz.trace.replay.ReplayOutcome`): the
    candidate when its trace would not replay, else the postproc. A postproc that only
    rejected the schedule (returned False) is the search working, not a fault."""
    if quarantine is None or outcome.error is None:
        return
    where = "candidate" if outcome.failed_step == "trace replay" else "postproc"
    quarantine.add(where, str(outcome.failed_step), outcome.error)
