"""The warm local builder: LocalBuilder's results from worker processes kept between batches."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from msviz import compat, workloads
from msviz.engine.measure.builder import WarmLocalBuilder, create


def _inputs(n: int) -> list:
    wl = workloads.get("GMM-0")
    return [compat.ms.builder.BuilderInput(wl.mod, compat.make_target("llvm"))] * n


def _run(artifact: str) -> np.ndarray:
    func = compat.load_module(artifact)
    rng = np.random.default_rng(0)
    a, b = rng.random((1, 128, 128), "float32"), rng.random((1, 128, 128), "float32")
    dev = compat.device_of(compat.make_target("llvm"))
    c = compat.to_tensor(np.zeros((1, 128, 128), "float32"), dev)
    func(compat.to_tensor(a, dev), compat.to_tensor(b, dev), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)
    return c.numpy()


def test_one_pool_builds_every_batch_and_its_artifacts_run() -> None:
    builder = create("local", max_workers=2, timeout=30)
    try:
        first = builder.build(_inputs(3))
        pids = {w._proc.pid for w in builder.pool._worker_map.values()}
        second = builder.build(_inputs(2))
        assert [r.error_msg for r in first + second] == [None] * 5
        assert builder.pools_started == 1 and builder.batches == 2
        assert {w._proc.pid for w in builder.pool._worker_map.values()} == pids  # same workers
        for r in first + second:
            assert Path(r.artifact_path).is_file()
            _run(r.artifact_path)
    finally:
        builder.reset()
    assert builder.pool is None


def test_pool_is_replaced_after_recycle_after_batches() -> None:
    builder = WarmLocalBuilder(max_workers=1, timeout_sec=30, recycle_after=1)
    try:
        for _ in range(2):
            assert [r.error_msg for r in builder.build(_inputs(1))] == [None]
        assert builder.pools_started == 2
    finally:
        builder.reset()


def test_a_build_past_its_timeout_fails_like_localbuilder_and_the_pool_goes_on() -> None:
    builder = WarmLocalBuilder(max_workers=1, timeout_sec=0.05)
    try:
        for _ in range(2):  # the timed-out worker is restarted by the pool
            results = builder.build(_inputs(1))
            assert [(r.artifact_path, r.error_msg) for r in results] == [
                (None, "LocalBuilder: Timeout, killed after 0.05 seconds")]
        assert builder.pools_started == 1
    finally:
        builder.reset()
