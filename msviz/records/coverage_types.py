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

import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from msviz.errors import MsvizWarning

__all__ = ["COVERAGE_KIND", "MATCHES", "Coverage", "TaskCoverage", "coverage_from_dict",
           "coverage_to_dict", "last_coverage"]

#: The kinds of match, best first.
MATCHES = ("exact", "anchor", "sibling", "none")
#: The event kind and sidecar kind of a coverage computed at a session's start (its data,
#: and the sidecar line's fields: ``{"coverage": coverage_to_dict(cov)}``).
COVERAGE_KIND = "library_coverage"


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


def _plain(value: Any) -> Any:
    """A JSON-able copy: tuples as lists, NaN and infinities as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def coverage_to_dict(cov: Coverage) -> dict[str, Any]:
    """``cov`` as plain JSON-able data (the ``library_coverage`` event's and sidecar line's
    ``coverage``): its fields by name, ``tasks`` a list of dicts of :class:`TaskCoverage`'s
    fields, tuples as lists, a NaN latency as None. :func:`coverage_from_dict` reads it back."""
    out = {k: _plain(v) for k, v in cov._asdict().items() if k != "tasks"}
    out["tasks"] = [{k: _plain(v) for k, v in t._asdict().items()} for t in cov.tasks]
    return out


def _number(value: Any, what: str, *, integer: bool = False) -> Any:
    """``value`` as a float (an int with ``integer``), None kept; ValueError naming ``what``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} is {value!r}, not a number")
    if integer:
        if not float(value).is_integer():
            raise ValueError(f"{what} is {value!r}, not a whole number")
        return int(value)
    return float(value)


def _text(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{what} is {value!r}, not text")


def _texts(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, Mapping)) or not isinstance(value, Iterable):
        raise ValueError(f"{what} is {value!r}, not a list of text")
    out = tuple(value)
    for pos, item in enumerate(out):
        _text(item, f"{what}[{pos}]")
    return out


def _task(pos: int, data: Any) -> TaskCoverage:
    if not isinstance(data, Mapping):
        raise ValueError(f"coverage task {pos} is {data!r}, not a dict")
    index = _number(data.get("index"), f"coverage task {pos}: index", integer=True)
    index = pos if index is None else index
    name = _text(data.get("name"), f"coverage task {pos}: name") or f"task {index}"
    where = f"coverage task {pos} ({name})"
    match = data.get("match", "none")
    if match not in MATCHES:
        raise ValueError(f"{where}: match is {match!r}, not one of {', '.join(MATCHES)}")
    weight = _number(data.get("weight", 1), f"{where}: weight", integer=True)
    siblings = _number(data.get("siblings", 0), f"{where}: siblings", integer=True)
    return TaskCoverage(
        index, name, 1 if weight is None else weight, _text(data.get("op"), f"{where}: op"),
        match, _number(data.get("best_us"), f"{where}: best_us"),
        _text(data.get("source"), f"{where}: source"),
        _text(data.get("source_target"), f"{where}: source_target"),
        0 if siblings is None else siblings,
        _number(data.get("untuned_us"), f"{where}: untuned_us"))


def coverage_from_dict(data: Mapping[str, Any]) -> Coverage:
    """A :class:`Coverage` from :func:`coverage_to_dict`'s data.

    Tolerant of what an older or newer writer leaves out or adds: a missing field takes its
    default (text ``""``, lists empty, latencies None, a task's ``weight`` 1, ``match``
    ``"none"``, ``siblings`` 0, ``index`` its position, ``name`` ``"task <index>"``); an
    unknown field is ignored.

    Raises
    ------
    ValueError
        Where a field holds the wrong kind of value (a match not in :data:`MATCHES`, text for
        a latency, a share outside 0..1, ``tasks`` not a list of dicts), naming the field and
        the task.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"a coverage is a dict, not {type(data).__name__}: {data!r:.80}")
    tasks = data.get("tasks") or []
    if isinstance(tasks, (str, Mapping)) or not isinstance(tasks, Iterable):
        raise ValueError(f"coverage tasks is {tasks!r:.80}, not a list of dicts")
    share = _number(data.get("covered_share"), "coverage covered_share")
    if share is not None and not -1e-9 <= share <= 1 + 1e-9:
        raise ValueError(f"coverage covered_share is {share!r}, not a share (0..1)")
    return Coverage(
        _text(data.get("model"), "coverage model") or "",
        _text(data.get("target"), "coverage target") or "",
        _texts(data.get("library"), "coverage library"),
        tuple(_task(pos, t) for pos, t in enumerate(tasks)),
        _number(data.get("library_us"), "coverage library_us"),
        _number(data.get("untuned_us"), "coverage untuned_us"), share,
        _texts(data.get("problems"), "coverage problems"))


def last_coverage(entries: Iterable[Mapping[str, Any]], where: str = "") -> Coverage | None:
    """The coverage of the last ``library_coverage`` entry among sidecar lines (None without
    one): its ``coverage`` field, or the line itself where the coverage's fields were written
    into it. A malformed one is left out with a :class:`~msviz.errors.MsvizWarning` that says
    why (``where`` names the work dir)."""
    last = None
    for entry in entries:
        if entry.get("kind") == COVERAGE_KIND:
            last = entry
    if last is None:
        return None
    data = last.get("coverage")
    try:
        return coverage_from_dict(data if isinstance(data, Mapping) else last)
    except ValueError as err:
        warnings.warn(f"{where or 'the sidecar'}: its {COVERAGE_KIND} line is left out: {err}",
                      MsvizWarning, stacklevel=2)
        return None
