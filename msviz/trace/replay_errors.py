"""Why a trace does not replay: a :class:`~msviz.errors.DecisionError` naming the instruction
that fails, found by replaying ever longer prefixes of the trace (on the error path only)."""

from __future__ import annotations

from typing import Any

from msviz import compat
from msviz.errors import DecisionError
from msviz.trace.source import fresh_schedule

__all__ = ["decision_error", "replay_error", "tvm_summary"]


def decision_error(
    index: Any, kind: str, value: Any, allowed: str, reason: str, *, subject: str = ""
) -> DecisionError:
    """A DecisionError with ``index``, ``kind``, ``value`` and ``allowed`` attributes."""
    where = f"instruction {index}" + (f" ({kind}" + (f" of {subject}" if subject else "") + ")"
                                      if kind else "")
    err = DecisionError(f"{where}: {reason}. Allowed: {allowed}")
    err.index, err.kind, err.value, err.allowed = index, kind, value, allowed
    return err


def tvm_summary(err: BaseException) -> str:
    """The informative line(s) of a TVM error, without the rendered IR and C++ frames."""
    text = str(err).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    keep = [
        ln for ln in lines
        if not ln.startswith(("File ", "#", "^", "  ")) and "Traceback" not in ln
    ]
    for marker in ("Error message:", "Check failed", "Error:"):
        for ln in keep:
            if marker in ln:
                return f"{type(err).__name__}: {ln[:400]}"
    return f"{type(err).__name__}: {(keep[-1] if keep else text)[:400]}"


def _prefix(insts: list, decisions: dict, k: int) -> Any:
    return compat.Trace(insts[:k], {inst: d for inst, d in decisions.items()
                                    if any(inst.same_as(x) for x in insts[:k])})


def replay_error(trace: Any, mod: Any, edits: dict, err: BaseException) -> DecisionError:
    """Turn a failed replay into a DecisionError naming the instruction that failed.

    The trace is replayed one instruction longer at a time until it fails; this only runs on
    the error path, and traces are short.
    """
    insts = []
    for inst in trace.insts:
        if inst.kind.name == "EnterPostproc":
            break
        insts.append(inst)
    decisions = {inst: trace.get_decision(inst) for inst in insts
                 if trace.get_decision(inst) is not None}
    for i, value in edits.items():
        decisions[insts[i]] = list(value) if isinstance(value, tuple) else value
    failed_at, cause = None, err
    for k in range(1, len(insts) + 1):
        try:
            _prefix(insts, decisions, k).apply_to_schedule(fresh_schedule(mod),
                                                           remove_postproc=True)
        except Exception as sub:  # the first prefix that fails ends at the culprit
            failed_at, cause = k - 1, sub
            break
    summary = tvm_summary(cause)
    given = ", ".join(f"{i}: {list(v) if isinstance(v, tuple) else v}" for i, v in edits.items())
    edited = f" with the edited decisions {{{given}}}" if edits else ""
    if failed_at is None:
        return decision_error("?", "", edits, "decisions that replay",
                              f"the trace does not replay{edited} ({summary})")
    inst = insts[failed_at]
    return decision_error(
        failed_at,
        inst.kind.name,
        edits,
        "decisions under which every later instruction still applies",
        f"this instruction fails when the trace is replayed{edited}: {summary}",
    )
