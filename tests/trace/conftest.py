"""Fixtures for the trace model: a stock GMM work dir and design spaces (real TVM, CPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def gmm_work_dir(stock_work_dirs: dict[str, Path]) -> Path:
    """The shared GMM-0 work dir written by stock ``tune_tir`` (tests/conftest.py)."""
    return stock_work_dirs["GMM"]


@pytest.fixture(scope="session")
def gmm_best(gmm_work_dir: Path) -> Any:
    """The best trial of the stock GMM work dir."""
    import msviz

    return msviz.open(gmm_work_dir).best()


def make_design_spaces(mod: Any, space_generator: Any = None, target: str = "llvm") -> list:
    """Design spaces of ``mod`` (default: MetaSchedule's default rules for ``target``)."""
    from msviz import compat

    ms = compat.ms
    if space_generator is None:
        space_generator = ms.space_generator.PostOrderApply(
            sch_rules=target, postprocs=target, mutator_probs=target
        )
    ctx = ms.TuneContext(
        mod=mod,
        target=compat.make_target(target),
        space_generator=space_generator,
        task_name="trace-test",
        rand_state=1,
        num_threads=1,
    )
    return list(ctx.generate_design_space())


def conv_relu_mod() -> Any:
    """A small conv2d (NHWC) + relu, the seeds' fused-workload example."""
    from tvm import te, topi
    from tvm.s_tir.meta_schedule.testing import te_workload

    from msviz import compat

    data, weight, out = te_workload.conv2d_nhwc(1, 14, 14, 16, 16, 3, 1, 1)
    return compat.normalize_mod(te.create_prim_func([data, weight, topi.nn.relu(out)]))


@pytest.fixture(scope="session")
def spaces() -> dict[str, tuple[Any, list]]:
    """Default-rule llvm design spaces of GMM-0, a small C2D, conv+relu: name -> (mod, spaces)."""
    from msviz import workloads

    mods = {
        "GMM": workloads.get("GMM", 0).mod,
        "C2D": workloads.get("C2D", shape=(1, 14, 14, 16, 16, 3, 1, 1)).mod,
        "CBR": conv_relu_mod(),
    }
    return {name: (mod, make_design_spaces(mod)) for name, mod in mods.items()}


@pytest.fixture(scope="session")
def make_spaces() -> Any:
    """:func:`make_design_spaces`, for tests that build their own space generator."""
    return make_design_spaces
