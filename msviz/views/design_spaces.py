"""Design spaces the schedule rules produce: trace, decision sites, size, IRModule; and which
spaces appear or disappear after a rule edit."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

__all__ = ["DesignSpaceInfo", "SpaceChange", "SpaceInfo", "design_space_info", "space_changes"]


class SpaceInfo(NamedTuple):
    """One design space."""

    index: int
    key: str  # its trace with decisions removed: equal keys mean the same space
    trace: str  # as Python
    sites: tuple[tuple[int, str, int], ...]  # (instruction index, kind, choice count)
    size: int
    script: str  # its IRModule (with the design space's sampled decisions) as TVMScript


class DesignSpaceInfo(NamedTuple):
    """All design spaces of a workload under one rule set."""

    spaces: tuple[SpaceInfo, ...]


class SpaceChange(NamedTuple):
    """What a rule edit did to the design spaces (by key)."""

    appeared: tuple[int, ...]  # indices in the new info
    disappeared: tuple[int, ...]  # indices in the old info
    kept: tuple[tuple[int, int], ...]  # (old index, new index)


_DECISION = re.compile(r",?\s*decision=[^)]*\)$")


def _key(trace_python: list[str]) -> str:
    return "\n".join(_DECISION.sub(")", line) for line in trace_python)


def design_space_info(mod: Any, target: Any = "llvm", rules: Any = None) -> DesignSpaceInfo:
    """Generate the design spaces of ``mod`` under ``rules`` (a RuleSet; default rules if None).

    Parameters
    ----------
    mod : IRModule | Workload | str
        The workload.
    target : str | Target
        Target of the rules.
    rules : RuleSet, optional
        Schedule rules, postprocs and mutators.
    """
    from msviz import compat
    from msviz.engine.rules import RuleSet
    from msviz.trace import decision_sites
    from msviz.workloads import resolve

    workload = resolve(mod)
    target = compat.make_target(target)
    rules = rules or RuleSet.default(str(target.kind.name))
    ctx = compat.ms.TuneContext(mod=workload.mod, target=target,
                                space_generator=rules.space_generator(), num_threads=1)
    spaces = []
    for k, sch in enumerate(ctx.generate_design_space()):
        python = list(sch.trace.as_python(remove_postproc=True))
        sites = decision_sites(sch, workload.mod)
        size = 1
        for s in sites:
            size *= s.count
        spaces.append(SpaceInfo(
            k, _key(python), "\n".join(python),
            tuple((s.index, s.kind, s.count) for s in sites), size, sch.mod.script(),
        ))
    return DesignSpaceInfo(tuple(spaces))


def space_changes(old: DesignSpaceInfo, new: DesignSpaceInfo) -> SpaceChange:
    """Which spaces a rule edit added, removed and kept (matched by their decision-free trace)."""
    old_keys = {s.key: s.index for s in old.spaces}
    new_keys = {s.key: s.index for s in new.spaces}
    return SpaceChange(
        tuple(i for k, i in new_keys.items() if k not in old_keys),
        tuple(i for k, i in old_keys.items() if k not in new_keys),
        tuple((old_keys[k], i) for k, i in new_keys.items() if k in old_keys),
    )
