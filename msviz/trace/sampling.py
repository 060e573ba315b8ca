"""Sampling instructions (TVM's ``sampling.cc``): the decisions each could make at a point of a
replay, and a recorded decision its sampler could not have returned.

``SamplePerfectTile`` chooses among the ordered factorizations of a loop's extent
(:func:`perfect_tiles`), ``SampleCategorical`` among its candidates, ``SampleComputeLocation``
among the loops where a block may be computed (:func:`site_info`). A decision outside them
(:func:`out_of_range`) is replayed by TVM as given, replaced (:func:`tvm_tile`) or refused
(:func:`replay_of` says which). :mod:`msviz.trace.sites` lists a trace's decision sites with
them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from msviz import compat

__all__ = [
    "COMPUTE_LOCATION_NAMES",
    "out_of_range",
    "perfect_tiles",
    "replay_of",
    "site_info",
    "tvm_tile",
]

#: Compute-location decisions that are not loop positions.
COMPUTE_LOCATION_NAMES = {-1: "root", -2: "inline"}


def _divisors(x: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(x) + 1) if x % d == 0]
    return sorted(set(small + [x // d for d in small]))


def perfect_tiles(extent: int, n: int, max_innermost_factor: int = -1) -> Iterator[tuple[int, ...]]:
    """Every ordered factorization of ``extent`` into ``n`` factors, as SamplePerfectTile sees it.

    Parameters
    ----------
    extent : int
        The loop extent (>= 1).
    n : int
        Number of factors (>= 1).
    max_innermost_factor : int
        Upper bound of the last (innermost) factor; -1 (or anything < 1) for none.

    Yields
    ------
    factors : tuple of int
        In lexicographic order.
    """
    if extent < 1 or n < 1:
        return
    limit = max_innermost_factor if max_innermost_factor >= 1 else extent

    def rec(rest: int, k: int) -> Iterator[tuple[int, ...]]:
        if k == 1:
            if rest <= limit:
                yield (rest,)
            return
        for d in _divisors(rest):
            for tail in rec(rest // d, k - 1):
                yield (d, *tail)

    yield from rec(extent, n)


def _tile_site(sch: Any, inputs: Any, attrs: Any) -> dict:
    n, max_inner = int(attrs[0]), int(attrs[1])
    loop = sch.get(inputs[0])
    info: dict = {"n": n, "max_innermost_factor": max_inner, "subject": loop.loop_var.name}
    if not isinstance(loop.extent, compat.tir.IntImm):
        info.update(editable=False, note=f"loop extent {loop.extent} is not a constant")
        return info
    extent = int(loop.extent.value)
    choices = tuple(perfect_tiles(extent, n, max_inner))
    info.update(extent=extent, choices=choices, labels=tuple(str(list(c)) for c in choices))
    return info


def _categorical_site(attrs: Any) -> dict:
    candidates = tuple(compat.to_jsonable(attrs[0]))
    probs = tuple(float(p) for p in compat.to_jsonable(attrs[1]))
    return {
        "candidates": candidates,
        "probs": probs,
        "choices": tuple(range(len(candidates))),
        "labels": tuple(f"{c!r} (p={p:.3g})" for c, p in zip(candidates, probs)),
    }


def _compute_location_site(sch: Any, inputs: Any) -> dict:
    block_rv = inputs[0]
    info: dict = {"subject": sch.get(block_rv).name_hint}
    # get_consumers/get_loops are traced primitives: ask a copy, so that the schedule being
    # replayed keeps exactly the instructions of the trace.
    view = sch.copy()
    consumers = view.get_consumers(block_rv)
    loops = list(view.get_loops(consumers[0])) if len(consumers) else []
    names = [view.get(loop).loop_var.name for loop in loops]
    choices, labels = [], []
    # SampleComputeLocation silently snaps a decision that is not a valid location to the
    # nearest one below it, so a candidate is valid exactly when it comes back unchanged.
    for d in [-2, -1, *range(len(loops))]:
        probe = sch.copy()
        probe.sample_compute_location(block_rv, decision=d)
        last = probe.trace.insts[-1]
        if int(probe.trace.get_decision(last)) == d:
            choices.append(d)
            labels.append(COMPUTE_LOCATION_NAMES.get(d) or f"{names[d]} (loop {d})")
    info.update(choices=tuple(choices), labels=tuple(labels), loops=tuple(names))
    return info


def site_info(sch: Any, kind: str, inputs: Any, attrs: Any) -> dict:
    """Choices and details of one sampling instruction, from the schedule at that point.

    Returns a dict of :class:`DecisionSite` fields (``choices``, ``labels``, ``editable`` ...).
    """
    if kind == "SamplePerfectTile":
        info = _tile_site(sch, inputs, attrs)
    elif kind == "SampleCategorical":
        info = _categorical_site(attrs)
    elif kind == "SampleComputeLocation":
        info = _compute_location_site(sch, inputs)
    else:
        return {"editable": False, "note": f"msviz cannot enumerate {kind} decisions"}
    info.setdefault("editable", True)
    info.setdefault("choices", ())
    info.setdefault("labels", ())
    return info


def out_of_range(kind: str, decision: Any, info: dict) -> str:
    """Why a recorded decision is not one its sampling instruction could have returned.

    Parameters
    ----------
    kind : str
        The sampling kind.
    decision : Any
        The decision as plain Python (:func:`~msviz.trace.rows.decision_value`).
    info : dict
        :func:`site_info` of the instruction at this point of the replay.

    Returns
    -------
    reason : str
        E.g. ``"innermost factor 128 > max_innermost_factor 64"``, several reasons joined by
        ``"; "``; empty when the decision is in range (or there is none).
    """
    if decision is None:
        return ""
    if kind == "SamplePerfectTile":
        return _tile_out_of_range(decision, info)
    if kind == "SampleCategorical":
        cands = list(info.get("candidates") or ())
        if isinstance(decision, int) and 0 <= decision < len(cands):
            return ""
        return (f"index {decision} is outside the {len(cands)} candidates {cands} "
                f"(0..{len(cands) - 1})")
    if kind == "SampleComputeLocation" and info.get("editable") and decision not in info["choices"]:
        valid = ", ".join(str(c) for c in info["choices"])
        return (f"{decision} is not a location where {info.get('subject') or 'the block'} can "
                f"be computed (valid: {valid})")
    return ""


def tvm_tile(factors: Any, extent: int) -> tuple[int, ...]:
    """The factors TVM's SamplePerfectTile replays for a recorded ``factors`` of a loop of
    ``extent``: from the innermost out, a factor that does not divide what is left of the
    extent becomes all of it ("the trivial default solution", TVM's sampling.cc), and the
    outermost factor is what is left. An inner factor 0, which TVM divides by (the process dies
    of a floating-point exception), is taken as not dividing."""
    out = [int(f) for f in factors]
    rest = extent
    for k in range(len(out) - 1, 0, -1):
        if out[k] == 0 or rest % out[k] != 0:
            out[k] = rest
        rest //= out[k]
    out[0] = rest
    return tuple(out)


def replay_of(sch: Any, kind: str, inputs: Any, value: Any, info: dict, decision: Any
               ) -> tuple[Any, str]:
    """For a recorded decision outside its sampler's range: the decision to go on replaying
    with (the recorded one unless TVM cannot replay it) and a note on what TVM does with it."""
    if kind == "SampleCategorical":
        # TVM stops at an index outside the candidates; go on with the likeliest one so that
        # the sites after it are still listed.
        probs = info.get("probs") or ()
        if not probs:
            return decision, ""
        likeliest = max(range(len(probs)), key=probs.__getitem__)
        return likeliest, (f"TVM cannot replay this index (it stops); the sites after it are "
                           f"listed as if it were {likeliest}")
    if kind == "SamplePerfectTile":
        n, extent = info.get("n"), info.get("extent")
        if extent is None or n is None:  # a loop of unknown extent: TVM ignores the decision
            return decision, ""
        try:
            factors = tuple(int(f) for f in value)
        except (TypeError, ValueError):
            factors = ()
        trivial = [1] * (n - 1) + [extent]  # TVM's own fallback for a tile it cannot keep
        if len(factors) != n:
            why = f"{len(factors)} factors for {n} outputs: it stops"
        elif 0 in factors[1:]:
            why = "an inner factor 0: it divides by it and the process dies"
        elif min(tvm_tile(factors, extent)) < 1:
            why = (f"it replays {list(tvm_tile(factors, extent))} and stops where they are used: "
                   "factors must be positive")
        else:
            instead = tvm_tile(factors, extent)
            if instead != factors:
                return decision, f"TVM replays {list(instead)} in place of these factors"
            return decision, ""
        return trivial, (f"TVM cannot replay these factors ({why}); the sites after it are "
                         f"listed as if it were {trivial}")
    if kind == "SampleComputeLocation" and info.get("editable"):
        probe = sch.copy()  # TVM snaps it to a valid location: ask it which
        probe.sample_compute_location(inputs[0], decision=int(value))
        snapped = int(probe.trace.get_decision(probe.trace.insts[-1]))
        label = dict(zip(info["choices"], info["labels"])).get(snapped, str(snapped))
        return decision, f"TVM computes the block at {label} instead"
    return decision, ""


def _tile_out_of_range(decision: Any, info: dict) -> str:
    try:
        factors = [int(f) for f in decision]
    except (TypeError, ValueError):
        return f"{decision!r} is not a list of integer factors"
    n, extent = info.get("n"), info.get("extent")
    max_inner = info.get("max_innermost_factor")
    reasons = []
    if n is not None and len(factors) != n:
        reasons.append(f"{len(factors)} factors, not n={n}")
    if any(f < 1 for f in factors):
        reasons.append("a factor below 1")
    elif extent is not None and math.prod(factors) != extent:
        reasons.append(f"factors multiply to {math.prod(factors)}, not to the loop extent {extent}")
    if max_inner is not None and max_inner >= 1 and factors and factors[-1] > max_inner:
        reasons.append(f"innermost factor {factors[-1]} > max_innermost_factor {max_inner}")
    return "; ".join(reasons)
