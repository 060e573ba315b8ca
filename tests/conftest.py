"""Shared fixtures: small work dirs written by stock MetaSchedule ``tune_tir`` (real TVM, CPU)."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
# A model's end-to-end check timed in one fresh process, not 3, wherever the suite does not say
# how many (in this process, the docs' scripts, the tutorials' and the browser tests' kernels):
# the tests that are about several draws ask for them (tests/engine/test_model.py,
# tests/records/test_model_profile.py). Read by msviz.bench.draws at import, so set first.
os.environ.setdefault("MSVIZ_DRAWS", "1")

def in_ci() -> bool:
    """Whether the suite runs in CI (``CI=true``, as CI services set it), where every extra is
    installed."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def require(module: str, extra: str) -> ModuleType:
    """Import the module an optional extra brings: a test that needs it is skipped where the
    extra is missing, but fails in CI, where a skip would hide the work it did not do.

    Parameters
    ----------
    module : str
        The module to import (``"ray"``, ``"onnx"``).
    extra : str
        What installs it, for the message (``"msviz[ray]"``).
    """
    if not in_ci():
        return pytest.importorskip(module, reason=f"{module} is not installed ({extra})")
    try:
        return importlib.import_module(module)
    except ImportError as err:
        pytest.fail(f"{module} is missing in CI, where {extra} is installed: {err}",
                    pytrace=False)


#: Workloads the stock work dirs are tuned on (catalogue names).
STOCK_WORKLOADS = {"GMM": "GMM-0", "C2D": "C2D-3", "SFM": "SFM-0"}


def tune_stock(workload: str, work_dir: Path, *, trials: int = 8, seed: int = 1, **kw) -> Path:
    """Run stock ``tune_tir`` on a catalogue workload with a tiny budget."""
    from msviz import compat, workloads

    ms = compat.ms
    compat.quiet_ipython_printing()
    compat.register_tensor_intrins()  # what a TuneContext imports, in seconds not a minute
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


def slow_build(seconds: float) -> object:
    """A build function (``f(mod, target, params)``) that sleeps ``seconds`` before it builds
    with :func:`msviz.compat.fast_build`: slow on purpose, so that a build timeout below
    ``seconds`` is reached on any host, however fast. A closure, so cloudpickle sends it to the
    build workers by value (they need not import this module)."""

    def build(mod: object, target: object, params: object = None) -> object:
        import time

        from msviz import compat

        time.sleep(seconds)
        return compat.fast_build(mod, target, params)

    return build


def timing_out_builder() -> object:
    """A stock LocalBuilder whose every build times out: its builds sleep 60 s (not a real
    build, which a fast host may finish within any small timeout) against a 0.001 s timeout,
    set after its start-up check passed (that check runs under the same timeout and would fail
    on a loaded machine)."""
    from msviz import compat

    builder = compat.ms.builder.LocalBuilder(timeout_sec=30, f_build=slow_build(60.0))
    builder.timeout_sec = 0.001
    return builder


#: Task names of :func:`tune_stock_model`'s model, in task-table order; ``matmul1`` and
#: ``matmul`` are different tasks with the same FLOP count (16,384), and
#: ``fused_matmul2_add_relu`` has weight 2.
MODEL_TASKS = ("fused_matmul3_add1", "fused_matmul2_add_relu", "matmul1", "matmul")


def tune_stock_model(work_dir: Path, *, trials_per_task: int = 3, seed: int = 1,
                     builder: object = None) -> Path:
    """Run stock ``tune_relax`` on a 5-layer MLP of 4 tasks (as ``compile_relax`` lowers it)."""
    import numpy as np
    import tvm
    from tvm import relax
    from tvm.relax.frontend import nn

    from msviz import compat

    ms = compat.ms
    compat.quiet_ipython_printing()
    compat.register_tensor_intrins()  # what a TuneContext imports, in seconds not a minute
    tvm_logger = logging.getLogger(ms.logging.__name__.rsplit(".", 1)[0])
    for handler in [h for h in tvm_logger.handlers if h.get_name() is None]:
        tvm_logger.removeHandler(handler)

    class MLP(nn.Module):
        def __init__(self) -> None:
            self.up = nn.Linear(64, 128, bias=False)  # matmul: 2*64*128 FLOP
            self.down = nn.Linear(128, 64, bias=False)  # matmul1: the same FLOP count
            self.fc1 = nn.Linear(64, 64)
            self.fc2 = nn.Linear(64, 64)  # the same task as fc1: weight 2
            self.out = nn.Linear(64, 10)

        def forward(self, x: nn.Tensor) -> nn.Tensor:
            h = self.down(self.up(x))
            h = nn.op.relu(self.fc1(h))
            return self.out(nn.op.relu(self.fc2(h)))

    mod, spec = MLP().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 64), "float32")}})
    rng = np.random.default_rng(seed)
    params = {name: tvm.runtime.tensor(
        (0.1 * rng.standard_normal([int(s) for s in p.shape])).astype("float32"))
        for name, p in spec}
    bound = relax.transform.BindParams("forward", params)(mod)
    lowered = tvm.transform.Sequential([
        relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(), relax.transform.FuseOps(), relax.transform.FuseTIR(),
    ])(bound)
    ms.relax_integration.tune_relax(
        lowered, None, compat.make_target("llvm"), str(work_dir),
        max_trials_global=trials_per_task * len(MODEL_TASKS),
        max_trials_per_task=trials_per_task, num_trials_per_iter=trials_per_task,
        builder=builder or compat.local_builder(),
        runner=ms.runner.LocalRunner(
            evaluator_config=ms.runner.EvaluatorConfig(number=1, repeat=1, min_repeat_ms=0)),
        strategy=ms.search_strategy.EvolutionarySearch(
            population_size=16, init_min_unmeasured=8, genetic_num_iters=1),
        task_scheduler=ms.task_scheduler.GradientBased(alpha=0.2, window_size=3, seed=7),
        seed=seed,
    )
    return work_dir


@pytest.fixture(scope="session")
def stock_model_work_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A work dir of stock ``tune_relax`` on a 4-task model: first a run whose every build
    times out (1 failed trial per task, its error text in each task's log), then a run of
    3 trials per task (whose task table is the log's last)."""
    work_dir = tmp_path_factory.mktemp("stock_model") / "mlp"
    tune_stock_model(work_dir, trials_per_task=1, seed=2, builder=timing_out_builder())
    return tune_stock_model(work_dir)


@pytest.fixture(scope="session")
def tuned_mlp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The catalogue mlp tuned 8 trials (some of its 4 tasks tuned, some not): the Session,
    its work dir ``.../mlp-wd``. Shared by ``msviz.build``'s tests and its bad inputs' (a test
    that changes the work dir changes a copy)."""
    import msviz

    work_dir = tmp_path_factory.mktemp("deploy") / "mlp-wd"
    session = msviz.Session("mlp", work_dir=str(work_dir), max_trials=8, trials_per_batch=4,
                            seed=1, end_to_end_check=False)
    session.start()
    session.wait()
    return session


def lock_free_elsewhere(lock: Any) -> bool:
    """Whether another thread could take ``lock`` now (False: someone holds it; a re-entrant
    lock held by the calling thread counts as held)."""
    got: list[bool] = []

    def probe() -> None:
        ok = lock.acquire(blocking=False)
        got.append(ok)
        if ok:
            lock.release()

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join(30)
    return got[0]
