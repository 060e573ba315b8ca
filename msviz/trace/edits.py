"""Checking edited decisions before a replay: each against its decision site's valid choices,
and the edit dict as a whole (indices of sampling instructions before ``EnterPostproc``).

TVM does not reject every bad decision (a tile whose factors do not multiply to the extent is
"repaired"), so :func:`msviz.trace.with_decisions` checks each one here first and names what
is allowed in a :class:`msviz.DecisionError`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from typing import Any

from msviz.trace.replay_errors import decision_error
from msviz.trace.rows import is_sampling
from msviz.trace.sites import EDITABLE_KINDS, DecisionSite

__all__ = ["check_edit", "normalize_edits"]


def _int(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError("bool")
    return operator.index(value)


def _examples(choices: tuple, k: int = 4) -> str:
    shown = ", ".join(str(list(c)) if isinstance(c, tuple) else str(c) for c in choices[:k])
    return shown + (", ..." if len(choices) > k else "")


def check_edit(index: int, kind: str, value: Any, info: dict) -> Any:
    """Validate one edited decision against the site's details; return it in TVM's form.

    Parameters
    ----------
    index, kind : int, str
        The instruction.
    value : Any
        The decision the user gave.
    info : dict
        :func:`msviz.trace.sampling.site_info` of the instruction at this point of the replay.

    Raises
    ------
    msviz.DecisionError
    """
    subject = info.get("subject", "")
    if not info.get("editable", False):
        raise decision_error(index, kind, value, "no edit (keep the sampled decision)",
                             f"{kind} decisions cannot be edited ({info.get('note', '')})",
                             subject=subject)
    choices = info["choices"]
    if kind == "SamplePerfectTile":
        n, extent, max_inner = info["n"], info["extent"], info["max_innermost_factor"]
        inner = f" and whose innermost factor is <= {max_inner}" if max_inner >= 1 else ""
        allowed = (f"{n} positive integers whose product is {extent}{inner} "
                   f"({len(choices)} choices, e.g. {_examples(choices)})")
        try:
            factors = tuple(_int(v) for v in value)
        except TypeError:
            raise decision_error(index, kind, value, allowed, f"{value!r} is not a list of "
                                 "integers", subject=subject) from None
        if len(factors) != n:
            reason = f"{list(factors)} has {len(factors)} factors, not {n}"
        elif any(f < 1 for f in factors):
            reason = f"{list(factors)} has a factor below 1"
        elif math.prod(factors) != extent:
            reason = (f"{list(factors)} multiplies to {math.prod(factors)}, not to the loop "
                      f"extent {extent}")
        elif max_inner >= 1 and factors[-1] > max_inner:
            reason = (f"{list(factors)} has innermost factor {factors[-1]} > "
                      f"max_innermost_factor {max_inner}")
        else:
            return list(factors)
        raise decision_error(index, kind, value, allowed, reason, subject=subject)
    if kind == "SampleCategorical":
        cands = info["candidates"]
        allowed = f"an index 0..{len(cands) - 1} into the candidates {list(cands)}"
    else:
        allowed = "one of " + ", ".join(f"{c} ({lab})" for c, lab in zip(choices, info["labels"]))
    try:
        choice = _int(value)
    except TypeError:
        raise decision_error(index, kind, value, allowed, f"{value!r} is not an integer",
                             subject=subject) from None
    if choice not in choices:
        raise decision_error(index, kind, value, allowed, f"{choice} is not a valid choice",
                             subject=subject)
    return choice


def normalize_edits(trace: Any, decisions: Any) -> dict[int, Any]:
    """``decisions`` as {instruction index: value}, each index that of a sampling instruction
    of ``trace`` before ``EnterPostproc`` whose decision can be edited.

    Raises
    ------
    TypeError
        When ``decisions`` is not a dict.
    msviz.DecisionError
        Naming an index that is out of range, not a sampling instruction, after
        ``EnterPostproc`` or of a kind that cannot be edited.
    """
    insts = list(trace.insts)
    post = next((i for i, inst in enumerate(insts) if inst.kind.name == "EnterPostproc"),
                len(insts))
    sampling = [i for i in range(post) if is_sampling(insts[i].kind.name)]
    edits: dict[int, Any] = {}
    if decisions is not None and not isinstance(decisions, Mapping):
        raise TypeError(
            f"decisions must be a dict {{instruction index: new decision}} (e.g. "
            f"{{6: [4, 8, 2, 2]}}), not a {type(decisions).__name__}: {decisions!r}; this "
            f"trace's sampling instructions: {sampling}")
    for key, value in dict(decisions or {}).items():
        index = key.index if isinstance(key, DecisionSite) else key
        try:
            index = _int(index)
        except TypeError:
            raise decision_error(key, "", value, f"instruction indices {sampling}",
                                 f"{key!r} is not an instruction index") from None
        if not 0 <= index < len(insts):
            raise decision_error(index, "", value, f"the sampling instructions {sampling}",
                                 f"index out of range: the trace has {len(insts)} instructions "
                                 f"(0..{len(insts) - 1})")
        kind = insts[index].kind.name
        if not is_sampling(kind):
            raise decision_error(index, kind, value, f"the sampling instructions {sampling}",
                                 f"a {kind} instruction has no decision")
        if index >= post:
            raise decision_error(index, kind, value, f"the sampling instructions {sampling}",
                                 "it comes after EnterPostproc, and postprocessors are re-run")
        if kind not in EDITABLE_KINDS:
            raise decision_error(index, kind, value, "no edit (keep the sampled decision)",
                                 f"{kind} decisions cannot be edited")
        edits[index] = value
    return edits
