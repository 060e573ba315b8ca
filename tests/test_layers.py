"""msviz's imports flow one way (DESIGN.md): each part of msviz imports only the parts its rule
in :data:`MAY_IMPORT` names (the engine never a view or a widget), no two modules import each
other (directly or round a circle), an import inside a function says in a comment why it is
there (heavy or optional), and no module grows past 550 lines.

The graph is read from the source with ``ast``: every ``import`` and ``from ... import`` of an
``msviz`` module, at module level, inside a function or under ``if TYPE_CHECKING``, relative or
absolute.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "msviz"

#: The layer rules, literally: each top-level part of msviz (a room) and the rooms it may import
#: (its own modules always). ``""`` is the package root (``msviz/__init__.py``). Read from the
#: bottom: errors and the version; ``compat`` (the pinned TVM, and every read of a third-party
#: internal); the catalogue (``workloads``, ``models``); TIR programs (``trace``,
#: ``space_generator``); ``bench`` builds and runs kernels and models (checks, timed draws, model
#: profiles) and ``whynot`` forces schedules; ``records`` reads work dirs and bundles into plain
#: data and imports nothing that builds or runs a kernel; ``analysis`` computes statistics on
#: records; ``archive`` writes what records read (exports, bundles, merges, migrations); the
#: engine tunes and measures (the only room that may use ``bench``) and never draws; then views,
#: the report, widgets, the CLI and the package root.
FOUNDATION = frozenset({"errors", "version"})
CATALOGUE = FOUNDATION | {"compat", "workloads", "models"}
PROGRAMS = CATALOGUE | {"trace", "space_generator"}
READING = PROGRAMS | {"whynot", "records"}
STATISTICS = READING | {"analysis"}
MAY_IMPORT: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "version": frozenset(),
    "compat": FOUNDATION,
    "workloads": FOUNDATION | {"compat"},
    "models": FOUNDATION | {"compat", "workloads"},
    "trace": CATALOGUE,
    "space_generator": CATALOGUE | {"trace"},
    "bench": PROGRAMS,
    "whynot": PROGRAMS,
    "records": PROGRAMS | {"whynot"},
    "analysis": READING,
    "archive": READING,
    "engine": STATISTICS | {"archive", "bench"},  # not views, not widgets
    "views": STATISTICS,
    "report": STATISTICS | {"views", "engine", "archive"},
    "widgets": STATISTICS | {"views", "engine", "archive", "report"},
    "cli": STATISTICS | {"views", "engine", "archive", "report", "widgets", ""},
    "": STATISTICS | {"views", "engine", "archive", "report", "widgets"},
}

#: What the design forbids outright (DESIGN.md's one-way flow); the rules above must not
#: allow any of it.
FORBIDDEN: dict[str, frozenset[str]] = {
    "engine": frozenset({"views", "widgets", "report", "cli"}),
    "analysis": frozenset({"bench", "views", "engine", "widgets", "report", "cli"}),
    "records": frozenset({"bench", "archive", "analysis", "views", "engine", "widgets",
                          "report", "cli"}),
    "whynot": frozenset({"bench", "records", "engine", "views", "widgets"}),
    "trace": frozenset({"records", "views", "engine", "widgets"}),
    "views": frozenset({"bench", "archive", "engine", "widgets", "report", "cli"}),
}

#: The rooms that build or run kernels (the engine through its measuring room, and the bench).
KERNEL_ROOMS = frozenset({"bench", "engine"})
#: ``compat``'s calls that build or run a kernel in this process.
KERNEL_CALLS = frozenset({"compile_module", "device_of", "fast_build", "load_module",
                          "local_builder", "to_tensor"})
#: The rooms that may import ``tvm`` (or ``tvm_ffi``): TVM's names, and the model front ends.
TVM_ROOMS = frozenset({"compat", "models"})

MAX_LINES = 550


class Import:
    def __init__(self, source: str, target: str, line: int, in_function: bool, why: str):
        self.source, self.target, self.line = source, target, line
        self.in_function, self.why = in_function, why

    def __repr__(self) -> str:
        return f"{self.source}:{self.line} -> {self.target}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _comment_near(lines: list[str], lineno: int) -> str:
    """The comments on an import's line and the line above it."""
    here = lines[lineno - 1]
    above = lines[lineno - 2] if lineno >= 2 else ""
    return " ".join(part.split("#", 1)[1] for part in (above, here) if "#" in part)


def imports_of(name: str, path: Path, known: set[str]) -> list[Import]:
    """Every import of an msviz module in ``path``, resolved to the module it names."""
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    in_function = {
        id(sub)
        for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom))
    }
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            # "from msviz.x import y" imports the module msviz.x.y when there is one
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        for target in targets:
            if target == "msviz" or target.startswith("msviz."):
                out.append(Import(name, target, node.lineno, id(node) in in_function,
                                  _comment_near(lines, node.lineno)))
    return out


def part_of(module: str) -> str:
    """The top-level part of msviz a module belongs to (``""`` for the package root)."""
    return module.split(".")[1] if "." in module else ""


def all_imports() -> list[Import]:
    mods = modules()
    return [imp for name, path in mods.items() for imp in imports_of(name, path, set(mods))]


def breaking(imports: list[Import]) -> list[Import]:
    """The imports the rules do not allow (one per module, line and target)."""
    bad = {(imp.source, imp.line, imp.target): imp for imp in imports
           if part_of(imp.target) != part_of(imp.source)
           and part_of(imp.target) not in MAY_IMPORT.get(part_of(imp.source), ())}
    return list(bad.values())


def test_every_part_has_a_rule() -> None:
    missing = sorted({part_of(name) for name in modules()} - set(MAY_IMPORT))
    assert missing == [], f"parts of msviz with no rule in tests/test_layers.py: {missing}"


def test_every_import_keeps_the_rules() -> None:
    bad = breaking(all_imports())
    assert bad == [], "imports the layer rules do not allow: " + ", ".join(map(repr, bad))


def test_the_rules_allow_nothing_forbidden() -> None:
    allowed = {(part, other) for part, others in MAY_IMPORT.items() for other in others}
    forbidden = {(part, other) for part, others in FORBIDDEN.items() for other in others}
    assert allowed & forbidden == set()
    # and the parts form no circle: the rules rank them
    assert find_cycle({part: set(others) for part, others in MAY_IMPORT.items()}) is None


def test_the_engine_imports_no_view_and_no_widget() -> None:
    """DESIGN.md's rule in its own words, checked over every import (inside functions too)."""
    upward = [imp for imp in all_imports() if part_of(imp.source) == "engine"
              and part_of(imp.target) in ("views", "widgets")]
    assert upward == []


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A circle in the graph (its modules in order), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _module_graph() -> dict[str, set[str]]:
    """Module -> the modules it imports. A package's ``__init__`` re-exports its modules, so
    importing a package is not counted as importing each module it re-exports (that would make
    every ``from msviz.engine.search import X`` inside the package a circle); an import of the
    package itself is an edge to the package."""
    edges: dict[str, set[str]] = {}
    for imp in all_imports():
        if imp.source != imp.target:
            edges.setdefault(imp.source, set()).add(imp.target)
    return edges


def test_no_import_circle() -> None:
    graph = _module_graph()
    # a package importing its own modules is how it re-exports them; a module importing its
    # own package (to reach a sibling through the re-export) would close a circle: both count
    assert find_cycle(graph) is None, f"import circle: {' -> '.join(find_cycle(graph) or [])}"


def test_function_level_imports_say_why() -> None:
    """An msviz import inside a function is there because the module is heavy or optional,
    and a comment on the line (or the one above) says so; never to dodge a circle."""
    silent = [imp for imp in all_imports()
              if imp.in_function and not any(w in imp.why for w in ("heavy", "optional"))]
    assert silent == [], "function-level imports with no reason: " + ", ".join(
        map(repr, silent))


def _third_party_imports(path: Path) -> list[tuple[str, bool, int]]:
    """(module, inside a function, line) of each import of a module outside msviz."""
    tree = ast.parse(path.read_text())
    in_function = {
        id(sub)
        for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom))
    }
    out = []
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                 else [])
        out += [(n, id(node) in in_function, node.lineno) for n in names
                if n and n.split(".")[0] != "msviz"]
    return out


def test_plotly_is_imported_in_one_place() -> None:
    """plotly comes from ``msviz.views._plotly_imports`` only (as Optuna's
    ``_plotly_imports``)."""
    elsewhere = [f"{name}:{line}" for name, path in modules().items()
                 if name != "msviz.views._plotly_imports"
                 for mod, _, line in _third_party_imports(path) if mod.split(".")[0] == "plotly"]
    assert elsewhere == []


def test_no_import_repeated_in_a_function() -> None:
    """A view, widget or the report imports a module once, at the top, when it needs it at the
    top anyway (and numpy beside pandas: pandas imports it)."""
    repeated = []
    for name, path in modules().items():
        if not name.startswith(("msviz.views", "msviz.widgets", "msviz.report")):
            continue
        found = _third_party_imports(path)
        top = {mod for mod, inner, _ in found if not inner}
        if "pandas" in top:
            top.add("numpy")
        repeated += [f"{name}:{line} {mod}" for mod, inner, line in found if inner and mod in top]
    assert repeated == []


def test_no_module_over_550_lines() -> None:
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


# -- the checks can fail: each on a graph or a file that breaks it -------------------------------


def test_find_cycle_finds_a_circle_and_only_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_breaking_finds_an_upward_import(tmp_path: Path) -> None:
    """The rule check can fail: the import ``msviz.engine.restriction`` had of
    ``msviz.views.importance`` (inside a function too), and none of the allowed ones."""
    path = tmp_path / "restriction.py"
    path.write_text("from msviz.records import Run\n"
                    "from msviz.analysis.importance import top_mask\n"
                    "from msviz.views.importance import importance_info\n"
                    "def f():\n    from msviz.widgets import Dashboard  # heavy\n")
    got = breaking(imports_of("msviz.engine.restriction", path, set(modules())))
    assert [(i.target, i.line) for i in got] == [("msviz.views.importance", 3),
                                                  ("msviz.widgets", 5)]


@pytest.mark.parametrize(("text", "expected"), [
    ("from msviz.widgets import Dashboard\n", [("msviz.widgets", False, "")]),
    ("import msviz.views.tasks\n", [("msviz.views.tasks", False, "")]),
    ("def f():\n    from msviz.engine import Session  # heavy: TVM\n",
     [("msviz.engine", True, " heavy: TVM")]),
    ("from .search import evolution\n", [("msviz.engine.search.evolution", False, "")]),
    ("import numpy\n", []),
])
def test_imports_of_reads_each_form(tmp_path: Path, text: str, expected: list) -> None:
    """Read as the module ``msviz.engine.session`` (relative imports resolve in
    ``msviz.engine``); a name imported from a package that is a module counts as that module."""
    path = tmp_path / "session.py"
    path.write_text(text)
    got = imports_of("msviz.engine.session", path, set(modules()))
    assert [(i.target, i.in_function, i.why) for i in got] == expected


def test_no_package_name_shadows_its_module() -> None:
    """A package that re-exports a name equal to one of its modules (``rpc`` the function in
    ``msviz.engine.measure``, beside ``rpc`` the module) makes ``from package import name``
    mean the function or the module by import order."""
    mods = modules()
    shadowed = []
    for name, path in mods.items():
        if path.name != "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    bound = alias.asname or alias.name
                    sibling = f"{name}.{bound}"
                    if sibling in mods and f"{node.module}.{alias.name}" != sibling:
                        shadowed.append(f"{name}: {bound} from {node.module}")
    assert shadowed == []
