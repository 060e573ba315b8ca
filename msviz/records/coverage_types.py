"""What a tuning library covers of a model, before any trial: plain data.

:func:`msviz.records.coverage.coverage` computes it (from a :class:`~msviz.records.library.Library`
and a model's tasks); :mod:`msviz.views.coverage` draws it. Latencies are µs.

A task's ``match`` is the best the library holds for it, in this order:

* ``"exact"``: a record of the same workload (structural hash) on the same target;
* ``"anchor"``: a record, on the same target, of a workload with the same anchor block
  (MetaSchedule's ``module_equality="anchor-block"``: e.g. a conv with another fused epilogue);
* ``"sibling"``: a workload of the same operator at another shape or layout (any target);
* ``"none"``.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["MATCHES", "Coverage", "TaskCoverage"]

#: The kinds of match, best first.
MATCHES = ("exact", "anchor", "sibling", "none")


class TaskCoverage(NamedTuple):
    """What the library holds for one task of a model."""

    index: int  # the task's index (MetaSchedule's task order)
    name: str  # the task's name (e.g. "fused_conv2d_add_relu")
    weight: int  # how often the model calls it
    op: str | None  # its operator kind (anchor block's name, e.g. "conv2d_nchw")
    match: str  # one of MATCHES
    best_us: float | None  # the library's best latency for it (exact or anchor match), else None
    source: str | None  # "<run>/<task>" of that best record (or of the nearest sibling)
    source_target: str | None  # the target text of that record
    siblings: int  # how many library workloads are its siblings (same op, other shape)
    untuned_us: float | None  # the task's untuned latency, when measured (else None)


class Coverage(NamedTuple):
    """A model's coverage by a library, for one target."""

    model: str
    target: str  # target text
    library: tuple[str, ...]  # the library's sources (run names)
    tasks: tuple[TaskCoverage, ...]
    #: The model's estimated latency from the library alone: sum of weight x (library best where
    #: exact/anchor, else untuned); None when untuned times were not measured.
    library_us: float | None
    untuned_us: float | None  # sum of weight x untuned latency (None when not measured)
    #: Share of the untuned weighted latency in tasks with an exact or anchor match (0..1; None
    #: when untuned times were not measured).
    covered_share: float | None
    problems: tuple[str, ...] = ()  # the library's sources that could not be read, each named

    def counts(self) -> dict[str, int]:
        """Tasks per kind of match, every kind present (0 where none)."""
        out = {m: 0 for m in MATCHES}
        for t in self.tasks:
            out[t.match] += 1
        return out
