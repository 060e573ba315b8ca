"""Replay and postprocs of one search's workload, as MetaSchedule's ``ThreadedTraceApply``.

:meth:`Applier.apply_once` also remembers what a printed trace replayed to, for the genetic
iterations' children: a child whose every decision is set replays to one schedule, and
children repeat (3-22% of an iteration's on resnet-block's conv2d), so a repeat skips the
replay and postprocs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msviz import compat
from msviz.engine.search.quarantine import Quarantine, quarantine_raised
from msviz.trace.replay import apply_trace

__all__ = ["Applier"]


class Applier:
    """Replay + postprocs of this search's workload (:func:`msviz.trace.replay.apply_trace`)."""

    def __init__(self, mod: Any, postprocs: Sequence[Any],
                 quarantine: Quarantine | None = None) -> None:
        self.mod = mod
        self.postprocs = [(type(p).__name__, p) for p in postprocs]
        self.quarantine = quarantine
        #: Traces replayed / found in a ``made`` dict by :meth:`apply_once`.
        self.replayed = 0
        self.reused = 0

    def apply(self, trace: Any, seed: int) -> tuple[Any | None, str | None]:
        """The postprocessed schedule or None, and the step that failed (one that raised is
        quarantined)."""
        out = apply_trace(self.mod, trace, self.postprocs, seed=seed)
        quarantine_raised(self.quarantine, out)
        return out.schedule, out.failed_step

    def apply_once(self, trace: Any, seed: int, made: dict,
                   keep: dict | None = None) -> tuple[Any, int, str | None]:
        """:meth:`apply` and the schedule's hash, or what ``made`` holds for the same printed
        trace: a trace whose every decision is set replays to one schedule (genetic children
        repeat: 3-22% of an iteration's; the database's best records come back every
        generation), so the replay and postprocs are skipped. ``keep`` gets the entry too."""
        key = str(trace)
        if key in made:
            self.reused += 1
        else:
            self.replayed += 1
            sch, failed = self.apply(trace, seed)
            made[key] = (sch, None if sch is None else int(compat.structural_hash(sch.mod)),
                         failed)
            if sch is not None:  # a later child printed as this schedule's own trace
                made.setdefault(str(sch.trace), made[key])
        if keep is not None:
            keep[key] = made[key]
        return made[key]

    def remember(self, made: dict, candidates: Sequence[Any]) -> None:
        """Put schedules made elsewhere (a generation's initial population) into ``made``
        under their own printed traces."""
        for cand in candidates:
            made.setdefault(str(cand.sch.trace), (cand.sch, cand.shash, None))
