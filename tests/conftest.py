"""Shared fixtures: small work dirs written by stock MetaSchedule ``tune_tir`` (real TVM, CPU)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")

#: Workloads the stock work dirs are tuned on (catalogue names).
STOCK_WORKLOADS = {"GMM": "GMM-0", "C2D": "C2D-3", "SFM": "SFM-0"}


def tune_stock(workload: str, work_dir: Path, *, trials: int = 8, seed: int = 1, **kw) -> Path:
    """Run stock ``tune_tir`` on a catalogue workload with a tiny budget."""
    from msviz import compat, workloads

    ms = compat.ms
    compat.quiet_ipython_printing()
    # pytest's log-capture handlers end up on MetaSchedule's logger after a first tune_tir;
    # they have no name, and tune_tir's logging setup formats every handler name (None fails).
    tvm_logger = logging.getLogger(ms.logging.__name__.rsplit(".", 1)[0])
    for handler in [h for h in tvm_logger.handlers if h.get_name() is None]:
        tvm_logger.removeHandler(handler)
    builder = kw.pop("builder", None) or compat.local_builder()
    ms.tir_integration.tune_tir(
        workloads.get(workload).mod,
        compat.make_target("llvm"),
        str(work_dir),
        max_trials_global=trials,
        num_trials_per_iter=8,
        builder=builder,
        runner=ms.runner.LocalRunner(
            evaluator_config=ms.runner.EvaluatorConfig(number=1, repeat=1, min_repeat_ms=0)
        ),
        strategy=ms.search_strategy.EvolutionarySearch(
            population_size=16, init_min_unmeasured=8, genetic_num_iters=1
        ),
        seed=seed,
        num_tuning_cores=2,
        **kw,
    )
    return work_dir


@pytest.fixture(scope="session")
def stock_work_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """GMM, C2D and SFM work dirs from stock ``tune_tir``; GMM also holds 4 failed trials."""
    root = tmp_path_factory.mktemp("stock")
    out = {key: tune_stock(name, root / key) for key, name in STOCK_WORKLOADS.items()}
    # A second stock run into the same GMM work dir whose builder always times out: the
    # database gets run_secs=[1e10] records and the log gets their error text.
    tune_stock("GMM-0", out["GMM"], trials=4, seed=2, builder=timing_out_builder())
    return out


def timing_out_builder() -> object:
    """A stock LocalBuilder whose every build times out (after its start-up check passed:
    that check runs under the same timeout and would fail on a loaded machine)."""
    from msviz import compat

    builder = compat.ms.builder.LocalBuilder(timeout_sec=30, f_build=compat.fast_build)
    builder.timeout_sec = 0.001
    return builder
