"""Decision sites: every sampling instruction of a trace with the choices it could have made.

The valid choices of a site depend on the schedule at that point of the replay (a tile's loop
extent, the loops a block may be computed at), so the trace is replayed on a fresh schedule of
the workload and each sampling instruction is inspected as MetaSchedule's own mutators do:
from the ``decision_provider`` hook of ``Trace.apply_to_schedule``, which sees the instruction's
inputs translated into the new schedule. The choices of each sampling instruction are
:mod:`msviz.trace.sampling`'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import pandas as pd

from msviz import compat
from msviz.trace.replay_errors import replay_error
from msviz.trace.rows import decision_value, is_sampling, rv_names
from msviz.trace.sampling import out_of_range, replay_of, site_info
from msviz.trace.source import fresh_schedule, resolve_trace

__all__ = [
    "EDITABLE_KINDS",
    "DecisionSite",
    "decision_sites",
    "design_space_sizes",
    "sites_frame",
    "space_size",
]

#: Sampling kinds whose decision msviz can enumerate and edit.
EDITABLE_KINDS = ("SamplePerfectTile", "SampleCategorical", "SampleComputeLocation")


class DecisionSite(NamedTuple):
    """A sampling instruction of a trace and its valid alternatives.

    Attributes
    ----------
    index : int
        Position of the instruction in the trace.
    kind : str
        ``SamplePerfectTile``, ``SampleCategorical``, ``SampleComputeLocation`` or another
        sampling kind.
    decision : Any
        The decision in the trace: a tuple of tile factors, a candidate index, or a compute
        location (loop position; -1 root, -2 inline).
    choices : tuple
        Every valid decision, in the same form as ``decision`` (empty when not editable).
    labels : tuple of str
        A readable label for each choice.
    editable : bool
        Whether msviz can enumerate and edit this decision.
    subject : str
        What is decided about: the loop's name for a tile, the block's name for a compute
        location, the instructions using the value for a categorical.
    outputs : tuple of str
        The random variables the instruction defines (as ``as_python`` names them).
    used_by : tuple of int
        Indices of the later instructions that use those variables.
    extent : int | None
        The tiled loop's extent (SamplePerfectTile).
    n : int | None
        Number of tile factors (SamplePerfectTile).
    max_innermost_factor : int | None
        Upper bound of the innermost factor, -1 for none (SamplePerfectTile).
    candidates : tuple | None
        Candidate values (SampleCategorical); the decision is an index into them.
    probs : tuple of float | None
        Their probabilities (SampleCategorical).
    note : str
        Why a site is not editable, or other remarks.
    out_of_range : str
        Why the decision in the trace is not one its sampler can return (e.g. ``"innermost
        factor 128 > max_innermost_factor 64"``); empty when it is in range. A trace written
        by hand, by an older TVM or by another tool can hold such a decision: TVM replays it as
        given (tiles whose factors divide the extent, e.g. ``[4, 128]`` under 64), replaces it
        (other tiles: :func:`tvm_tile`; compute locations: the nearest valid one below it) or
        cannot replay it (categorical indices, a wrong number of factors, factors below 1 it
        keeps); ``note`` says which.
    """

    index: int
    kind: str
    decision: Any
    choices: tuple
    labels: tuple
    editable: bool
    subject: str = ""
    outputs: tuple = ()
    used_by: tuple = ()
    extent: int | None = None
    n: int | None = None
    max_innermost_factor: int | None = None
    candidates: tuple | None = None
    probs: tuple | None = None
    note: str = ""
    out_of_range: str = ""

    @property
    def count(self) -> int:
        """How many valid choices the site has (1 for a site that is not editable)."""
        return len(self.choices) if self.editable else 1

    def label_of(self, decision: Any) -> str:
        """The label of one decision of this site."""
        decision = _as_decision(decision)
        for choice, label in zip(self.choices, self.labels):
            if choice == decision:
                return label
        return str(decision)


def _as_decision(value: Any) -> Any:
    if isinstance(value, (list, tuple)) or type(value).__name__ in ("Array", "List"):
        return tuple(compat.to_jsonable(v) for v in value)
    return compat.to_jsonable(value)


def _users(trace: Any) -> dict[int, tuple[int, ...]]:
    """Instruction index -> indices of the later instructions that use its outputs."""
    insts = list(trace.insts)
    producer: dict[Any, int] = {}
    users: dict[int, list[int]] = {}
    for i, inst in enumerate(insts):
        for value in _flatten(inst.inputs):
            j = producer.get(value) if _is_rv(value) else None
            if j is not None and i not in users.setdefault(j, []):
                users[j].append(i)
        for out in inst.outputs:
            if out is not None:
                producer[out] = i
    return {k: tuple(v) for k, v in users.items()}


def _is_rv(value: Any) -> bool:
    return type(value).__name__ in ("SBlockRV", "LoopRV") or isinstance(value, compat.tir.Var)


def _flatten(values: Iterable[Any]) -> Iterator[Any]:
    for v in values:
        if isinstance(v, (list, tuple)) or type(v).__name__ in ("Array", "List"):
            yield from _flatten(v)
        else:
            yield v


def decision_sites(obj: Any, mod: Any = None) -> list[DecisionSite]:
    """Every sampling instruction of a trace, with its decision and its valid choices.

    Parameters
    ----------
    obj : Trace | Schedule | msviz.records.Trial | Replay | TuningRecord | MeasureCandidate
        What to read the trace from.
    mod : IRModule | PrimFunc | Workload | str, optional
        The workload before scheduling; required for a bare Trace or Schedule.

    Returns
    -------
    sites : list of DecisionSite
        In trace order. ``SamplePerfectTile`` choices are the ordered factorizations of the
        loop's extent (at that point of the replay) into ``n`` factors with the innermost
        ``<= max_innermost_factor``; ``SampleCategorical`` choices are candidate indices;
        ``SampleComputeLocation`` choices are the loop positions (and -1 root, -2 inline) where
        the block may legally be computed. Other sampling kinds are listed as not editable.
        A recorded decision outside these choices is kept as recorded and flagged in
        ``out_of_range``, ``note`` saying what TVM does with it; where TVM cannot replay it,
        the sites after it are listed as if it were the decision the note names.

    Raises
    ------
    msviz.DecisionError
        When the trace cannot be replayed on ``mod``.
    """
    trace, base = resolve_trace(obj, mod)
    insts = list(trace.insts)
    index_of = {inst: i for i, inst in enumerate(insts)}
    names = rv_names(trace)
    users = _users(trace)
    sch = fresh_schedule(base)
    sites: list[DecisionSite] = []

    def provider(inst: Any, inputs: Any, attrs: Any, decision: Any) -> Any:
        kind = inst.kind.name
        if is_sampling(kind):
            i = index_of[inst]
            info = site_info(sch, kind, inputs, attrs)
            info.pop("loops", None)
            used = users.get(i, ())
            if kind == "SampleCategorical" and used:
                info.setdefault("subject", ", ".join(_describe_use(insts[j]) for j in used))
            value = decision_value(decision)
            reason = out_of_range(kind, value, info)
            replayed = decision
            if reason:
                replayed, note = replay_of(sch, kind, inputs, value, info, decision)
                if note:
                    info["note"] = note
            sites.append(
                DecisionSite(
                    index=i,
                    kind=kind,
                    decision=value,
                    outputs=tuple(names.get(o, "_") for o in inst.outputs),
                    used_by=used,
                    out_of_range=reason,
                    **info,
                )
            )
            return replayed
        return decision

    try:
        trace.apply_to_schedule(sch, remove_postproc=True, decision_provider=provider)
    except Exception as err:
        raise replay_error(trace, base, {}, err) from None
    return sites


def _describe_use(inst: Any) -> str:
    kind = inst.kind.name
    if kind == "Annotate" and len(inst.attrs):
        return f"Annotate {inst.attrs[0]}"
    return kind


def space_size(obj: Any, mod: Any = None) -> int:
    """The number of distinct decision vectors: the product of the sites' choice counts.

    Parameters
    ----------
    obj : list of DecisionSite | anything :func:`decision_sites` accepts
        Sites, or what to compute them from.
    mod : optional
        The workload, as for :func:`decision_sites`.

    Returns
    -------
    size : int
        Sites that are not editable count as 1. Counts are taken at the trace's own decisions
        (a later site's choices can depend on an earlier decision, e.g. compute locations).
    """
    sites = obj if isinstance(obj, list) and all(isinstance(s, DecisionSite) for s in obj) else (
        decision_sites(obj, mod)
    )
    return math.prod(s.count for s in sites)


def sites_frame(sites: list[DecisionSite]) -> pd.DataFrame:
    """The sites as a table: index, kind, subject, decision, label, count, editable, choices,
    out_of_range (why the decision is outside its sampler's range; empty when it is not)."""
    rows = [
        {
            "index": s.index,
            "kind": s.kind,
            "subject": s.subject,
            "decision": s.decision,
            "label": s.label_of(s.decision) if s.editable else str(s.decision),
            "count": s.count,
            "editable": s.editable,
            "choices": list(s.labels),
            "out_of_range": s.out_of_range,
        }
        for s in sites
    ]
    columns = ["index", "kind", "subject", "decision", "label", "count", "editable", "choices",
               "out_of_range"]
    return pd.DataFrame(rows, columns=columns)


def design_space_sizes(spaces: Iterable[Any], mod: Any = None) -> pd.DataFrame:
    """One row per design space: its number of decision sites and its size.

    Parameters
    ----------
    spaces : iterable of Schedule | Trace
        Design spaces, e.g. ``TuneContext.generate_design_space()``.
    mod : optional
        The workload (required: a design space's schedule does not remember it).

    Returns
    -------
    table : pandas.DataFrame
        Columns ``space``, ``instructions``, ``sites``, ``editable_sites``, ``size``, ``kinds``.
    """
    rows = []
    for k, space in enumerate(spaces):
        sites = decision_sites(space, mod)
        trace = resolve_trace(space, need_mod=False).trace
        rows.append(
            {
                "space": k,
                "instructions": len(trace.insts),
                "sites": len(sites),
                "editable_sites": sum(s.editable for s in sites),
                "size": space_size(sites),
                "kinds": ", ".join(sorted({s.kind for s in sites})),
            }
        )
    columns = ["space", "instructions", "sites", "editable_sites", "size", "kinds"]
    return pd.DataFrame(rows, columns=columns)
