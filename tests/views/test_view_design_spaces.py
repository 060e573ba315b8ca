"""design_space_info and space_changes on hand-built spaces (no TVM: the views are pure)."""

from __future__ import annotations

import ast
from pathlib import Path

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


def _imported_modules(source: str, package: str) -> set[str]:
    """Every module an ``import`` / ``from ... import`` names in ``source``, at any depth, with
    relative imports resolved against ``package``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _touches_tvm(name: str) -> bool:
    return name == "tvm" or name.startswith(("tvm.", "msviz.compat"))


def test_views_do_not_import_tvm() -> None:
    """The view modules turn data into infos; generating spaces lives in msviz.trace.spaces."""
    import msviz.views

    # the checker sees every spelling of an import of TVM
    for spelling in ("import tvm", "from tvm.s_tir import meta_schedule as ms",
                     "def f():\n    import tvm.relax\n", "from ..compat import make_target",
                     "from msviz.compat.target import host_cpu"):
        assert any(_touches_tvm(n) for n in _imported_modules(spelling, "msviz.views")), spelling
    folder = Path(msviz.views.__file__).parent
    modules = sorted(folder.glob("**/*.py"))
    assert {p.stem for p in modules} >= {
        "__init__", "common", "compare", "design_spaces", "devices", "evolution", "history",
        "importance", "model_profile", "plots", "profile", "tables", "tasks"}
    for path in modules:
        imported = _imported_modules(path.read_text(encoding="utf-8"), "msviz.views")
        assert not {n for n in imported if _touches_tvm(n)}, path.name
