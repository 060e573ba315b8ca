"""design_space_info and space_changes on hand-built spaces (no TVM: the views are pure)."""

from __future__ import annotations

import sys

from msviz.trace.spaces import DesignSpace
from msviz.views.design_spaces import (
    DesignSpaceInfo,
    SpaceChange,
    SpaceInfo,
    design_space_info,
    space_changes,
)

TILE = 'l1, l2 = sch.split(loop=l0, factors=[v1, v2])'


def _space(index: int, tile: list[int], extra: str = "") -> DesignSpace:
    trace = (f"v1, v2 = sch.sample_perfect_tile(loop=l0, n=2, decision={tile})", TILE)
    if extra:
        trace += (extra,)
    return DesignSpace(index, trace, ((0, "SamplePerfectTile", 8), (3, "SampleCategorical", 3)),
                       f"# space {index}")


def test_info_keys_and_sizes() -> None:
    spaces = [_space(0, [4, 32]), _space(1, [2, 64], "sch.parallel(loop=l1)")]
    key0 = "v1, v2 = sch.sample_perfect_tile(loop=l0, n=2)\n" + TILE
    expected = DesignSpaceInfo((
        SpaceInfo(0, key0, "\n".join(spaces[0].trace), ((0, "SamplePerfectTile", 8),
                  (3, "SampleCategorical", 3)), 24, "# space 0"),
        SpaceInfo(1, key0 + "\nsch.parallel(loop=l1)", "\n".join(spaces[1].trace),
                  ((0, "SamplePerfectTile", 8), (3, "SampleCategorical", 3)), 24, "# space 1"),
    ))
    assert design_space_info(spaces) == expected


def test_changes_match_spaces_by_their_decision_free_trace() -> None:
    old = design_space_info([_space(0, [4, 32]), _space(1, [1, 128], "sch.parallel(loop=l1)")])
    # same first space with other sampled decisions; the parallel one replaced by a vectorized
    new = design_space_info([_space(0, [8, 16], "sch.vectorize(loop=l2)"),
                             _space(1, [2, 64])])
    assert space_changes(old, new) == SpaceChange((0,), (1,), ((0, 1),))


def test_views_do_not_import_tvm() -> None:
    """The view modules turn data into infos; generating spaces lives in msviz.trace.spaces."""
    import importlib

    for name in ("msviz.views.design_spaces", "msviz.views.plots", "msviz.views.evolution",
                 "msviz.views.history", "msviz.views.tables"):
        source = importlib.import_module(name).__loader__.get_source(name)
        assert "import tvm" not in source and "compat" not in source, name
    assert "msviz.views" in sys.modules
