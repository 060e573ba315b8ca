"""Design spaces the schedule rules produce: trace, decision sites, size, IRModule; and which
spaces appear or disappear after a rule edit.

Pure: the spaces come from :func:`msviz.space_generator.generate_design_spaces`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
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
    intrinsics: tuple[str, ...] = ()  # tensor intrinsics its blocks are tiled for


class DesignSpaceInfo(NamedTuple):
    """All design spaces of a workload under one rule set."""

    spaces: tuple[SpaceInfo, ...]
    #: Why a tensor intrinsic the rules name is not used (does not exist, the target lacks its
    #: instructions, no block matches it).
    warnings: tuple[str, ...] = ()

    @property
    def tensorized(self) -> tuple[int, ...]:
        """Indices of the spaces that use a tensor intrinsic."""
        return tuple(s.index for s in self.spaces if s.intrinsics)


class SpaceChange(NamedTuple):
    """What a rule edit did to the design spaces (by key)."""

    appeared: tuple[int, ...]  # indices in the new info
    disappeared: tuple[int, ...]  # indices in the old info
    kept: tuple[tuple[int, int], ...]  # (old index, new index)


_DECISION = re.compile(r",?\s*decision=[^)]*\)$")


def _key(trace_python: Iterable[str]) -> str:
    return "\n".join(_DECISION.sub(")", line) for line in trace_python)


#: How a trace marks a block for the tensorize postproc (``MultiLevelTilingWithIntrin``).
_AUTO_TENSORIZE = re.compile(
    r'ann_key="meta_schedule\.auto_tensorize",\s*ann_val="([^"]+)"')


def _intrinsics(trace_python: Iterable[str]) -> tuple[str, ...]:
    found: list[str] = []
    for line in trace_python:
        for name in _AUTO_TENSORIZE.findall(line):
            if name not in found:
                found.append(name)
    return tuple(found)


def design_space_info(spaces: Iterable[Any], warnings: Iterable[str] = ()) -> DesignSpaceInfo:
    """Each space's decision-free key, size (the product of its sites' choice counts) and the
    tensor intrinsics it uses.

    Parameters
    ----------
    spaces : iterable of DesignSpace
        From :func:`msviz.space_generator.generate_design_spaces` (``index``, ``trace`` as
        Python lines, ``sites`` as ``(instruction, kind, choices)``, ``script``).
    warnings : iterable of str
        Why a tensor intrinsic was not used (from
        :func:`msviz.space_generator.design_spaces_and_warnings`).
    """
    return DesignSpaceInfo(tuple(
        SpaceInfo(
            int(s.index), _key(s.trace), "\n".join(s.trace), tuple(map(tuple, s.sites)),
            math.prod(int(n) for _, _, n in s.sites), s.script, _intrinsics(s.trace),
        )
        for s in spaces
    ), tuple(warnings))


def space_changes(old: DesignSpaceInfo, new: DesignSpaceInfo) -> SpaceChange:
    """Which spaces a rule edit added, removed and kept (matched by their decision-free trace)."""
    old_keys = {s.key: s.index for s in old.spaces}
    new_keys = {s.key: s.index for s in new.spaces}
    return SpaceChange(
        tuple(i for k, i in new_keys.items() if k not in old_keys),
        tuple(i for k, i in old_keys.items() if k not in new_keys),
        tuple((old_keys[k], i) for k, i in new_keys.items() if k in old_keys),
    )
