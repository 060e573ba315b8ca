"""Carry a schedule to a sibling shape: replay one workload's trace on the same operator at
another shape, keeping every decision that is still valid and mapping the others to the
nearest valid choice.

A tuning library holds the best traces of a workload at one shape (a conv at 56x56, GMM with
``M=128``); a new task is the same operator at another shape. Its instructions still apply
(the blocks and loops have the same names), but a tile's factors no longer multiply to the new
loop extent, and a compute location may no longer be legal. :func:`carry_trace` replays the
trace as :func:`msviz.trace.replay.apply_trace` does, and from the ``decision_provider`` hook
of ``Trace.apply_to_schedule`` asks :func:`msviz.trace.sampling.site_info` for each sampling
instruction's valid choices at that point of the replay; a decision outside them becomes
:func:`nearest_choice`. Then the postprocs run, as MetaSchedule applies them to a candidate.

Example
-------
A tuning record's trace, read from its JSON with the workload it was tuned on (as
:mod:`msviz.records` does), carried to ``M=96``::

    from msviz import compat, workloads
    from msviz.trace import carry_trace, default_postprocs

    old = compat.Workload(workloads.get("GMM", shape=(1, 128, 128, 128)).mod)
    record = compat.tuning_record_from_json(record_json, old)  # json.loads of a record line
    new = workloads.get("GMM", shape=(1, 96, 128, 128)).mod
    carried = carry_trace(record.trace, new, default_postprocs(new, "llvm"))
    carried.schedule.mod, carried.adjusted, carried.error  # error is None when it worked

(``carry_trace(record, new, "llvm")`` reads the trace from the record itself.)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, NamedTuple

from msviz.trace.replay import apply_trace, default_postprocs
from msviz.trace.replay_errors import tvm_summary
from msviz.trace.rows import decision_value, is_sampling
from msviz.trace.sampling import site_info
from msviz.trace.sites import EDITABLE_KINDS
from msviz.trace.source import fresh_schedule, resolve_mod, resolve_trace

__all__ = ["Carry", "carry_trace", "nearest_choice"]


class Carry(NamedTuple):
    """A trace carried to another workload.

    Attributes
    ----------
    schedule : tvm.s_tir.Schedule | None
        The carried schedule, postprocs applied; None when the carry failed.
    adjusted : tuple of int
        Trace positions (instruction indices) of the decisions that had to change, in trace
        order (up to the failure, when it failed).
    error : str | None
        Why it failed: the instruction (index and kind) or the postproc that refused, with
        TVM's reason; None when the carry worked.
    """

    schedule: Any | None
    adjusted: tuple[int, ...]
    error: str | None


# -- the nearest valid choice ----------------------------------------------------------------


def _ratio(a: int, b: int) -> Fraction:
    """``2 ** |log2 a - log2 b|``, exactly (factors below 1 count as 1)."""
    a, b = max(int(a), 1), max(int(b), 1)
    return Fraction(max(a, b), min(a, b))


def _aligned(decision: Any, n: int) -> tuple[int, ...]:
    """A tile decision as ``n`` factors, aligned at the innermost: extra outer factors fold
    into the outermost one, missing ones are 1."""
    try:
        factors = [int(f) for f in decision]
    except (TypeError, ValueError):
        factors = []
    if len(factors) > n:
        factors = [math.prod(factors[: len(factors) - n + 1]), *factors[len(factors) - n + 1:]]
    return (1,) * (n - len(factors)) + tuple(factors)


def _nearest_tile(decision: Any, choices: tuple) -> tuple[int, ...]:
    old = _aligned(decision, len(choices[0]))

    def key(choice: tuple) -> tuple:
        ratios = [_ratio(a, b) for a, b in zip(old, choice)]
        # a sum of |log2| compares as the product of the ratios, exactly; ties go to the
        # choice whose innermost factor is closest, then the next one out, then the smallest
        return (math.prod(ratios), tuple(reversed(ratios)), tuple(choice))

    return tuple(min(choices, key=key))


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _nearest_location(decision: Any, choices: tuple) -> int:
    d = _as_int(decision)
    if d is None:
        return -1 if -1 in choices else min(choices)
    loops = [c for c in choices if c >= 0]
    if d >= 0 and loops:  # a loop position goes to the nearest loop position, outer on a tie
        return min(loops, key=lambda c: (abs(c - d), c))
    # inline -> root -> the outermost loop: nearest in that order, a loop before inline
    return min(choices, key=lambda c: (abs(c - d), c < 0, c))


def nearest_choice(kind: str, decision: Any, choices: tuple) -> Any:
    """The valid choice nearest to a decision.

    Parameters
    ----------
    kind : str
        The sampling kind (``SamplePerfectTile``, ``SampleCategorical``,
        ``SampleComputeLocation``).
    decision : Any
        The decision to carry: tile factors, a candidate index, a compute location.
    choices : tuple
        The valid decisions, as :class:`msviz.trace.sites.DecisionSite` lists them.

    Returns
    -------
    choice : Any
        ``decision`` itself (in the form of ``choices``) when it is valid. Otherwise, for
        ``SamplePerfectTile`` the factor tuple closest in the sum of
        ``|log2 a_i - log2 b_i|`` (a decision of another length is aligned at the innermost
        factor); ties go to the tuple whose innermost factor is closest, then the next one out,
        then the smallest tuple. For ``SampleCategorical`` the nearest index (the lower on a
        tie). For ``SampleComputeLocation`` the nearest valid loop position (the outer on a
        tie; root or inline only when no loop position is valid), and for an invalid root or
        inline the nearest of inline, root, the outermost loop. Another kind, or no choices:
        ``decision`` unchanged.

    Examples
    --------
    A tile of 128 carried to 96: ``(2, 3, 16)`` and ``(2, 4, 12)`` are both ``log2(4/3)``
    away, and the innermost 16 decides.

    >>> from msviz.trace import perfect_tiles
    >>> nearest_choice("SamplePerfectTile", [2, 4, 16], tuple(perfect_tiles(96, 3, 64)))
    (2, 3, 16)
    """
    choices = tuple(choices)
    if not choices or kind not in EDITABLE_KINDS:
        return decision
    value = decision_value(decision)
    if value in choices:
        return value
    if kind == "SamplePerfectTile":
        return _nearest_tile(value if value is not None else (), choices)
    if kind == "SampleComputeLocation":
        return _nearest_location(value, choices)
    d = _as_int(value)
    if d is None:
        return min(choices)
    return min(choices, key=lambda c: (abs(c - d), c))


# -- carrying a trace ------------------------------------------------------------------------


def _postprocs_for(postprocs: Any, mod: Any) -> list:
    """A list of (name, Postproc), or a target whose default postprocs to initialise for
    ``mod``; None or False for none."""
    if postprocs is None or postprocs is False:
        return []
    if isinstance(postprocs, (list, tuple)):
        return list(postprocs)
    return default_postprocs(mod, postprocs)


def carry_trace(trace: Any, mod: Any, postprocs: Any, *, seed: int | None = None) -> Carry:
    """Replay another workload's trace on ``mod``, mapping decisions that are no longer valid.

    Parameters
    ----------
    trace : Trace | Schedule | TuningRecord | msviz.records.Trial | Replay
        The trace to carry, with its decisions (a tuning record's, as read from its JSON).
        Its postproc instructions, if any, are dropped: the postprocs run again.
    mod : IRModule | PrimFunc | Workload | str
        The new workload, before scheduling.
    postprocs : list of (name, Postproc) | list of Postproc | Target | str | dict | None
        Initialised postprocs to apply in order, as :func:`msviz.trace.default_postprocs`
        gives them for ``mod``; or a target, whose default postprocs are initialised for
        ``mod``; None (or False) for none.
    seed : int, optional
        Seed of the fresh schedule; it only samples the decisions the trace lacks (default 1,
        so that a carry is reproducible).

    Returns
    -------
    carry : Carry
        ``schedule`` (postprocs applied), ``adjusted`` (positions of the decisions that were
        mapped with :func:`nearest_choice`, at the choices :func:`msviz.trace.sampling.site_info`
        computes at that point of the replay), ``error``. Every decision still valid on
        ``mod`` is kept as it is; sampling kinds msviz cannot enumerate keep theirs too. An
        instruction or postproc that fails gives ``Carry(None, adjusted so far, error)``: a
        bad trace never raises.
    """
    base = resolve_mod(mod)
    source = resolve_trace(trace, base)
    procs = _postprocs_for(postprocs, base)
    insts = list(source.trace.insts)
    index_of = {inst: i for i, inst in enumerate(insts)}
    sch = fresh_schedule(base, seed=1 if seed is None else seed)
    adjusted: list[int] = []
    reached: list[int] = []  # the provider sees every instruction just before TVM applies it

    def provider(inst: Any, inputs: Any, attrs: Any, decision: Any) -> Any:
        i = index_of[inst]
        reached.append(i)
        kind = inst.kind.name
        if decision is None or not is_sampling(kind) or kind not in EDITABLE_KINDS:
            return decision
        info = site_info(sch, kind, inputs, attrs)
        if not info.get("editable") or not info.get("choices"):
            return decision
        value = decision_value(decision)
        if value in info["choices"]:
            return decision
        adjusted.append(i)
        new = nearest_choice(kind, value, info["choices"])
        return list(new) if isinstance(new, tuple) else new

    outcome = apply_trace(base, source.trace, procs, decision_provider=provider, schedule=sch)
    if outcome.schedule is not None:
        return Carry(outcome.schedule, tuple(adjusted), None)
    why = tvm_summary(outcome.error) if outcome.error is not None else ""
    if outcome.failed_step == "trace replay":
        if reached:
            i = reached[-1]
            where = f"instruction {i} ({insts[i].kind.name})"
        else:
            where = "the trace"
        error = f"{where} failed on the new workload: {why or 'no reason given'}"
    else:
        error = (f"postproc {outcome.failed_step} "
                 + (f"failed: {why}" if why else "rejected the schedule"))
    return Carry(None, tuple(adjusted), error)
