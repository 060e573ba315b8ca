"""A schedule carried to a task from elsewhere, and its lineage: the one record type of what a
tuning library commits or carries (:mod:`msviz.engine.tuning.library_reuse`) and what a shape cover
carries from another shape (:mod:`msviz.workflows.shapes.cross`). A
:class:`~msviz.engine.tuning.tuner.Tuner` takes them through :meth:`Tuner.carry_in` and measures
them first; :meth:`Carried.info` is the lineage its trial's sidecar line keeps."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from msviz import compat

__all__ = ["CARRY_KINDS", "ORIGINS", "Carried", "carried", "ranked"]

#: How a schedule came to a task: the library's record of the same workload (``exact``), a
#: library workload with the same anchor block (``anchor``) or the same operator at another
#: shape (``sibling``), a shape cover's other shape (``shape``).
CARRY_KINDS = ("exact", "anchor", "sibling", "shape")
#: Where a carry comes from: another run (a tuning library, another shape: ``library``) or a
#: sibling task of the same run (``carried``: :mod:`msviz.engine.tuning.sibling_carry`).
ORIGINS = ("library", "carried")


@dataclass(frozen=True)
class Carried:
    """A schedule of the task, carried (or committed) from another record.

    Attributes
    ----------
    schedule : tvm.s_tir.Schedule
        The schedule, replayed on the task's workload.
    carry : str
        One of :data:`CARRY_KINDS`.
    carried_from : str
        Where it came from, as a user reads it (``"gmm64/M=16 trial 37"``).
    shash : int
        The structural hash of the schedule's module.
    adjusted : tuple of str
        The decisions mapped to the nearest valid choice on the way.
    predicted_score : float, optional
        The cost model's score, when it ranked the carries.
    origin : str
        One of :data:`ORIGINS` (the trial's ``origin`` and ``pick``).
    """

    schedule: Any
    carry: str
    carried_from: str
    shash: int
    adjusted: tuple[str, ...] = ()
    predicted_score: float | None = None
    origin: str = "library"

    def __post_init__(self) -> None:
        if self.carry not in CARRY_KINDS:
            raise ValueError(f"carry={self.carry!r}: expected one of {CARRY_KINDS}")
        if self.origin not in ORIGINS:
            raise ValueError(f"origin={self.origin!r}: expected one of {ORIGINS}")

    def scored(self, score: float) -> Carried:
        """The same carry with the cost model's score."""
        return dataclasses.replace(self, predicted_score=float(score))

    def info(self) -> dict:
        """The lineage its trial keeps in the sidecar (the search's info keys: origin and pick
        its :attr:`origin`, no parent or mutator)."""
        return {"design_space": None, "origin": self.origin, "parent": None, "mutator": None,
                "iteration": 0, "ancestor_line": None, "pick": self.origin,
                "predicted_score": self.predicted_score, "shash": str(self.shash),
                "carry": self.carry, "adjusted": list(self.adjusted),
                "carried_from": self.carried_from}


def carried(schedule: Any, carry: str, carried_from: str, adjusted: Any = (), *,
            origin: str = "library") -> Carried:
    """A :class:`Carried` of ``schedule``, its structural hash taken."""
    return Carried(schedule, carry, carried_from, int(compat.structural_hash(schedule.mod)),
                   tuple(adjusted), origin=origin)


def ranked(tuner: Any, found: list[Carried]) -> list[Carried]:
    """The carries to ``tuner``'s task, best predicted first, when the shared cost model is
    trained; else as found. Each carry's ``predicted_score`` is kept (the Plots tab ranks the
    batch)."""
    model = tuner.cost_model
    if len(found) < 2 or getattr(model, "booster", None) is None or \
            model.data_size < model.num_warmup_samples:
        return found
    cands = [compat.ms.search_strategy.MeasureCandidate(
        c.schedule, compat.ArgInfo.from_entry_func(c.schedule.mod, remove_preproc=True))
        for c in found]
    scores = [float(x) for x in model.predict(tuner.context, cands)]
    order = sorted(range(len(found)), key=lambda i: -scores[i])  # stable among equals
    return [found[i].scored(scores[i]) for i in order]
