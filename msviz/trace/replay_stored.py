"""A stored trial replayed: the postprocessors it was made with, the tensor intrinsics its
replay needs here, and the check that an unedited replay gives the stored module.

Replaying a trace re-runs the postprocessors, so the replay equals the stored module only with
the postprocessors the trial was made with. They are not always the target's defaults: a
session's rule set may hold others (``RuleSet.default("llvm")`` of an AVX2 host has no
``RewriteTensorize``, MetaSchedule's own tests use none), and a trial that only annotates a
block for ``RewriteTensorize`` is tensorized by a replay that applies it. The object replayed
says which it was made with (:func:`own_postprocs`). A tensor intrinsic this TVM has not
registered cannot be applied at all, and ``RewriteTensorize`` then leaves the block
untensorized with only a log line: :func:`check_intrinsics` refuses such a replay by name.
"""

from __future__ import annotations

from typing import Any

from msviz import compat
from msviz.errors import ReplayError
from msviz.trace.replay_errors import tvm_summary
from msviz.trace.source import fresh_schedule
from msviz.trace.tensorize import tensorize_info

__all__ = ["check_intrinsics", "check_stored", "own_postprocs", "replayed_what"]


def own_postprocs(obj: Any) -> list | None:
    """The postprocessors ``obj`` was made with, where it knows them and they are not its
    target's defaults: a :class:`~msviz.trace.Replay`'s, a ``records.Trial``'s (its run's
    rules); None otherwise (a bare trace, a stock record: the target's defaults apply)."""
    method = getattr(obj, "own_postprocs", None)
    return method() if callable(method) else None


def replayed_what(obj: Any) -> str:
    """How an error names what was replayed: ``trial 3``, ``the replay``, ``the record``."""
    index = getattr(obj, "index", None)
    if isinstance(index, int) and getattr(obj, "record", None) is not None:
        return f"trial {index}"
    if hasattr(obj, "workload_mod") and hasattr(obj, "edits"):
        return "the replay"
    if hasattr(obj, "run_secs") and hasattr(obj, "workload"):
        return "the tuning record"
    return "the trace"


def check_intrinsics(trace: Any, postprocs: list[str], target: Any, what: str) -> None:
    """Refuse a replay that needs a tensor intrinsic this TVM has not registered.

    The replay applies the trace's ``Tensorize`` instructions before ``EnterPostproc``, and,
    when ``RewriteTensorize`` is among ``postprocs``, the intrinsics its
    ``meta_schedule.auto_tensorize`` annotations name.

    Raises
    ------
    msviz.ReplayError
        Naming what was replayed, the target and the intrinsics missing here.
    """
    steps = tensorize_info(trace, with_intrinsics=False).steps
    rewrite = "RewriteTensorize" in postprocs
    needed = []
    for step in steps:
        if step.postproc or not step.intrin:
            continue
        if (step.kind == "Tensorize" or (step.kind == "Annotate" and rewrite)) and \
                step.intrin not in needed:
            needed.append(step.intrin)
    missing = [name for name in needed if compat.tensor_intrin(name) is None]
    if not missing:
        return
    names = ", ".join(repr(n) for n in missing)
    raise ReplayError(
        f"{what} cannot be replayed on this host for target {compat.describe_target(target)}: "
        f"its trace tensorizes with {names}, which this TVM has not registered (MetaSchedule's "
        f"x86 ones here: {', '.join(sorted(compat.INTRIN_FEATURES))}). Without it the replay "
        "would leave the block untensorized, another module than the stored one. Register it "
        "first (TVM's TensorIntrin.register(name, description, implementation)) or replay "
        "where it is registered.")


def _stored_module(obj: Any, trace: Any, mod: Any) -> Any:
    """The module ``obj`` stands for: its whole trace, postproc part included, applied to a
    fresh schedule of its workload (as ``Database.query_schedule`` does)."""
    sch = getattr(obj, "schedule", None)
    if isinstance(sch, compat.Schedule):
        return sch.mod
    sch = fresh_schedule(mod)
    trace.apply_to_schedule(sch, remove_postproc=False)
    return sch.mod


def _postproc_lines(trace: Any) -> list[str]:
    lines = list(trace.as_python())
    start = next((i for i, ln in enumerate(lines) if ln.startswith("sch.enter_postproc(")),
                 len(lines))
    return lines[start:]


def _first_difference(stored: list[str], replayed: list[str]) -> str:
    for i in range(max(len(stored), len(replayed))):
        a = stored[i] if i < len(stored) else "(nothing)"
        b = replayed[i] if i < len(replayed) else "(nothing)"
        if a != b:
            return (f"after EnterPostproc, step {i} of the stored trace is {a!r}, the replay's "
                    f"is {b!r}")
    return ("the traces agree instruction for instruction, so an instruction acts otherwise "
            "here than where the trial was stored (a tensor intrinsic registered with another "
            "implementation?)")


def check_stored(obj: Any, trace: Any, mod: Any, replayed: Any, postprocs: list[str],
                 target: Any, what: str) -> None:
    """Refuse an unedited replay whose module is not the stored one.

    Parameters
    ----------
    obj : Trial | Replay | TuningRecord
        What was replayed.
    trace : Trace
        Its stored trace (postproc part included).
    mod : IRModule
        Its workload.
    replayed : Schedule
        The replay, postprocessors applied.
    postprocs : list of str
        The postprocessors applied.
    target : Target
        The target they are of.
    what : str
        How the error names ``obj``.

    Raises
    ------
    msviz.ReplayError
        Naming what was replayed, the target, the postprocessors and the first difference.
    """
    try:
        stored = _stored_module(obj, trace, mod)
    except Exception as err:
        raise ReplayError(
            f"{what}'s stored trace does not apply on this host for target "
            f"{compat.describe_target(target)}, so its stored module cannot be made here to "
            f"compare the replay with: {tvm_summary(err)}") from None
    if compat.structural_equal(stored, replayed.mod):
        return
    where = _first_difference(_postproc_lines(trace), _postproc_lines(replayed.trace))
    run = getattr(obj, "run", None)
    stock = run is not None and not getattr(run, "environment", None)
    known = (" (a work dir without msviz's sidecar does not say which: tune_tir uses the "
             "target's defaults unless given a space generator of its own)") if stock else ""
    raise ReplayError(
        f"{what} does not replay to its stored module for target "
        f"{compat.describe_target(target)} with the postprocs {', '.join(postprocs) or 'none'}"
        f": {where}. It was made with other postprocessors than these{known}: pass "
        "postprocs= those it was tuned with (a RuleSet's rules.build()[1]), or read its stored "
        "module (.mod)")
