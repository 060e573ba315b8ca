"""One measuring service (docs/architecture.md): no module of msviz outside the service
(``msviz.engine.measure``) and the bench it calls (``msviz.bench``) builds or runs a kernel,
nothing outside the service calls the bench's building and timing functions, and the service
is the only place that makes MetaSchedule's builders and runners. The rules are read from the
source with ``ast`` (names and attributes, not strings), and each checker is tested on a file
that breaks it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layers import KERNEL_CALLS, modules

#: The measuring service and the bench below it: the only modules that may build or run.
SERVICE = ("msviz.engine.measure", "msviz.bench", "msviz.compat")
#: What builds or runs a kernel, beside compat's kernel calls: TVM's timing, model builds and
#: MetaSchedule's builder and runner inputs.
KERNEL_NAMES = KERNEL_CALLS | {"time_evaluator", "compile_relax", "compile_tir", "BuilderInput",
                               "RunnerInput", "LocalBuilder", "LocalRunner", "RPCRunner"}
#: What of the bench a module outside the service may import: its settings and checks of them,
#: and pure functions of measured data (they build nothing).
BENCH_PURE = frozenset({"DEFAULT_DRAWS", "PROFILE_RUNS", "DEFAULT_ROUNDS", "CHECK_MODES",
                        "check_draws", "validate_mode", "profile_draws", "combine_draws"})


def in_service(module: str) -> bool:
    return module.startswith(SERVICE)


def kernel_uses(name: str, text: str) -> list[str]:
    """``module:line name`` for each use of a :data:`KERNEL_NAMES` name (attribute or bare)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        used = node.attr if isinstance(node, ast.Attribute) else \
            node.id if isinstance(node, ast.Name) else None
        if used in KERNEL_NAMES:
            found.append(f"{name}:{node.lineno} {used}")
    return found


def bench_imports(name: str, text: str) -> list[str]:
    """``module:line what`` for each import of the bench that is not one of its pure names."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module == "msviz.bench" or node.module.startswith("msviz.bench.")):
            found += [f"{name}:{node.lineno} {node.module}.{a.name}" for a in node.names
                      if a.name not in BENCH_PURE]
        elif isinstance(node, ast.ImportFrom) and node.module == "msviz":
            found += [f"{name}:{node.lineno} msviz.bench" for a in node.names
                      if a.name == "bench"]
        elif isinstance(node, ast.Import):
            found += [f"{name}:{node.lineno} {a.name}" for a in node.names
                      if a.name.startswith("msviz.bench")]
    return found


def test_only_the_measuring_service_builds_or_runs_a_kernel() -> None:
    outside = [use for name, path in sorted(modules().items()) if not in_service(name)
               for use in kernel_uses(name, path.read_text())]
    assert outside == [], f"built or run outside the measuring service: {outside}"


def test_only_the_measuring_service_calls_the_bench() -> None:
    outside = [imp for name, path in sorted(modules().items()) if not in_service(name)
               for imp in bench_imports(name, path.read_text())]
    assert outside == [], f"the bench called outside the measuring service: {outside}"


def test_kernel_uses_finds_each_form(tmp_path: Path) -> None:
    text = ("from msviz import compat\n"
            "f = compat.fast_build(mod, target)\n"
            "t = f.time_evaluator('main', dev)\n"
            "from tvm.s_tir.meta_schedule.builder import LocalBuilder\n"
            "b = LocalBuilder()\n"
            "# compile_relax in a comment is not a use\n"
            "x = 'compile_tir'\n")
    assert kernel_uses("m", text) == ["m:2 fast_build", "m:3 time_evaluator", "m:5 LocalBuilder"]


def test_bench_imports_finds_each_form() -> None:
    text = ("from msviz.bench.draws import DEFAULT_DRAWS, run_draws\n"
            "from msviz.bench import check_schedule\n"
            "import msviz.bench.paired\n"
            "from msviz import bench\n"
            "from msviz.bench.model_profile import PROFILE_RUNS\n")
    assert bench_imports("m", text) == ["m:1 msviz.bench.draws.run_draws",
                                        "m:2 msviz.bench.check_schedule",
                                        "m:3 msviz.bench.paired", "m:4 msviz.bench"]
