"""Design spaces of a workload under a rule set: MetaSchedule's ``PostOrderApply`` run once.

The Design spaces view and the Rules editor show these for a Run; a session generates its own in
its worker (:mod:`msviz.engine`), where the spaces are sampled.
"""

from __future__ import annotations

from typing import Any

from msviz import compat
from msviz.space_generator.intrinsics import untensorized_int8, unused
from msviz.space_generator.rules import RuleSet
from msviz.trace.sites import decision_sites
from msviz.trace.spaces import DesignSpace
from msviz.workloads import resolve

__all__ = ["design_spaces_and_warnings", "generate_design_spaces"]


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
    workload = resolve(mod)
    target = compat.make_target(target)
    rules = rules or RuleSet.default(target)
    compat.register_tensor_intrins()  # before the TuneContext imports them, slowly
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
