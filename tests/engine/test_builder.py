"""The warm local builder: LocalBuilder's results from worker processes kept between batches."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from tvm.support.popen_pool import PopenWorker

from msviz import compat, workloads
from msviz.engine.measure.builder import WarmLocalBuilder, create
from tests.conftest import slow_build


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


def _ended(pid: int, deadline_s: float = 60.0) -> bool:
    """Whether process ``pid`` ends (or is a zombie) within a generous deadline: the pool kills
    a timed-out worker and waits only a second to reap it, which a loaded host may outlast."""
    stat = Path(f"/proc/{pid}/stat")
    end = time.monotonic() + deadline_s
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                return True
        except (OSError, IndexError):
            pass
        if time.monotonic() > end:
            return False
        time.sleep(0.05)


def test_a_build_past_its_timeout_fails_like_localbuilder_and_the_pool_goes_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # slow on purpose (60 s against 0.05 s), not a real build, which a fast host may finish in
    # time; TVM's timer starts in the worker once the candidate is unpickled, so a slow host
    # only makes the build later, never faster
    expected = [(None, "LocalBuilder: Timeout, killed after 0.05 seconds")]
    # the timeout is set after the start-up check, which runs under it (a loaded host may stall
    # even that check past 0.05 s)
    stock = compat.ms.builder.LocalBuilder(max_workers=1, timeout_sec=30,
                                           f_build=slow_build(60.0))
    stock.timeout_sec = 0.05
    assert [(r.artifact_path, r.error_msg) for r in stock.build(_inputs(1))] == expected
    # the warm builder builds with msviz.compat.fast_build, read at each batch: made slow here;
    # the pids of the workers it starts are noted as they start
    monkeypatch.setattr(compat, "fast_build", slow_build(60.0))
    pids: list[int] = []
    start = PopenWorker._start

    def noting_start(worker: PopenWorker) -> None:
        start(worker)
        pids.append(worker._proc.pid)

    monkeypatch.setattr(PopenWorker, "_start", noting_start)
    builder = WarmLocalBuilder(max_workers=1, timeout_sec=0.05)
    try:
        for _ in range(2):  # the timed-out worker is restarted by the pool
            results = builder.build(_inputs(1))
            assert [(r.artifact_path, r.error_msg) for r in results] == expected
        assert builder.pools_started == 1 and builder.batches == 2
        # each batch ran in its own worker, and the pool killed (and reaped) each one
        assert len(pids) == 2
        assert all(_ended(pid) for pid in pids)
    finally:
        builder.reset()
