"""Design spaces and trial decisions as plain data, read from TVM below the views.

:func:`generate_design_spaces` runs the schedule rules on a workload; :func:`trial_decisions`
reads the decisions of a run's fastest trials from their traces; :func:`space_of` finds the
design space a trace was sampled from. The views turn these into infos without touching TVM.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import pandas as pd

__all__ = [
    "DesignSpace", "design_spaces_and_warnings", "generate_design_spaces", "space_key",
    "space_of", "trial_decisions",
]

_DECISION = re.compile(r",? ?decision=.*\)$")
_PARALLEL = re.compile(r'(ann_key="meta_schedule\.parallel", ann_val=)\d+')


class DesignSpace(NamedTuple):
    """One design space the rules produced, as plain data."""

    index: int
    trace: tuple[str, ...]  # its trace as Python lines (postprocs removed)
    sites: tuple[tuple[int, str, int], ...]  # (instruction index, kind, valid choice count)
    script: str  # its IRModule (with the space's sampled decisions) as TVMScript


def generate_design_spaces(mod: Any, target: Any = "llvm", rules: Any = None
                           ) -> list[DesignSpace]:
    """The design spaces of ``mod`` under ``rules`` (see :func:`design_spaces_and_warnings`)."""
    return design_spaces_and_warnings(mod, target, rules)[0]


def design_spaces_and_warnings(mod: Any, target: Any = "llvm", rules: Any = None
                               ) -> tuple[list[DesignSpace], list[str]]:
    """The design spaces of ``mod`` under ``rules`` (MetaSchedule's PostOrderApply).

    Parameters
    ----------
    mod : IRModule | Workload | str
        The workload.
    target : str | Target
        Target of the rules.
    rules : RuleSet, optional
        Schedule rules, postprocs and mutators (default: the target's defaults).

    Returns
    -------
    spaces, warnings : list of DesignSpace, list of str
        The warnings say why a tensor intrinsic the rules name was not used (it does not exist,
        the target lacks its instructions, or no block of the workload matches it), as a
        session's ``warning`` events do.
    """
    from msviz import compat
    from msviz.engine.rules import RuleSet
    from msviz.trace.sites import decision_sites
    from msviz.workloads import resolve

    workload = resolve(mod)
    target = compat.make_target(target)
    from msviz.engine.intrinsics import untensorized_int8, unused

    rules = rules or RuleSet.default(target)
    ctx = compat.ms.TuneContext(mod=workload.mod, target=target,
                                space_generator=rules.space_generator(target), num_threads=1)
    schedules = list(ctx.generate_design_space())
    skipped = list(rules.skipped)
    offered = [i for i in rules.intrinsics() if not any(repr(i) in m for m in skipped)]
    spaces = [
        DesignSpace(
            k, tuple(sch.trace.as_python(remove_postproc=True)),
            tuple((s.index, s.kind, s.count) for s in decision_sites(sch, workload.mod)),
            sch.mod.script(),
        )
        for k, sch in enumerate(schedules)
    ]
    note = untensorized_int8([workload], target, rules)  # no VNNI: why nothing tensorizes
    return spaces, skipped + unused(offered, schedules, workload) + ([note] if note else [])


def space_key(trace: Any) -> tuple[str, ...]:
    """What a trace keeps of the design space it was sampled from.

    Its instructions (postprocs and unused pure ones removed, as records store them) as Python
    lines without their decisions, and without the extent of ``meta_schedule.parallel``, which
    the mutator ``MutateParallel`` rewrites. Every other mutator only changes decisions.
    """
    lines = trace.simplified(remove_postproc=True).as_python(remove_postproc=True)
    return tuple(_PARALLEL.sub(r"\1_", _DECISION.sub(")", line)) for line in lines)


def space_of(trace: Any, keys: Sequence[tuple[str, ...]]) -> int | None:
    """Index of the design space whose :func:`space_key` is in ``keys`` that ``trace`` was
    sampled from (then mutated), or None if it is from none of them (other rules)."""
    key = space_key(trace)
    return next((k for k, space in enumerate(keys) if space == key), None)


def _categorical_value(inst: Any, decision: Any) -> Any:
    """A categorical decision as the candidate it picks (its index says little); else as is."""
    if inst.kind.name != "SampleCategorical" or not isinstance(decision, int):
        return decision
    candidates = inst.attrs[0]
    if 0 <= decision < len(candidates):
        value = candidates[decision]
        return getattr(value, "value", value)
    return decision


def trial_decisions(run: Any, *, limit: int = 300) -> pd.DataFrame:
    """One row per successful trial (the ``limit`` fastest) of the most common design space:
    ``trial``, ``latency_us`` and its decision at each site (as text; a categorical decision as
    the candidate it picks), read from the traces.

    Parameters
    ----------
    run : Run
        The records.
    limit : int
        Most trials to read.
    """
    trials = run.trials
    ok = trials[trials["status"] == "ok"].nsmallest(limit, "latency_us")
    rows, shapes = [], {}
    for index in ok.index:
        trace = run.trial(int(index)).trace
        insts = list(trace.insts)
        decs = {}
        for inst, value in trace.decisions.items():
            k = insts.index(inst)
            v = [int(x) for x in value] if hasattr(value, "__len__") else int(value)
            decs[f"#{k} {inst.kind.name}"] = str(_categorical_value(inst, v))
        key = tuple(sorted(decs))
        shapes[key] = shapes.get(key, 0) + 1
        rows.append((key, {"trial": int(trials.at[index, "trial"]),
                           "latency_us": float(trials.at[index, "latency_us"]), **decs}))
    if not rows:
        return pd.DataFrame({"trial": [], "latency_us": []})
    common = max(shapes, key=shapes.get)
    return pd.DataFrame([r for k, r in rows if k == common])
