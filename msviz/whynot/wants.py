"""What a user may want of a schedule, each checked against MetaSchedule's own conditions and
turned into something to force: a decision edit, or a primitive applied after the replay.

Each resolver adds to a :class:`Plan`: ``edits`` (instruction index -> decision) replayed
into the trace, ``prims`` (functions of the replayed schedule) applied before the postprocs,
and ``blocks``: why MetaSchedule never produces it. A *hard* block means it cannot even be
forced (a loop that does not exist); a soft one is forced anyway, so TVM's primitives and the
postprocs have their say and the forced schedule can be measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from msviz import compat
from msviz.errors import DecisionError
from msviz.trace.replay import check_edit
from msviz.trace.replay_errors import tvm_summary
from msviz.whynot.intrin_match import index_vars

__all__ = ["Block", "Plan", "loops_by_name", "resolve_want", "tvm_text"]

#: ParallelizeVectorizeUnroll's knobs as MetaSchedule's llvm defaults set them.
_PVU_DEFAULTS = {"max_jobs_per_core": 16, "max_vectorize_extent": 64}


class Block(NamedTuple):
    """Why a want is not produced: the rule, primitive or postproc as MetaSchedule names it."""

    blocked_by: str
    reason: str
    hard: bool = False  # cannot be forced at all
    tvm_message: str = ""
    ir: str = ""


@dataclass
class Plan:
    """Everything the wants ask of one start (a design space or a trial's trace)."""

    sites: list
    rules: Any
    target: Any
    edits: dict = field(default_factory=dict)
    prims: list = field(default_factory=list)  # (name, fn(sch) -> None)
    blocks: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def block(self, *args: Any, **kw: Any) -> None:
        self.blocks.append(Block(*args, **kw))


def _pvu(rules: Any, key: str) -> Any:
    for spec in getattr(rules, "schedule_rules", ()):
        if spec.name == "ParallelizeVectorizeUnroll":
            return spec.params.get(key, _PVU_DEFAULTS.get(key))
    return None


def _site_info(site: Any) -> dict:
    return site._asdict()


# -- decision wants ---------------------------------------------------------------------------


def _edit(plan: Plan, site: Any, value: Any, *, rule: str, given: str) -> None:
    """Edit ``site`` to ``value``. A tile whose innermost factor is past the rule's
    ``max_innermost_factor`` is a soft block, forced; any other value ``with_decisions``
    refuses (a factor below 1, the wrong product or length, no such candidate or location) is
    refused here too, before TVM sees it (a zero factor kills the process in TVM).

    Raises
    ------
    DecisionError
        Naming the argument (``given``), the instruction and what it allows.
    """
    info = _site_info(site)
    try:
        plan.edits[site.index] = check_edit(site.index, site.kind, value, info)
        return
    except DecisionError as err:
        sampled = err
    try:
        if site.kind != "SamplePerfectTile" or info.get("max_innermost_factor", -1) < 1:
            raise sampled
        plan.edits[site.index] = check_edit(site.index, site.kind, value,
                                            {**info, "max_innermost_factor": -1})
    except DecisionError as err:
        refused = DecisionError(f"why_not({given}): {err}")
        refused.__dict__.update(err.__dict__)
        raise refused from None
    plan.block(rule, f"MetaSchedule never samples it: {sampled}")


def _tile(plan: Plan, tiles: Any) -> None:
    if not isinstance(tiles, dict) or not tiles:
        raise TypeError(f"tile must be a dict {{loop name: [factors]}}, not {tiles!r}")
    tiled = [s for s in plan.sites if s.kind == "SamplePerfectTile"]
    for loop, factors in tiles.items():
        site = next((s for s in tiled if s.subject == loop), None)
        if site is None:
            names = ", ".join(dict.fromkeys(s.subject for s in tiled)) or "none"
            plan.block("MultiLevelTiling", f"no SamplePerfectTile tiles loop {loop} here "
                       f"(the tiled loops: {names})", hard=True)
            continue
        _edit(plan, site, factors, rule="SamplePerfectTile", given=f"tile={tiles!r}")


def _find_site(plan: Plan, key: Any) -> Any:
    for s in plan.sites:
        if key == s.index or (isinstance(key, str) and key in (f"#{s.index}", s.subject)):
            return s
    return None


def _decision(plan: Plan, want: Any) -> None:
    if not isinstance(want, (tuple, list)) or len(want) != 2:
        raise TypeError(f"decision must be (site, value), e.g. (16, 3), not {want!r}")
    key, value = want
    site = _find_site(plan, key)
    if site is None:
        listed = ", ".join(f"#{s.index} {s.kind} {s.subject}".strip() for s in plan.sites)
        plan.block("decision", f"no decision site {key!r} (sites: {listed or 'none'})",
                   hard=True)
        return
    _edit(plan, site, value, rule=site.kind, given=f"decision={tuple(want)!r}")


def _unroll(plan: Plan, steps: Any) -> None:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise TypeError(f"unroll must be an int >= 0 (max unroll steps), not {steps!r}")
    site = next((s for s in plan.sites if s.kind == "SampleCategorical"
                 and "unroll" in s.subject), None)
    if site is None:
        plan.block("ParallelizeVectorizeUnroll", "no design space samples an unroll step "
                   "(ParallelizeVectorizeUnroll is absent or its unroll_max_steps is empty)",
                   hard=True)
        return
    cands = list(site.candidates)
    if steps in cands:
        plan.edits[site.index] = cands.index(steps)
        return
    key = site.subject.split()[-1]  # "Annotate meta_schedule.unroll_explicit"
    plan.block("ParallelizeVectorizeUnroll",
               f"its unroll_max_steps are {cands}: {steps} is not one of them, so MetaSchedule "
               "never samples it")

    def annotate(sch: Any) -> None:
        root = sch.get_sblock("root")
        sch.unannotate(root, key)  # the sampled step's annotation, replaced
        sch.annotate(root, key, steps)

    plan.prims.append((f"annotate {key}={steps}", annotate))


def _compute_at(plan: Plan, want: Any, prefix: Any) -> None:
    if not isinstance(want, (tuple, list)) or len(want) != 2:
        raise TypeError(f"compute_at must be (block name, loop name), not {want!r}")
    block, loop = want
    site = next((s for s in plan.sites if s.kind == "SampleComputeLocation"
                 and s.subject == block), None)
    if site is None and block not in (names := _block_names(prefix(0))):
        plan.block("compute_at", f"no block {block} in the workload (its blocks: "
                   f"{', '.join(names) or 'none'})", hard=True)
        return
    if site is None:
        plan.block("RandomComputeLocation", f"no SampleComputeLocation decides where block "
                   f"{block} is computed here (AutoInline inlined it, or it is tiled in place "
                   "or not a producer)", hard=True)
        return
    for choice, label in zip(site.choices, site.labels):
        if label.split(" (")[0] == loop:
            plan.edits[site.index] = choice
            return
    valid = ", ".join(site.labels)
    sch = prefix(site.index)
    found = loops_by_name(sch).get(loop)
    reason = (f"loop {loop} is not a place block {block} can be computed at (the valid ones: "
              f"{valid})")
    if found is None:
        plan.block("SampleComputeLocation", reason, hard=True,
                   tvm_message=f"no loop {loop} exists where block {block} is placed")
        return
    extent = int(sch.get(found[0]).extent)
    try:
        sch.compute_at(sch.get_sblock(block), found[0])
    except Exception as err:
        plan.block("SampleComputeLocation", reason, hard=True, tvm_message=tvm_text(err))
        return
    plan.block("SampleComputeLocation", f"{reason}; TVM's compute_at accepts loop {loop} "
               f"(extent {extent}), but SampleComputeLocation never offers it",
               hard=True, ir=_clip(sch.get(found[0]).script()))


def _block_names(sch: Any) -> list[str]:
    """The names of a schedule's blocks (root's descendants), outermost first."""
    out, todo = [], list(sch.get_child_blocks(sch.get_sblock("root")))
    while todo:
        rv = todo.pop(0)
        out.append(sch.get(rv).name_hint)
        todo += list(sch.get_child_blocks(rv))
    return out


# -- loop wants (primitives) -----------------------------------------------------------------


def loops_by_name(sch: Any) -> dict[str, tuple[Any, list[str]]]:
    """Loop name -> (its LoopRV, the names of the loops enclosing it, outermost first)."""
    out: dict[str, tuple[Any, list[str]]] = {}
    todo = list(sch.get_child_blocks(sch.get_sblock("root")))
    while todo:
        block = todo.pop(0)
        loops = list(sch.get_loops(block))
        names = [sch.get(lp).loop_var.name for lp in loops]
        for k, (lp, name) in enumerate(zip(loops, names)):
            out.setdefault(name, (lp, names[:k]))
        todo += list(sch.get_child_blocks(block))
    return out


def _realizes(stmt: Any) -> list:
    tir = compat.tir
    out, todo = [], [stmt]
    while todo:
        node = todo.pop()
        if hasattr(node, "iter_values"):
            out.append(node)
            todo.append(node.block.body)
        elif isinstance(node, tir.stmt.SeqStmt):
            todo += list(node.seq)
        elif hasattr(node, "body"):
            todo.append(node.body)
    return out


def _reduction_of(sch: Any, loop: Any) -> str | None:
    """The block whose reduction axis the loop iterates, or None."""
    stmt = sch.get(loop)
    var = stmt.loop_var.name
    for realize in _realizes(stmt.body):
        for iv, value in zip(realize.block.iter_vars, realize.iter_values):
            if int(iv.iter_type) == 2 and var in index_vars(value, set()):
                return f"{realize.block.name_hint} (axis {iv.var.name})"
    return None


def _inner_loops(stmt: Any) -> list[str]:
    tir = compat.tir
    out, todo = [], [stmt.body]
    while todo:
        node = todo.pop(0)
        if isinstance(node, tir.stmt.For):
            out.append(node.loop_var.name)
        if isinstance(node, tir.stmt.SeqStmt):
            todo += list(node.seq)
        elif hasattr(node, "iter_values"):
            todo.append(node.block.body)
        elif hasattr(node, "body"):
            todo.append(node.body)
    return out


def _loop_want(plan: Plan, kind: str, name: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} must name a loop (a str), not {name!r}")
    cores = int(plan.target.attrs.get("num-cores", 1)) if plan.target is not None else 1

    def force(sch: Any) -> None:
        found = loops_by_name(sch).get(name)
        if found is None:
            names = ", ".join(loops_by_name(sch))
            raise _Hard(Block(kind, f"no loop {name} in this schedule (its loops: {names})",
                              hard=True))
        loop, outer = found
        stmt = sch.get(loop)
        ir = _clip(stmt.script())
        reduction = _reduction_of(sch, loop)
        verb = "vectorizes" if kind == "vectorize" else "parallelizes"
        if reduction:
            plan.block("RewriteParallelVectorizeUnroll", f"loop {name} iterates the reduction "
                       f"axis of block {reduction}; MetaSchedule {verb} only data-parallel "
                       "loops", ir=ir)
        if kind == "vectorize":
            inner = _inner_loops(stmt)
            limit = _pvu(plan.rules, "max_vectorize_extent")
            if inner:
                plan.block("RewriteParallelVectorizeUnroll", f"loop {name} is not the innermost"
                           f" loop: {', '.join(inner)} lie inside it; MetaSchedule vectorizes "
                           "only the innermost loops of a block", ir=ir)
            elif limit is not None and int(stmt.extent) > int(limit):
                plan.block("ParallelizeVectorizeUnroll", f"loop {name} has extent "
                           f"{int(stmt.extent)} > max_vectorize_extent {limit}", ir=ir)
        else:
            jobs = _pvu(plan.rules, "max_jobs_per_core")
            extents = [int(sch.get(loops_by_name(sch)[o][0]).extent) for o in outer]
            total = int(stmt.extent) * _prod(extents)
            if jobs is not None and total > int(jobs) * cores and outer:
                plan.block("RewriteParallelVectorizeUnroll", f"MetaSchedule parallelizes the "
                           f"outermost loops fused: {', '.join([*outer, name])} multiply to "
                           f"{total} > max_jobs_per_core {jobs} x {cores} core(s) = "
                           f"{int(jobs) * cores}", ir=ir)
        try:
            getattr(sch, kind)(loop)
        except Exception as err:
            raise _Hard(Block(kind, f"TVM's {kind} primitive refuses loop {name}", hard=True,
                              tvm_message=tvm_text(err), ir=ir)) from None

    plan.prims.append((f"{kind}({name})", force))


def tvm_text(err: BaseException) -> str:
    """TVM's message, one line (:func:`~msviz.trace.replay_errors.tvm_summary`)."""
    text = tvm_summary(err).replace("Error message: ", "")
    return re.sub(r"^(\w+Error): \1: ", r"\1: ", text)


class _Hard(Exception):
    """A hard block found while forcing (raised from a primitive)."""

    def __init__(self, block: Block) -> None:
        super().__init__(block.reason)
        self.block = block


def _prod(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def _clip(text: str, lines: int = 40) -> str:
    rows = text.splitlines()
    return "\n".join(rows[:lines] + ([f"... ({len(rows) - lines} more lines)"]
                                     if len(rows) > lines else []))


def resolve_want(plan: Plan, kind: str, value: Any, *, prefix: Any) -> None:
    """Add one want (not ``tensorize``: see :mod:`msviz.whynot.answer`) to ``plan``.

    ``prefix(k)`` is a schedule with the first ``k`` instructions of the start replayed.
    """
    if kind == "tile":
        _tile(plan, value)
    elif kind == "decision":
        _decision(plan, value)
    elif kind == "unroll":
        _unroll(plan, value)
    elif kind == "compute_at":
        _compute_at(plan, value, prefix)
    elif kind == "parallel":
        _loop_want(plan, "parallel", value)
    elif kind == "vectorize" and value is not True:
        _loop_want(plan, "vectorize", value)
