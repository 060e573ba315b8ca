"""Where a trace comes from: turn records, trials, schedules and candidates into (trace, module).

A MetaSchedule ``Trace`` is a program *over* a workload: it has no module of its own. Anything
that replays a trace (decision sites, edits) therefore needs the workload's IRModule as it was
before scheduling. A trial or a tuning record carries it; a ``Schedule`` does not (its ``mod``
is the module *after* its instructions), so for a schedule the caller passes ``mod=``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from msviz import compat, workloads

__all__ = ["TraceSource", "resolve_mod", "resolve_trace", "target_of"]


class TraceSource(NamedTuple):
    """A trace together with the workload module it applies to.

    Attributes
    ----------
    trace : tvm.s_tir.schedule.Trace
        The trace, postproc instructions included if it had any.
    mod : tvm.IRModule | None
        The workload before scheduling, or None when it could not be known.
    """

    trace: Any
    mod: Any


def resolve_mod(mod: Any) -> compat.IRModule:
    """The workload IRModule for anything msviz calls a workload.

    Parameters
    ----------
    mod : tvm.IRModule | tvm.tirx.PrimFunc | msviz.workloads.Workload | str
        A module, a PrimFunc, a catalogue workload, a catalogue name or TVMScript text.

    Returns
    -------
    mod : tvm.IRModule
        Normalized the way MetaSchedule keys its database (one PrimFunc named ``main``).
    """
    if isinstance(mod, compat.IRModule):
        funcs = [f for _, f in mod.functions_items() if isinstance(f, compat.tir.PrimFunc)]
        if len(funcs) == 1 and "main" in [gv.name_hint for gv in mod.get_global_vars()]:
            return mod
    return workloads.resolve(mod).mod


def _trace_of(obj: Any) -> tuple[Any, Any]:
    """(trace, module-or-None) of a trace-carrying object, without the caller's ``mod``."""
    if isinstance(obj, compat.Trace):
        return obj, None
    if isinstance(obj, compat.Schedule):
        return obj.trace, None
    # msviz objects that remember their workload: a Replay, a records.Trial
    workload_mod = getattr(obj, "workload_mod", None)
    if workload_mod is not None and getattr(obj, "trace", None) is not None:
        return obj.trace, workload_mod
    record = getattr(obj, "record", None)
    if record is not None and hasattr(record, "workload"):
        return record.trace, record.workload.mod
    # a stock TuningRecord (trace + workload) or a MeasureCandidate (sch)
    if hasattr(obj, "trace") and hasattr(obj, "workload") and hasattr(obj.workload, "mod"):
        return obj.trace, obj.workload.mod
    sch = getattr(obj, "sch", None)
    if isinstance(sch, compat.Schedule):
        return sch.trace, None
    raise TypeError(
        "expected a Trace, a Schedule, a msviz Trial or Replay, a TuningRecord or a "
        f"MeasureCandidate, not {type(obj).__name__}"
    )


def target_of(obj: Any, default: Any = "llvm") -> Any:
    """The target ``obj`` was tuned or replayed for: a trial's or a stock record's own target,
    a Replay's; ``default`` for a bare Trace, Schedule or candidate (or a record without one).

    Replaying a trace for another target than its own applies the wrong postprocs (a
    tensorized trace comes back untensorized, a CUDA one unbound), so every replay, edit and
    measurement of a stored trial starts from this.
    """
    target = getattr(obj, "target", None)  # a Replay
    if target is None:
        record = getattr(obj, "record", None)  # a records.Trial
        if record is None and hasattr(obj, "workload") and hasattr(obj, "run_secs"):
            record = obj  # a stock TuningRecord
        target = getattr(record, "target", None) if record is not None else None
    return target if target is not None else default


def resolve_trace(obj: Any, mod: Any = None, *, need_mod: bool = True) -> TraceSource:
    """The trace of ``obj`` and the workload module it applies to.

    Parameters
    ----------
    obj : Trace | Schedule | msviz.records.Trial | Replay | TuningRecord | MeasureCandidate
        What to read the trace from.
    mod : IRModule | PrimFunc | Workload | str, optional
        The workload before scheduling. Needed for a bare Trace or Schedule; overrides the one a
        trial or record carries.
    need_mod : bool
        Raise when no module can be found (default True).

    Returns
    -------
    source : TraceSource
    """
    trace, own_mod = _trace_of(obj)
    if mod is not None:
        own_mod = resolve_mod(mod)
    if own_mod is None and need_mod:
        what = type(obj).__name__
        raise TypeError(
            f"a {what} does not say which workload it schedules: pass mod=<the workload's "
            "IRModule before scheduling> (a Trial, a TuningRecord or a Replay carries its own)"
        )
    return TraceSource(trace, own_mod)


def fresh_schedule(mod: Any, *, seed: int = 1) -> Any:
    """A schedule of ``mod`` for replaying a trace (no debug checks, short error messages)."""
    return compat.Schedule(mod, seed=seed, debug_mask=0, error_render_level="detail")
