"""msviz's imports flow one way (DESIGN.md): each part of msviz imports only the parts its rule
in :data:`MAY_IMPORT` names (the engine never a view or a widget), no two modules import each
other (directly or round a circle), an import inside a function says in a comment why it is
there (heavy or optional), and no module grows past 450 lines.

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
#: bottom: errors and the version; ``compat`` (the pinned TVM and the third-party internals it
#: names); the catalogue (``workloads``, ``models``); TIR programs (``trace``,
#: ``space_generator``); ``bench`` builds and runs kernels and models (checks, timed draws, model
#: profiles) and ``whynot`` forces schedules; ``records`` reads work dirs and bundles into plain
#: data, writes no file and imports nothing that builds or runs a kernel; ``analysis`` computes
#: statistics on records; ``archive`` writes what records read (exports, bundles, merges,
#: migrations, the sidecar, the caches); the engine tunes and measures (the only room that may
#: use ``bench``) and never draws; then views, the report, widgets, the CLI and the package root.
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
    # drives Sessions and the measuring service through their public API; never the bench
    "workflows": STATISTICS | {"archive", "engine"},
    "report": STATISTICS | {"views", "engine", "archive", "workflows"},
    "widgets": STATISTICS | {"views", "engine", "archive", "report", "workflows"},
    "cli": STATISTICS | {"views", "engine", "archive", "report", "widgets", "workflows", ""},
    "": STATISTICS | {"views", "engine", "archive", "report", "widgets", "workflows"},
}

#: What the design forbids outright (DESIGN.md's one-way flow); the rules above must not
#: allow any of it.
FORBIDDEN: dict[str, frozenset[str]] = {
    "analysis": frozenset({"bench", "views", "engine", "widgets", "report", "cli"}),
    "records": frozenset({"bench", "archive", "analysis", "views", "engine", "widgets",
                          "report", "cli"}),
    "whynot": frozenset({"bench", "records", "engine", "views", "widgets"}),
    "trace": frozenset({"records", "views", "engine", "widgets"}),
    "views": frozenset({"bench", "archive", "engine", "widgets", "report", "cli"}),
    "engine": frozenset({"views", "widgets", "report", "cli", "workflows"}),
    "workflows": frozenset({"bench", "views", "widgets", "report", "cli"}),
}

#: The rooms that build or run kernels (the engine through its measuring service, and the
#: bench it calls) and the one that drives them (workflows, through the service).
KERNEL_ROOMS = frozenset({"bench", "engine", "workflows"})
#: ``compat``'s calls that build or run a kernel in this process.
KERNEL_CALLS = frozenset({"compile_module", "device_of", "fast_build", "load_module",
                          "local_builder", "to_tensor"})
#: The rooms that may import ``tvm`` (or ``tvm_ffi``): TVM's names, and the model front ends.
TVM_ROOMS = frozenset({"compat", "models"})
#: Scripts a fresh process runs without importing msviz (so they cannot reach ``compat``): they
#: import ``tvm`` themselves, beside their one user.
CHILD_SCRIPTS = frozenset({"msviz.bench.draw_jobs", "msviz.bench.runtime_jobs"})
#: The modules outside ``compat`` that read a third-party internal, each named for the
#: third-party class whose internals it reads, and kept in the room that uses it: module -> class.
INTERNALS_MODULES = {"msviz.widgets.figure_widgets": "FigureWidget"}

MAX_LINES = 450


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


def test_no_module_over_450_lines() -> None:
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


# -- the checks can fail: each on a graph or a file that breaks it -------------------------------


def test_find_cycle_finds_a_circle_and_only_a_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_breaking_finds_an_upward_import(tmp_path: Path) -> None:
    """The rule check can fail: the import ``msviz.workflows.rerun`` had of
    ``msviz.views.importance`` (inside a function too), and none of the allowed ones."""
    path = tmp_path / "restriction.py"
    path.write_text("from msviz.records import Run\n"
                    "from msviz.analysis.importance import top_mask\n"
                    "from msviz.views.importance import importance_info\n"
                    "def f():\n    from msviz.widgets import Dashboard  # heavy\n")
    got = breaking(imports_of("msviz.workflows.rerun", path, set(modules())))
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


# -- TVM and third-party internals live in compat (or a module named for them) ------------------

#: Attributes of a namedtuple (public API despite the underscore).
NAMEDTUPLE_API = frozenset({"_asdict", "_replace", "_fields", "_make", "_field_defaults"})
#: Spellings of where the pinned TVM keeps its names (they move between releases).
VERSION_SPELLINGS = ("tvm.s_tir", "tvm.tirx", "s_tir.meta_schedule")


def tvm_imports(path: Path) -> list[str]:
    """``module:line`` of each import of ``tvm`` or ``tvm_ffi`` (any form, inside functions
    too)."""
    return [f"{mod}:{line}" for mod, _, line in _third_party_imports(path)
            if mod.split(".")[0] in ("tvm", "tvm_ffi")]


def _defined_names(paths: list[Path]) -> set[str]:
    """Every name msviz defines: functions, classes, arguments, assigned names and
    attributes."""
    names: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)  # msviz's own attribute (on a widget, say)
    return names


def _is_private(name: str) -> bool:
    return (name.startswith("_") and not name.startswith("__")
            and name not in NAMEDTUPLE_API)


def third_party_internals(path: Path, defined: set[str]) -> list[str]:
    """``line:expression`` of each read of a private attribute (one underscore) that msviz does
    not define, of an object other than ``self`` / ``cls``: ``x._y`` and
    ``getattr(x, "_y")`` (``hasattr``, ``setattr`` too)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        name = None
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                name = node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and _is_private(node.args[1].value)):
            name = node.args[1].value
        if name is not None and name not in defined:
            found.append((node.lineno, f"{node.lineno}:{ast.unparse(node)}"))
    return [text for _, text in sorted(found)]


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants (the first statement of a module, class or
    function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                out.add(id(body[0].value))
    return out


def version_spellings(path: Path) -> list[str]:
    """``line:text`` of each string (not a docstring; f-string parts too) or attribute chain
    (``tvm.tirx.IntImm``) that spells where the pinned TVM keeps its names."""
    tree = ast.parse(path.read_text())
    docs = _docstrings(tree)
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        text = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            text = node.value
        elif isinstance(node, ast.Attribute) and id(node) not in inner:  # a whole chain
            text = ast.unparse(node)
        if text is not None and any(s in text for s in VERSION_SPELLINGS):
            found.append((node.lineno, f"{node.lineno}:{text[:60]}"))
    return [text for _, text in sorted(found)]


def test_only_compat_and_models_import_tvm() -> None:
    """And a child script that imports no msviz (it cannot reach ``compat``)."""
    found = {name: got for name, path in modules().items()
             if part_of(name) not in TVM_ROOMS and name not in CHILD_SCRIPTS
             and (got := tvm_imports(path))}
    assert found == {}


def test_child_scripts_import_no_msviz() -> None:
    mods = modules()
    found = {name: got for name in sorted(CHILD_SCRIPTS)
             if (got := imports_of(name, mods[name], set(mods)))}
    assert found == {}


def named_for(module: str, thing: str) -> bool:
    """Whether a module's own name names ``thing`` (``figure_widgets``: ``FigureWidget``)."""
    return thing.lower() in module.rsplit(".", 1)[-1].replace("_", "")


def internals_out_of_place(mods: dict[str, Path], defined: set[str]) -> dict[str, list[str]]:
    """The modules that read a third-party internal (with the reads) and are neither in
    ``compat`` nor one of :data:`INTERNALS_MODULES`, named for the class it reads."""
    return {name: got for name, path in mods.items()
            if part_of(name) != "compat"
            and not (name in INTERNALS_MODULES and named_for(name, INTERNALS_MODULES[name]))
            and (got := third_party_internals(path, defined))}


def test_third_party_internals_only_in_compat_or_a_module_named_for_them() -> None:
    """A third-party internal is read in ``compat`` (TVM's, xgboost's) or in a module named for
    the class it reads, in the room that uses it (``widgets/figure_widgets``: plotly's
    ``FigureWidget``)."""
    mods = modules()
    assert internals_out_of_place(mods, _defined_names(list(mods.values()))) == {}
    assert all(named_for(name, thing) and name in mods
               for name, thing in INTERNALS_MODULES.items())


def test_internals_out_of_place_finds_a_read_elsewhere(tmp_path: Path) -> None:
    """The check can fail: plotly's ``_layout`` read in ``widgets/plots`` (as it was before
    ``figure_widgets``), not in ``widgets/figure_widgets`` or ``compat``."""
    path = tmp_path / "m.py"
    path.write_text("shown = getattr(widget, '_layout', None)\n")
    mods = {"msviz.widgets.plots": path, "msviz.widgets.figure_widgets": path,
            "msviz.compat.runtime": path}
    assert internals_out_of_place(mods, set()) == {
        "msviz.widgets.plots": ["1:getattr(widget, '_layout', None)"]}
    assert not named_for("msviz.widgets.plots", "FigureWidget")


def test_version_spellings_only_in_compat() -> None:
    found = {name: got for name, path in modules().items()
             if part_of(name) != "compat" and (got := version_spellings(path))}
    assert found == {}


def test_tvm_imports_finds_each_form(tmp_path: Path) -> None:
    path = tmp_path / "draws.py"
    path.write_text("import numpy\nimport tvm as _tvm\nfrom tvm.rpc import base\n"
                    "def f():\n    import tvm_ffi  # heavy\n    from msviz import compat\n")
    assert tvm_imports(path) == ["tvm:2", "tvm.rpc:3", "tvm_ffi:5"]


def test_third_party_internals_finds_a_private_read(tmp_path: Path) -> None:
    path = tmp_path / "tracker.py"
    path.write_text("tracker._sock.settimeout(1)\n"
                    "inst = getattr(runner, '_inst', None)\n"
                    "self._mine = row._asdict()\n"
                    "x = other._mine\n"
                    "y = obj.__class__\n")
    assert third_party_internals(path, {"_mine"}) == [
        "1:tracker._sock", "2:getattr(runner, '_inst', None)"]


def test_version_spellings_finds_strings_and_chains(tmp_path: Path) -> None:
    path = tmp_path / "task_loop.py"
    path.write_text('"""Logs of tvm.s_tir.meta_schedule (a docstring: fine)."""\n'
                    '# tvm.tirx in a comment: fine\n'
                    'LOG = "tvm.s_tir.meta_schedule.logging.task_scheduler.log"\n'
                    'def f(dim):\n    """tvm.tirx.IntImm: fine."""\n'
                    '    return isinstance(dim, tvm.tirx.IntImm)\n'
                    'NAME = f"{NS}.logging"\n')
    assert [f.split(":")[0] for f in version_spellings(path)] == ["3", "6"]


# -- rooms: what records may reach, private attributes, names -----------------------------------


def _closure(start: set[str], graph: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), list(start)
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo += graph.get(node, ())
    return seen


def test_records_import_nothing_that_builds_or_runs_a_kernel() -> None:
    """``records/`` reads: no module it imports, directly or through others (inside functions
    too), is in a room that builds or runs kernels, and it calls none of compat's kernel calls."""
    graph = _module_graph()
    for room in ("records", "whynot"):
        mods = {name for name in modules() if part_of(name) == room}
        reached = sorted(m for m in _closure(mods, graph) if part_of(m) in KERNEL_ROOMS)
        assert reached == [], f"{room} reaches {reached}"
        calls = [f"{name}:{node.lineno} {node.attr}" for name in sorted(mods)
                 for node in ast.walk(ast.parse(modules()[name].read_text()))
                 if isinstance(node, ast.Attribute) and node.attr in KERNEL_CALLS]
        assert calls == [], f"{room} builds or runs kernels: {calls}"


def _defining_rooms() -> dict[str, set[str]]:
    """Each name a module of msviz defines (functions, classes, assigned names and
    attributes), by the rooms defining it."""
    rooms: dict[str, set[str]] = {}
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            found = (node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                    ast.ClassDef)) else
                     node.attr if isinstance(node, ast.Attribute)
                     and isinstance(node.ctx, ast.Store) else
                     node.id if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
                     else None)
            if found:
                rooms.setdefault(found, set()).add(part_of(name))
    return rooms


def private_reads(name: str, path: Path) -> list[tuple[int, str]]:
    """(line, attribute) of each private attribute ``path`` reads on an object other than
    ``self``/``cls``: ``x._name``, ``getattr(x, "_name")``, ``from m import _name``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and not (
                isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            out.append((node.lineno, node.attr))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and not (isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", "cls"))):
            out.append((node.lineno, node.args[1].value))
        elif isinstance(node, ast.ImportFrom):
            out += [(node.lineno, a.name) for a in node.names]
    return [(line, attr) for line, attr in out
            if attr.startswith("_") and not attr.startswith("__") and attr not in NAMEDTUPLE_API]


def foreign_private_reads(defined: dict[str, set[str]]) -> list[str]:
    """Each read of a private attribute that another room defines (a third-party one, defined
    nowhere in msviz, is only read in ``compat``: see the third-party check)."""
    bad = []
    for name, path in modules().items():
        room = part_of(name)
        for line, attr in private_reads(name, path):
            owners = defined.get(attr, set())
            if owners and room not in owners:
                bad.append(f"{name}:{line} {attr} (defined in {', '.join(sorted(owners))})")
    return bad


def test_no_private_attribute_of_another_room_is_read() -> None:
    assert foreign_private_reads(_defining_rooms()) == []


def test_private_reads_finds_each_form(tmp_path: Path) -> None:
    path = tmp_path / "export.py"
    path.write_text("from msviz.records.run import _x\n"
                    "def f(run, self):\n    a = run._records\n    b = getattr(run, '_live')\n"
                    "    c = self._mine\n    d = t._asdict()\n    return a, b, c, d\n")
    assert sorted(private_reads("msviz.archive.export", path)) == [
        (1, "_x"), (3, "_records"), (4, "_live")]
    defined = {"_records": {"records"}, "_live": {"archive"}}
    assert [line for line, attr in private_reads("msviz.archive.export", path)
            if defined.get(attr, {"archive"}) != {"archive"}] == [3]


def same_named_modules() -> dict[str, list[str]]:
    """Module base names held by more than one room, with their modules (a package counts by
    its folder's name)."""
    by_name: dict[str, list[str]] = {}
    for name in modules():
        by_name.setdefault(name.rsplit(".", 1)[-1], []).append(name)
    return {base: sorted(mods) for base, mods in by_name.items()
            if len({part_of(m) for m in mods}) > 1}


def test_same_named_modules_say_they_are_one_concept() -> None:
    """Two modules of one name in different rooms are one concept at two layers, and each one's
    docstring names the other(s)."""
    silent = []
    for mods in same_named_modules().values():
        for mod in mods:
            doc = ast.get_docstring(ast.parse(modules()[mod].read_text())) or ""
            silent += [f"{mod} does not name {other}" for other in mods
                       if other != mod and other not in doc.replace("~", "")]
    assert silent == []


# -- records/ writes nothing ----------------------------------------------------------------------

#: Names of ``os`` and ``shutil`` that write, make or remove a file or folder (called, or handed
#: on: a finalizer given ``shutil.rmtree``), of ``tempfile`` that make one, and methods (of a
#: ``Path``, a file) that do.
OS_WRITES = frozenset({"replace", "rename", "renames", "remove", "unlink", "mkdir", "makedirs",
                       "rmdir", "removedirs", "truncate", "ftruncate", "symlink", "link", "chmod",
                       "utime", "write", "mkfifo"})
SHUTIL_WRITES = frozenset({"copy", "copy2", "copyfile", "copytree", "copymode", "copystat",
                           "move", "rmtree", "make_archive", "unpack_archive"})
TEMPFILE_WRITES = frozenset({"mkstemp", "mkdtemp", "NamedTemporaryFile", "TemporaryFile",
                             "TemporaryDirectory", "SpooledTemporaryFile"})
METHOD_WRITES = frozenset({"write_text", "write_bytes", "mkdir", "touch", "unlink", "rmdir",
                           "symlink_to", "hardlink_to", "truncate", "to_parquet", "to_csv",
                           "to_pickle", "savez", "save"})
#: Where ``records/`` unpacks a bundle to read it: into its own temporary folder, removed with
#: what read it (module, function). Nothing else in ``records/`` touches the file system but to
#: read.
BUNDLE_UNPACKING = frozenset({("msviz.records.bundle", "extract_bundle"),
                              ("msviz.records.bundle", "open_bundle"),
                              ("msviz.records.library", "_open_bundle")})


def _writing_mode(node: ast.Call) -> bool:
    """Whether a call of ``open`` (builtin, a method, ``os.fdopen``) names a mode that writes."""
    given = [*node.args[:2], *(k.value for k in node.keywords if k.arg == "mode")]
    return any(isinstance(v, ast.Constant) and isinstance(v.value, str)
               and set(v.value) <= set("rwxabt+U") and set(v.value) & set("wxa+")
               for v in given)


def file_writes(path: Path) -> list[tuple[str, int, str]]:
    """(function, line, expression) of each write of a file or folder in ``path`` (the function
    is ``""`` at module level): ``open`` in a writing mode, ``json.dump``/``pickle.dump``, the
    names of :data:`OS_WRITES`, :data:`SHUTIL_WRITES`, :data:`TEMPFILE_WRITES` and
    :data:`METHOD_WRITES`."""
    tree = ast.parse(path.read_text())
    where: dict[int, str] = {}

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = (child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
                     else function)
            where[id(child)] = inner
            visit(child, inner)

    visit(tree, "")
    found = []
    for node in ast.walk(tree):
        hit = False
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module, name = node.value.id, node.attr
            hit = ((module == "os" and name in OS_WRITES)
                   or (module == "shutil" and name in SHUTIL_WRITES)
                   or (module == "tempfile" and name in TEMPFILE_WRITES)
                   or (module in ("json", "pickle") and name == "dump"))
        if isinstance(node, ast.Call):
            func = node.func
            name = (func.id if isinstance(func, ast.Name) else
                    func.attr if isinstance(func, ast.Attribute) else "")
            if name in ("open", "fdopen") and _writing_mode(node):
                hit = True
            elif (isinstance(func, ast.Attribute) and name in METHOD_WRITES
                  and not (isinstance(func.value, ast.Name)
                           and func.value.id in ("os", "shutil", "tempfile"))):
                hit = True
        if hit:
            found.append((where.get(id(node), ""), node.lineno, ast.unparse(node)[:60]))
    return sorted(found, key=lambda f: (f[1], f[2]))


def test_records_write_nothing() -> None:
    """``records/`` reads: no module of it writes, makes or removes a file or folder (the
    sidecar's writer and the caches' are :mod:`msviz.archive`'s), but to unpack a bundle it
    reads into a temporary folder of its own (:data:`BUNDLE_UNPACKING`)."""
    writes = [f"{name}:{line} {function or '<module>'}: {text}"
              for name, path in modules().items() if part_of(name) == "records"
              for function, line, text in file_writes(path)
              if (name, function) not in BUNDLE_UNPACKING]
    assert writes == []


def test_file_writes_finds_each_form(tmp_path: Path) -> None:
    """The check can fail: the sidecar's writer and the open cache's save as they were in
    ``records/``, and none of the reads beside them."""
    path = tmp_path / "sidecar.py"
    path.write_text(
        "import json, os, shutil, tempfile, weakref\n"
        "def writer(path, data, zf, info):\n"
        "    path.parent.mkdir(parents=True, exist_ok=True)\n"
        "    f = open(path, 'a', encoding='utf-8')\n"
        "    with open(path, 'rb+') as g:\n"
        "        g.truncate(0)\n"
        "    fd, tmp = tempfile.mkstemp(dir=path.parent)\n"
        "    with os.fdopen(fd, 'w') as h:\n"
        "        json.dump(data, h)\n"
        "    os.replace(tmp, path)\n"
        "    path.with_suffix('.txt').write_text('x')\n"
        "    weakref.finalize(f, shutil.rmtree, tmp)\n"
        "def reader(path, zf, info, s):\n"
        "    with open(path, 'rb') as f, open(path, encoding='utf-8', errors='replace'):\n"
        "        pass\n"
        "    zf.open(info)\n"
        "    return json.dumps(s.replace('a', 'b')), os.path.join('a', 'b'), json.load(f)\n"
        "x = Path('y').open('w')\n")
    assert [(function, line) for function, line, _ in file_writes(path)] == [
        ("writer", 3), ("writer", 4), ("writer", 5), ("writer", 6), ("writer", 7),
        ("writer", 8), ("writer", 9), ("writer", 10), ("writer", 11), ("writer", 12), ("", 18)]
