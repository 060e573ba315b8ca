"""Edit and replay: change decisions of a trace, replay it, and postprocess as MetaSchedule does.

MetaSchedule materialises a candidate by applying its trace without the postproc part to a fresh
schedule of the workload, entering the postproc stage, and running each postprocessor in turn
(``ThreadedTraceApply`` in C++). :func:`with_decisions` does the same with edited decisions.

TVM does not reject every bad decision: a tile whose factors do not multiply to the extent is
silently "repaired" and an invalid compute location is snapped to a valid one. msviz checks each
edited decision against the site's valid choices first, and turns every failure into a
:class:`msviz.DecisionError` that names the instruction, its kind, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from msviz import compat
from msviz.errors import DecisionError
from msviz.trace.edits import check_edit, normalize_edits
from msviz.trace.replay_errors import decision_error, replay_error, tvm_summary
from msviz.trace.replay_stored import check_intrinsics, check_stored, own_postprocs, replayed_what
from msviz.trace.rows import decision_value
from msviz.trace.sampling import site_info
from msviz.trace.source import fresh_schedule, resolve_trace, target_of

__all__ = [
    "Replay",
    "ReplayOutcome",
    "apply_trace",
    "check_edit",
    "default_postprocs",
    "replay_error",
    "with_decisions",
]


@dataclass
class Replay:
    """A trace replayed (with edited decisions) and postprocessed.

    Attributes
    ----------
    schedule : tvm.s_tir.Schedule
        The replayed schedule, postprocessors applied.
    trace : tvm.s_tir.schedule.Trace
        Its full trace: the replayed instructions, ``EnterPostproc``, then what the
        postprocessors added.
    workload_mod : tvm.IRModule
        The workload before scheduling (so a Replay can be edited again).
    target : tvm.target.Target
        The target whose postprocessors were applied.
    edits : dict
        Instruction index -> the decision given for it.
    postprocs : list of str
        The postprocessors applied, in order.
    made_with : list of Postproc | None
        The postprocessors applied when they are not the target's defaults (those of the
        trial replayed, or given); None when they are.
    """

    schedule: Any
    trace: Any
    workload_mod: Any = field(repr=False)
    target: Any = field(repr=False)
    edits: dict = field(default_factory=dict)
    postprocs: list = field(default_factory=list)
    made_with: list | None = field(default=None, repr=False)

    def own_postprocs(self) -> list | None:
        """The postprocessors this replay was made with (None: its target's defaults), so
        editing it again postprocesses as it did."""
        return self.made_with

    @property
    def mod(self) -> Any:
        """The scheduled IRModule."""
        return self.schedule.mod

    def script(self) -> str:
        """The scheduled module as TVMScript."""
        return self.mod.script()


# -- postprocessors --------------------------------------------------------------------------

_POSTPROC_CACHE: dict[tuple, list] = {}


def default_postprocs(mod: Any, target: Any) -> list[tuple[str, Any]]:
    """MetaSchedule's default postprocessors for ``target``, initialised for ``mod``.

    They are the ones stock's ``TuneContext`` picks from the whole target
    (:func:`msviz.compat.default_rules`): ``RewriteTensorize`` on an AVX-512 or VNNI CPU, the
    tensor-core postprocs on CUDA ``sm_75`` and newer, ``VerifyVTCMLimit`` on Hexagon. Each is
    initialised with a ``TuneContext`` as the tuner does (the first TuneContext in a process
    costs ~15 s of imports). Results are cached per workload and target.

    Returns
    -------
    postprocs : list of (name, Postproc)
    """
    target = compat.make_target(target)
    key = (compat.structural_hash(mod), str(target), str(target.host))
    if key not in _POSTPROC_CACHE:
        _POSTPROC_CACHE[key] = initialised_postprocs(
            compat.default_rules(target).postprocs, mod, target)
    return _POSTPROC_CACHE[key]


def initialised_postprocs(postprocs: list, mod: Any, target: Any) -> list[tuple[str, Any]]:
    """Clones of ``postprocs`` with their names, initialised with a TuneContext of ``mod``."""
    ms = compat.ms
    names = [type(p).__name__ for p in postprocs]
    space = ms.space_generator.PostOrderApply(
        sch_rules=[], postprocs=[p.clone() for p in postprocs], mutator_probs={}
    )
    ctx = ms.TuneContext(mod=mod, target=compat.make_target(target), space_generator=space,
                         task_name="msviz-replay", num_threads=1)
    return list(zip(names, ctx.space_generator.postprocs))


def _resolve_postprocs(postprocs: Any, mod: Any, target: Any,
                       own: list | None = None) -> list[tuple[str, Any]]:
    if postprocs is None or postprocs == "default":
        if own is not None:  # those the trial was made with, not the target's defaults
            return initialised_postprocs(own, mod, target)
        return default_postprocs(mod, target)
    if postprocs is False:
        return []
    if isinstance(postprocs, str):
        return initialised_postprocs(compat.ms.Postproc.create(postprocs), mod, target)
    space = getattr(postprocs, "space_generator", postprocs)  # a TuneContext or SpaceGenerator
    if hasattr(space, "postprocs") and not isinstance(postprocs, (list, tuple)):
        return initialised_postprocs(list(space.postprocs), mod, target)
    return initialised_postprocs(list(postprocs), mod, target)


# -- replay plus postprocs (shared with the engine's search) ----------------------------------


@dataclass(frozen=True)
class ReplayOutcome:
    """What :func:`apply_trace` made of a trace.

    Attributes
    ----------
    schedule : Schedule | None
        The replayed schedule with every postproc applied; None when a step failed.
    failed_step : str | None
        ``"trace replay"`` when replaying the trace failed, else the class name of the
        postproc that rejected (or raised on) the schedule; None on success.
    error : BaseException | None
        The exception replay or the postproc raised (None when a postproc returned False).
    """

    schedule: Any
    failed_step: str | None = None
    error: BaseException | None = None


def apply_trace(
    mod: Any,
    trace: Any,
    postprocs: Any,
    *,
    seed: int = 1,
    decision_provider: Any = None,
    after_replay: Any = None,
    schedule: Any = None,
) -> ReplayOutcome:
    """Replay ``trace`` on a fresh schedule of ``mod``, then apply the postprocs in order.

    This is MetaSchedule's ``ThreadedTraceApply::Apply`` (used by its search strategies):
    the trace without its postproc part, ``EnterPostproc``, then each postproc. It never
    raises for a failing step: the outcome names the step.

    Parameters
    ----------
    mod : IRModule
        The workload before scheduling.
    trace : Trace
        What to replay (instructions after ``EnterPostproc`` are dropped).
    postprocs : sequence of Postproc or of (name, Postproc)
        Initialised postprocs, applied in order.
    seed : int
        Seed of the fresh schedule (decisions the trace lacks are sampled from it).
    decision_provider : callable, optional
        Passed to ``Trace.apply_to_schedule`` (to change decisions while replaying).
    after_replay : callable, optional
        ``after_replay(sch)`` runs between replay and postprocs; what it raises propagates.
    schedule : Schedule, optional
        A fresh schedule of ``mod`` to replay into (default: a new one seeded with ``seed``,
        no debug checks, no error rendering).

    Returns
    -------
    outcome : ReplayOutcome
    """
    named = [p if isinstance(p, tuple) else (type(p).__name__, p) for p in postprocs]
    compat.register_intrins_for(trace)
    try:
        sch = schedule if schedule is not None else compat.Schedule(
            mod, seed=seed, debug_mask=0, error_render_level="none")
        if decision_provider is None:
            trace.apply_to_schedule(sch, remove_postproc=True)
        else:
            trace.apply_to_schedule(sch, remove_postproc=True,
                                    decision_provider=decision_provider)
    except Exception as err:
        return ReplayOutcome(None, "trace replay", err)
    if after_replay is not None:
        after_replay(sch)
    sch.enter_postproc()
    for name, postproc in named:
        try:
            ok = postproc.apply(sch)
        except Exception as err:
            return ReplayOutcome(None, name, err)
        if not ok:
            return ReplayOutcome(None, name, None)
    return ReplayOutcome(sch)


# -- replay ----------------------------------------------------------------------------------


class _Abort(Exception):
    """Stops a replay from inside the decision provider."""


def with_decisions(
    obj: Any,
    decisions: Any = None,
    *,
    mod: Any = None,
    target: Any = None,
    postprocs: Any = "default",
    seed: int = 1,
) -> Replay:
    """Replay a trace with some decisions changed, then postprocess it as MetaSchedule does.

    Parameters
    ----------
    obj : Trace | Schedule | msviz.records.Trial | Replay | TuningRecord | MeasureCandidate
        The trace to replay.
    decisions : dict, optional
        Instruction index (or :class:`DecisionSite`) -> new decision: tile factors for
        ``SamplePerfectTile``, a candidate index for ``SampleCategorical``, a loop position
        (-1 root, -2 inline) for ``SampleComputeLocation``. Empty: replay as recorded.
    mod : IRModule | PrimFunc | Workload | str, optional
        The workload before scheduling; required for a bare Trace or Schedule.
    target : str | dict | Target, optional
        Whose postprocessors to apply. Default: the trial's (or record's, or Replay's) own
        target, as stored; ``"llvm"`` (this machine's CPU) for a bare Trace or Schedule.
    postprocs : "default" | str | list of Postproc | TuneContext | SpaceGenerator | False
        The postprocessors: ``"default"`` are those the trial (or Replay) was made with, on
        its own target (an msviz run's rules, where they differ from the target's defaults),
        else the target's defaults; or those of a kind (``"cuda"``), an explicit list, those
        of a space generator, or none (False).
    seed : int
        Seed of the fresh schedule (only matters for decisions the trace lacks).

    Returns
    -------
    replay : Replay
        ``.schedule``, ``.mod``, ``.trace``.

    Raises
    ------
    msviz.DecisionError
        For an invalid decision, an index out of range, an edit that makes a later
        instruction fail, or a postprocessor that rejects the result (named in the message).
    msviz.ReplayError
        When the replay cannot give the stored module here: a tensor intrinsic the trace
        needs is not registered in this TVM, or an unedited replay of a stored trial on its
        own target gives another module than the stored one (postprocessors other than those
        it was made with). Both name the target.
    """
    trace, base = resolve_trace(obj, mod)
    edits = normalize_edits(trace, decisions)
    own_target = target_of(obj, None)
    target = compat.make_target(target_of(obj) if target is None else target)
    own = own_target is not None and (target is own_target or compat.structural_equal(
        target, compat.make_target(own_target)))  # replayed for the target it was made for
    index_of = {inst: i for i, inst in enumerate(trace.insts)}
    pending: list[DecisionError] = []
    given: dict[int, Any] = {}
    sch = fresh_schedule(base, seed=seed)

    def provider(inst: Any, inputs: Any, attrs: Any, decision: Any) -> Any:
        i = index_of.get(inst)
        if i not in edits:
            return decision
        kind = inst.kind.name
        try:
            given[i] = check_edit(i, kind, edits[i], site_info(sch, kind, inputs, attrs))
        except DecisionError as err:
            pending.append(err)
            raise _Abort from None
        return given[i]

    def check_kept(replayed: Any) -> None:
        new_insts = list(replayed.trace.insts)
        for i, value in given.items():  # TVM must have kept what was checked, not "repaired" it
            got = decision_value(replayed.trace.get_decision(new_insts[i]))
            want = tuple(value) if isinstance(value, list) else value
            if got != want:
                raise decision_error(i, new_insts[i].kind.name, edits[i], f"{want}",
                                     f"TVM replaced the decision with {got}")

    made_with = own_postprocs(obj) if own else None
    procs = _resolve_postprocs(postprocs, base, target, made_with)
    what = replayed_what(obj)
    compat.register_intrins_for(trace)
    check_intrinsics(trace, [n for n, _ in procs], target, what)
    outcome = apply_trace(base, trace, procs, decision_provider=provider,
                          after_replay=check_kept, schedule=sch)
    if outcome.failed_step == "trace replay":
        if pending:
            raise pending[0] from None
        raise replay_error(trace, base, {i: given.get(i, v) for i, v in edits.items()},
                           outcome.error) from None
    if outcome.schedule is None:
        name = outcome.failed_step
        why = f": {tvm_summary(outcome.error)}" if outcome.error is not None else ""
        err = DecisionError(
            f"postproc {name} rejected the schedule{why} (edited decisions: "
            f"{_fmt_edits(edits)}). Allowed: decisions whose schedule passes every "
            f"postproc ({', '.join(n for n, _ in procs)})"
        )
        err.index, err.kind, err.value, err.postproc = None, "", dict(edits), name
        err.allowed = "decisions whose schedule passes every postproc"
        raise err
    applied = [n for n, _ in procs]
    if not edits and own and mod is None and (postprocs is None or postprocs == "default") \
            and any(inst.kind.name == "EnterPostproc" for inst in trace.insts):
        check_stored(obj, trace, base, sch, applied, target, what)  # never another module
    if postprocs is not None and postprocs != "default":
        made_with = [p for _, p in procs]
    return Replay(schedule=sch, trace=sch.trace, workload_mod=base, target=target,
                  edits=dict(edits), postprocs=applied, made_with=made_with)


def _fmt_edits(edits: dict) -> str:
    if not edits:
        return "none"
    return ", ".join(f"{i}: {list(v) if isinstance(v, tuple) else v}" for i, v in edits.items())
