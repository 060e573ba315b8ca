"""Why not? A transformation the user expected, forced, and what blocks it named.

``why_not(workload, tensorize="dot_16x4_vnni")`` (or ``tile=``, ``vectorize=``,
``parallel=``, ``unroll=``, ``compute_at=``, ``decision=``) starts from the workload's design
spaces (MetaSchedule's ``PostOrderApply`` under the target's rules) or from a trial's trace,
checks what is wanted against the conditions of the rule that would produce it, forces it (a
decision edit or a schedule primitive), replays, then runs the postprocs one by one as
MetaSchedule does (the target's verifiers, e.g. ``VerifyGPUCode`` on CUDA, are postprocs too).
The answer is a :class:`WhyNot`: possible or not, what blocks it (as MetaSchedule names it), the
reason in words with the numbers and TVM's own message, the IR fragment, and the forced
schedule.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from msviz import compat
from msviz.space_generator import RuleSet
from msviz.space_generator.intrinsics import (
    AUTO_TENSORIZE,
    INTRIN_RULE,
    tensorize_specs,
    unusable,
)
from msviz.space_generator.rules import RuleSpec
from msviz.trace.replay import apply_trace, initialised_postprocs
from msviz.trace.rows import decision_value
from msviz.trace.sites import decision_sites
from msviz.trace.source import fresh_schedule, resolve_trace
from msviz.whynot.intrin_match import block_compute, compare_with_intrinsic, find_block
from msviz.whynot.wants import Block, Plan, _clip, _Hard, resolve_want, tvm_text
from msviz.workloads import resolve

__all__ = ["WANTS", "WhyNot", "why_not"]

#: What can be asked for, in the order they are forced.
WANTS = ("tensorize", "tile", "decision", "unroll", "compute_at", "parallel", "vectorize")


class WhyNot(NamedTuple):
    """The answer of :func:`why_not`.

    Attributes
    ----------
    want : dict
        What was asked for.
    possible : bool
        Whether MetaSchedule produces it (a schedule of the search space has it and passes
        every postproc).
    blocked_by : str
        The schedule rule, sampling instruction, primitive or postproc that stops it, as
        MetaSchedule names it ("" when possible).
    reason : str
        Why, in words with the numbers; TVM's own message last.
    tvm_message : str
        TVM's message when forcing it (a primitive's ScheduleError, a repaired decision).
    ir : str
        The IR fragment it failed on (a block, a loop, or the module a postproc rejected).
    schedule : str
        The forced schedule as TVMScript, when it passed every postproc ("" otherwise); it can
        be forced even where MetaSchedule never samples it.
    differences : tuple of str
        For ``tensorize``: each way the block differs from the intrinsic's description.
    steps : tuple of (str, str)
        What was run, in order, and how it went (``"ok"``, ``"failed"``, ``"not run"``).
    space : int | None
        The design space it was forced in (None: the trial's trace).
    forced : Schedule | None
        The forced schedule (for measuring).
    workload_mod, target : IRModule, Target
        What it schedules, for whom.
    """

    want: dict
    possible: bool
    blocked_by: str
    reason: str
    tvm_message: str = ""
    ir: str = ""
    schedule: str = ""
    differences: tuple = ()
    steps: tuple = ()
    space: int | None = None
    forced: Any = None
    workload_mod: Any = None
    target: Any = None


def _rules_for(rules: Any, target: Any, intrin: str | None) -> RuleSet:
    rules = (rules or RuleSet.default(target)).copy()
    if intrin is not None and intrin not in rules.intrinsics():
        (rule, rparams), (post, pparams) = tensorize_specs(intrin)
        names = [s.name for s in rules.schedule_rules]
        at = names.index("MultiLevelTiling") if "MultiLevelTiling" in names else len(names)
        rules.schedule_rules.insert(at, RuleSpec(rule, rparams))
        if post not in [s.name for s in rules.postprocs]:
            rules.postprocs.append(RuleSpec(post, pparams))
    return rules


def _starts(workload: Any, target: Any, rules: RuleSet, intrin: str | None) -> tuple:
    """(workload mod, [(space index | None, trace)]): a trial's trace, or the design spaces
    (those annotated for ``intrin`` first)."""
    if not isinstance(workload, (str, compat.tir.PrimFunc)) and (
            hasattr(workload, "trace") or hasattr(workload, "record")):
        trace, mod = resolve_trace(workload)
        uses = AUTO_TENSORIZE in str(trace) and (intrin or "") in str(trace)
        if intrin is None or uses:
            return mod, [(None, trace)]
        workload = mod
    if hasattr(workload, "workload") and not isinstance(workload, str):  # a model's task
        workload = workload.workload
    mod = resolve(workload).mod
    compat.register_tensor_intrins()  # before the TuneContext imports them, slowly
    ctx = compat.ms.TuneContext(mod=mod, target=target, space_generator=rules.space_generator(
        target), num_threads=1, rand_state=1)
    spaces = [(k, sch.trace) for k, sch in enumerate(ctx.generate_design_space())]
    if intrin is not None:
        spaces.sort(key=lambda s: not (AUTO_TENSORIZE in str(s[1]) and intrin in str(s[1])))
    return mod, spaces


def _prefix(mod: Any, trace: Any) -> Any:
    def replay(k: int) -> Any:
        insts = list(trace.insts)[:k]
        decisions = {i: trace.get_decision(i) for i in insts
                     if trace.get_decision(i) is not None}
        sch = fresh_schedule(mod)
        compat.Trace(insts, decisions).apply_to_schedule(sch, remove_postproc=True)
        return sch
    return replay


# -- tensorize --------------------------------------------------------------------------------


def _tensorize_block(plan: Plan, mod: Any, intrin: str) -> tuple:
    """Compare every compute block with the intrinsic; a hard block naming the differences
    and TVM's message from forcing ``split``/``reorder``/``tensorize`` on the closest block."""
    found = compat.tensor_intrin(intrin)
    desc = block_compute(find_block(found.desc))
    sch = fresh_schedule(mod)
    best: tuple | None = None
    for rv in loops_and_blocks(sch):
        comp = block_compute(sch.get(rv))
        diffs = compare_with_intrinsic(comp, desc, intrin)
        score = sum(d.blocks for d in diffs)
        if best is None or score < best[0]:
            best = (score, rv, comp, diffs)
    if best is None:
        plan.block(INTRIN_RULE, "the workload has no compute block", hard=True)
        return ()
    _, rv, comp, diffs = best
    texts = tuple(d.text for d in diffs)
    stopping = [d.text for d in diffs if d.blocks] or ["no block of the workload was tiled "
                                                      "for it"]
    plan.block(INTRIN_RULE, f"no design space tensorizes block {comp.name} with {intrin}: "
               + "; ".join(stopping), hard=True, tvm_message=_force_tensorize(sch, rv, comp,
                                                                               desc, intrin),
               ir=_clip(comp.script))
    return texts


def loops_and_blocks(sch: Any) -> list:
    """Every compute block of a schedule (blocks whose body is one store)."""
    out, todo = [], list(sch.get_child_blocks(sch.get_sblock("root")))
    while todo:
        rv = todo.pop(0)
        if isinstance(sch.get(rv).body, compat.tir.stmt.BufferStore):
            out.append(rv)
        todo += list(sch.get_child_blocks(rv))
    return out


def _force_tensorize(sch: Any, rv: Any, comp: Any, desc: Any, intrin: str) -> str:
    """TVM's own message: split the matched loops by the description's extents, move them
    innermost, ``tensorize`` (what MultiLevelTilingWithIntrin would do, without its checks)."""
    loops = dict(zip((a.name for a in comp.axes), sch.get_loops(rv)))
    outer, inner = [], []
    for d in desc.axes:
        match = [a for a in comp.axes if a.kind == d.kind and a.roles == d.roles]
        if not match or match[-1].name not in loops:
            return ""
        o, i = sch.split(loops.pop(match[-1].name), [None, d.extent])
        outer.append(o)
        inner.append(i)
    try:
        sch.reorder(*loops.values(), *outer, *inner)
        sch.tensorize(inner[0], intrin)
    except Exception as err:
        return tvm_text(err)
    return ""


# -- forcing ----------------------------------------------------------------------------------


def _force(mod: Any, trace: Any, plan: Plan, postprocs: list) -> tuple:
    """Replay with the edits, apply the primitives, run the postprocs one by one.
    Returns (schedule or None, steps, failing Block or None)."""
    steps: list = []
    repaired: list[str] = []
    index_of = {inst: i for i, inst in enumerate(trace.insts)}

    def provider(inst: Any, inputs: Any, attrs: Any, decision: Any) -> Any:
        i = index_of.get(inst)
        return plan.edits[i] if i in plan.edits else decision

    def after(sch: Any) -> None:
        steps.append(("trace replay", "ok"))
        insts = list(sch.trace.insts)
        for i, value in plan.edits.items():
            got = decision_value(sch.trace.get_decision(insts[i]))
            want = tuple(value) if isinstance(value, list) else value
            if got != want:
                shown = list(want) if isinstance(want, tuple) else want
                got = list(got) if isinstance(got, tuple) else got
                repaired.append(f"TVM replaced the decision {shown} of instruction {i} "
                                f"({insts[i].kind.name}) with {got}")
        for name, fn in plan.prims:
            try:
                fn(sch)
            except _Hard:
                steps.append((name, "failed"))
                raise
            steps.append((name, "ok"))

    sch = fresh_schedule(mod)
    try:
        outcome = apply_trace(mod, trace, postprocs, decision_provider=provider,
                              after_replay=after, schedule=sch)
    except _Hard as hard:
        return None, steps, hard.block, repaired
    if outcome.failed_step == "trace replay":
        steps.append(("trace replay", "failed"))
        return None, steps, Block("trace replay", "the forced trace does not replay",
                                  hard=True, tvm_message=tvm_text(outcome.error)), repaired
    for name, _ in postprocs:
        if outcome.schedule is not None:
            steps.append((name, "ok"))
        elif name != outcome.failed_step:
            steps.append((name, "not run" if steps[-1][1] != "ok" else "ok"))
        else:
            steps.append((name, "failed"))
    if outcome.schedule is None:
        name = outcome.failed_step
        why = tvm_text(outcome.error) if outcome.error is not None else ""
        text = f"postproc {name} rejects the forced schedule" + (
            "" if why else " (it returned False: the schedule breaks its conditions)")
        if name == "VerifyGPUCode":
            text += _gpu_threads(sch.mod.script(), plan.target)
        return None, steps, Block(name, text, tvm_message=why,
                                  ir=_clip(sch.mod.script(), 80)), repaired
    return outcome.schedule, steps, None, repaired


def _gpu_threads(script: str, target: Any) -> str:
    """The threads per block of a scheduled kernel against the target's limit, in words."""
    extents: dict[str, int] = {}
    for extent, axis in re.findall(r'T\.thread_binding\((\d+), thread="(threadIdx\.\w)"', script):
        extents[axis] = max(extents.get(axis, 1), int(extent))
    limit = target.attrs.get("max_threads_per_block") if target is not None else None
    if not extents or limit is None:
        return ""
    total = 1
    for n in extents.values():
        total *= n
    shown = " x ".join(f"{a} {n}" for a, n in sorted(extents.items()))
    relation = ">" if total > int(limit) else "<="
    return f": {shown} = {total} threads per block {relation} max_threads_per_block {int(limit)}"


def _has_vectorized(mod: Any) -> bool:
    return "T.vectorized(" in mod.script()


def _check_result(sch: Any, want: dict, rules: RuleSet) -> Block | None:
    if "tensorize" in want and not any(str(i.kind.name) == "Tensorize" for i in sch.trace.insts):
        return Block("RewriteTensorize", f"no block was tensorized with {want['tensorize']} "
                     "after the postprocs", ir=_clip(sch.mod.script(), 80))
    if want.get("vectorize") is True and not _has_vectorized(sch.mod):
        limit = next((s.params.get("max_vectorize_extent") for s in rules.schedule_rules
                      if s.name == "ParallelizeVectorizeUnroll"), None)
        why = ("no ParallelizeVectorizeUnroll rule annotates meta_schedule.vectorize"
               if limit is None else
               f"the innermost loops of every block are reduction loops or longer than "
               f"max_vectorize_extent {limit}")
        return Block("RewriteParallelVectorizeUnroll", f"no loop is vectorized: {why}",
                     ir=_clip(sch.mod.script(), 80))
    return None


def _answer(want: dict, mod: Any, target: Any, space: Any, plan: Plan, *, diffs: tuple = (),
            sch: Any = None, steps: tuple = (), failed: Block | None = None,
            repaired: tuple = ()) -> WhyNot:
    blocks = [b for b in plan.blocks] + ([failed] if failed is not None else [])
    tvm = "; ".join(m for m in [*(b.tvm_message for b in blocks), *repaired] if m)
    notes = list(diffs) if not blocks else []
    if not blocks:
        reason = "MetaSchedule produces it: it is in the search space and passes every postproc"
        if notes:
            reason += ("; but its result will be wrong: " + "; ".join(notes)
                       + " (Measure checks the result)")
        return WhyNot(want, True, "", reason, tvm, "", sch.mod.script(), diffs, steps,
                      space, sch, mod, target)
    first = blocks[0]
    reason = "; ".join(dict.fromkeys(b.reason for b in blocks))
    if tvm:
        reason += f". TVM: {tvm}"
    if sch is not None:
        reason += ". Forced anyway, it passes every postproc (its schedule can be measured)"
    ir = next((b.ir for b in blocks if b.ir), "")
    return WhyNot(want, False, first.blocked_by, reason, tvm, ir,
                  sch.mod.script() if sch is not None else "", diffs, steps, space, sch, mod,
                  target)


def why_not(workload: Any, *, target: Any = "llvm", rules: Any = None, **want: Any) -> WhyNot:
    """Force a transformation MetaSchedule did not produce and say what blocks it.

    Parameters
    ----------
    workload : str | PrimFunc | IRModule | Workload | ModelTask | Trial
        A catalogue name (``"I8DP-0"``), a program, a task of a model (``session.tasks[i]``),
        or a trial (its trace is the start; otherwise the design spaces under ``rules`` are).
    target : str | dict | Target
        The target (``"llvm"``: this machine's CPU).
    rules : RuleSet, optional
        Default: the target's rules. ``tensorize`` adds the tiling rule and postproc for its
        intrinsic when the rules lack them.
    **want
        One or several of ``tensorize="<intrinsic>"``, ``tile={"<loop>": [factors]}``,
        ``vectorize="<loop>" | True``, ``parallel="<loop>"``, ``unroll=<max steps>``,
        ``compute_at=("<block>", "<loop>")``, ``decision=(<site index or subject>, value)``.

    Returns
    -------
    answer : WhyNot

    Raises
    ------
    TypeError
        For an unknown or missing want, or a want of the wrong form.
    DecisionError
        For a ``tile`` or ``decision`` value ``with_decisions`` refuses (a factor below 1, the
        wrong product or length, no such candidate), before TVM sees it; only an innermost
        factor past ``max_innermost_factor`` is forced (MetaSchedule never samples it).
    """
    unknown = sorted(set(want) - set(WANTS))
    if unknown or not want:
        raise TypeError(f"why_not() wants one or more of {', '.join(WANTS)}; got "
                        f"{', '.join(unknown) if unknown else 'none'}")
    if target == "llvm" and hasattr(workload, "record"):
        target = workload.record.target
    target = compat.make_target(target)
    intrin = want.get("tensorize")
    if intrin is not None and not isinstance(intrin, str):
        raise TypeError(f"tensorize must name a tensor intrinsic, not {intrin!r}")
    rules = _rules_for(rules, target, intrin)
    empty = Plan([], rules, target)
    if intrin is not None and (why := unusable(intrin, target)) is not None:
        empty.block(INTRIN_RULE, why.split(": tuning")[0], hard=True)
        return _answer(want, None, target, None, empty)
    mod, starts = _starts(workload, target, rules, intrin)
    postprocs = initialised_postprocs(rules.build(target)[1], mod, target)
    answers = []
    for space, trace in starts:
        plan = Plan(decision_sites(trace, mod), rules, target)
        diffs: tuple = ()
        if intrin is not None and not (AUTO_TENSORIZE in str(trace) and intrin in str(trace)):
            diffs = _tensorize_block(plan, mod, intrin)
        elif intrin is not None:
            found = compat.tensor_intrin(intrin)
            desc = block_compute(find_block(found.desc))
            sch0 = fresh_schedule(mod)
            diffs = tuple(d.text for rv in loops_and_blocks(sch0) for d in compare_with_intrinsic(
                block_compute(sch0.get(rv)), desc, intrin) if not d.blocks)
        for kind in WANTS[1:]:
            if kind in want:
                resolve_want(plan, kind, want[kind], prefix=_prefix(mod, trace))
        if any(b.hard for b in plan.blocks):
            answers.append(_answer(want, mod, target, space, plan, diffs=diffs))
        else:
            sch, steps, failed, repaired = _force(mod, trace, plan, postprocs)
            if sch is not None:
                failed = _check_result(sch, want, rules)
            answers.append(_answer(want, mod, target, space, plan, diffs=diffs,
                                   sch=sch if failed is None else None, steps=tuple(steps),
                                   failed=failed, repaired=tuple(repaired)))
        if answers[-1].possible:
            return answers[-1]
    return next((a for a in answers if a.schedule), answers[0])
