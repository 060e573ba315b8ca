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

__all__ = ["CARRY_KINDS", "Carried", "carried"]

#: How a schedule came to a task: the library's record of the same workload (``exact``), a
#: library workload with the same anchor block (``anchor``) or the same operator at another
#: shape (``sibling``), a shape cover's other shape (``shape``).
CARRY_KINDS = ("exact", "anchor", "sibling", "shape")


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
    """

    schedule: Any
    carry: str
    carried_from: str
    shash: int
    adjusted: tuple[str, ...] = ()
    predicted_score: float | None = None

    def __post_init__(self) -> None:
        if self.carry not in CARRY_KINDS:
            raise ValueError(f"carry={self.carry!r}: expected one of {CARRY_KINDS}")

    def scored(self, score: float) -> Carried:
        """The same carry with the cost model's score."""
        return dataclasses.replace(self, predicted_score=float(score))

    def info(self) -> dict:
        """The lineage its trial keeps in the sidecar (the search's info keys: origin
        ``library``, pick ``library``, no parent or mutator)."""
        return {"design_space": None, "origin": "library", "parent": None, "mutator": None,
                "iteration": 0, "ancestor_line": None, "pick": "library",
                "predicted_score": self.predicted_score, "shash": str(self.shash),
                "carry": self.carry, "adjusted": list(self.adjusted),
                "carried_from": self.carried_from}


def carried(schedule: Any, carry: str, carried_from: str, adjusted: Any = ()) -> Carried:
    """A :class:`Carried` of ``schedule``, its structural hash taken."""
    return Carried(schedule, carry, carried_from, int(compat.structural_hash(schedule.mod)),
                   tuple(adjusted))
