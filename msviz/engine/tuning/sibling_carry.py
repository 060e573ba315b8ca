"""Carry schedules between the tasks of one run: a task's first batch measures the best
schedules of its *siblings* already tuned in the same run (the same operator at another shape),
carried to its shape.

A model's tasks repeat operators at other shapes: ResNet-50 has a dozen 3x3 and 1x1
convolutions that differ in their channels and image size. MetaSchedule starts each from random
samples. Transfer-Tuning (Gibson and Cano, PACT 2022) showed that a sibling's tuned schedule,
replayed on another shape, often holds most of that shape's tuned speed. Here a task's first
batch takes up to ``knobs.sibling_carry`` such carries:

* its siblings are the run's other tasks whose anchor block is the same operator (name, rank,
  dtype written) and which hold a successful record; the nearest shapes first (the sum of
  ``|log2 a - log2 b|`` over the anchor's extents, :func:`msviz.records.task_match.distance`),
  those with the same blocks (the same epilogue) before the others;
* each of the nearest :data:`SOURCES` gives its :data:`PER_SOURCE` fastest records, carried by
  :func:`msviz.trace.carry.carry_trace` (a decision that is no longer valid goes to the nearest
  valid choice, then the task's postprocs); a carry that does not replay is dropped;
* the shared cost model, trained on the siblings' records, ranks the carries and the best fill
  the batch's first slots; the search's own picks fill the rest;
* each later batch of the task measures, besides the search's picks, the new best schedule of
  up to :data:`LATER` siblings that found one since the task last took theirs (a convolution
  with and without a residual add is one operator at one shape: what is fastest for one is
  often fastest for the other).

A carried trial keeps ``origin`` ``"carried"``, ``carry`` ``"sibling"`` and ``carried_from``
(``"#3 fused_conv2d_add_relu best 1"``) in its sidecar line. The search then evolves from what
the batch measured, the carries among it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msviz.engine.tuning.carried import Carried, carried, ranked
from msviz.records.library_index import module_keys
from msviz.records.task_match import distance, form
from msviz.trace.carry import carry_trace

if TYPE_CHECKING:  # the tuner's type only: the tuner does not import this module
    from msviz.engine.tuning.tuner import Tuner

__all__ = ["LATER", "PER_SOURCE", "SOURCES", "SiblingCarry"]

#: Sibling tasks whose records are carried to a task, nearest first.
SOURCES = 3
#: Fastest records carried from each.
PER_SOURCE = 4
#: Siblings whose new best a later batch carries, at most.
LATER = 2


class SiblingCarry:
    """The sibling carries of one run's tasks (see the module's docstring).

    Parameters
    ----------
    tuners : list of Tuner
        The run's tuners, set up.
    at_most : int
        Carries measured in a task's first batch, at most (``knobs.sibling_carry``).
    """

    def __init__(self, tuners: list[Tuner], at_most: int) -> None:
        self.tuners = list(tuners)
        self.at_most = int(at_most)
        self._keys: dict[int, tuple] = {}
        #: (task, sibling) -> the sibling's best seconds when the task last took its records.
        self._taken: dict[tuple[int, int], float] = {}
        for tuner in self.tuners:
            _, _, op, extents, dtype = module_keys(tuner.workload.mod)
            if op is not None and extents:
                self._keys[tuner.task_index] = (op, len(extents), dtype, extents,
                                                form(tuner.workload.mod))

    def attach(self) -> None:
        """Give every task that has siblings these carries for its batches."""
        for tuner in self.tuners:
            if self.siblings_of(tuner, tuned_only=False):
                tuner.sibling_source = self.carries

    def siblings_of(self, tuner: Tuner, *, tuned_only: bool = True) -> list[Tuner]:
        """The run's other tasks of the same operator, nearest first (those with a
        successful record only, unless ``tuned_only`` is False)."""
        mine = self._keys.get(tuner.task_index)
        if mine is None:
            return []
        op, rank, dtype, extents, shape_form = mine
        found = []
        for other in self.tuners:
            keys = self._keys.get(other.task_index)
            if other is tuner or keys is None or keys[:3] != (op, rank, dtype):
                continue
            if tuned_only and not other.best_secs < float("inf"):
                continue
            found.append((keys[4] != shape_form, distance(extents, keys[3]), other.task_index,
                          other))
        return [t for *_, t in sorted(found, key=lambda x: x[:3])]

    def carries(self, tuner: Tuner) -> list[Carried]:
        """The carries for ``tuner``'s next batch, best ranked first: for its first batch the
        fastest records of its nearest tuned siblings; for a later one the new best of each
        sibling that improved since (at most :data:`LATER`). Empty when there is none."""
        if tuner.search is None:
            return []
        first = not tuner.next_task_trial
        postprocs = [(type(p).__name__, p)
                     for p in list(tuner.context.space_generator.postprocs or [])]
        seen: set[int] = set(tuner.search.measured)
        found: list[Carried] = []
        sources = 0
        for source in self.siblings_of(tuner)[:SOURCES]:
            key = (tuner.task_index, source.task_index)
            if not first and not source.best_secs < self._taken.get(key, float("inf")):
                continue
            self._taken[key] = source.best_secs
            records = source.database.get_top_k(source.token, PER_SOURCE if first else 1)
            for rank, record in enumerate(records, start=1):
                try:
                    carry = carry_trace(record.trace, tuner.workload.mod, postprocs)
                except Exception:  # TVM's errors outside the replay: not carried, never fatal
                    continue
                if carry.schedule is None:
                    continue
                one = carried(carry.schedule, "sibling",
                              f"#{source.task_index} {source.task} best {rank}",
                              carry.adjusted, origin="carried")
                if one.shash not in seen:
                    seen.add(one.shash)
                    found.append(one)
            sources += 1
            if not first and sources >= LATER:
                break
        return ranked(tuner, found)[:self.at_most]
