"""The measuring service (:mod:`msviz.engine.measure.service`) owns the process-wide lock: a
tuning session, a shape cover's cross-measurement, ``msviz.coverage``'s untuned times and a
reproduce's re-timing, all started at once in one process, never build or run at the same time.
Every build and run is recorded as an interval (made a little longer on purpose, so overlaps
cannot hide between them); with the lock bypassed the same recorder finds overlaps."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import msviz
from msviz.engine.measure import service as service_mod
from msviz.engine.measure.service import MeasuringService
from msviz.workflows.reproduce import retime_best

TINY = dict(population_size=16, init_min_unmeasured=8, genetic_num_iters=1,
            cost_model_task_warmup=0,
            evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})
#: Seconds each recorded build and run is held open: far longer than the gap between two
#: threads' calls, so a missing lock shows as an overlap on any host.
HOLD = 0.2


class Recorder:
    """Wraps the service's build and run: each call an interval ``(thread, start, end)``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.intervals: list[tuple[str, float, float]] = []
        self._lock = threading.Lock()
        for name in ("_build", "_run"):
            original = getattr(MeasuringService, name)
            monkeypatch.setattr(MeasuringService, name, self._wrap(original))

    def _wrap(self, original):
        def recorded(service, *args, **kwargs):
            start = time.monotonic()
            time.sleep(HOLD / 2)
            try:
                return original(service, *args, **kwargs)
            finally:
                time.sleep(HOLD / 2)
                with self._lock:
                    self.intervals.append((threading.current_thread().name, start,
                                           time.monotonic()))
        return recorded

    def overlaps(self) -> list[tuple]:
        """Pairs of intervals of two threads that overlap (computed with numpy: every pair)."""
        if not self.intervals:
            return []
        names = [i[0] for i in self.intervals]
        start = np.array([i[1] for i in self.intervals])
        end = np.array([i[2] for i in self.intervals])
        both = (start[:, None] < end[None, :]) & (start[None, :] < end[:, None])
        return [(self.intervals[a], self.intervals[b])
                for a, b in zip(*np.nonzero(np.triu(both, k=1)), strict=True)
                if names[a] != names[b]]


def _together(jobs: dict) -> dict:
    """Run each job on a thread of its own, started at once; their results (or errors)."""
    barrier = threading.Barrier(len(jobs))
    out: dict = {}

    def run(name, job):
        barrier.wait()
        try:
            out[name] = job()
        except BaseException as err:  # reported by the test
            out[name] = err

    threads = [threading.Thread(target=run, args=item, name=item[0]) for item in jobs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(900)
    return out


@pytest.mark.slow
def test_session_cover_coverage_and_reproduce_never_measure_at_once(
        stock_work_dirs: dict[str, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder(monkeypatch)
    gmm = stock_work_dirs["GMM"]
    session = msviz.Session("GMM-0", max_trials=8, trials_per_batch=4, seed=1,
                            work_dir=tmp_path / "session", **TINY)
    family = msviz.shapes("GMM", dim="M", sizes=[16, 32])
    cover = msviz.tune_shapes(family, work_dir=tmp_path / "cover", trials=4, trials_per_batch=4,
                              k=1, seed=1, **TINY)

    def tune():
        session.start()
        return session.wait(600)

    out = _together({
        "session": tune,
        "cover": lambda: cover.run().state,
        "coverage": lambda: msviz.coverage("GMM-0", gmm),
        "reproduce": lambda: retime_best(msviz.open(gmm)),
    })
    assert out["session"] == "finished" and out["cover"] == "finished", out
    assert out["coverage"].tasks[0].untuned_us is not None, out["coverage"]
    assert out["reproduce"]["here_us"].notna().all(), out["reproduce"]
    # every workflow measured, in turns
    threads = {name for name, _, _ in recorder.intervals}
    assert {"coverage", "reproduce"} <= threads and len(threads) >= 4, threads
    assert recorder.overlaps() == []


def test_without_the_lock_the_recorder_sees_overlaps(stock_work_dirs: dict[str, Path],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: the service's lock replaced by one that holds nothing, the
    same two workflows measure at the same time."""
    recorder = Recorder(monkeypatch)
    monkeypatch.setattr(service_mod, "MEASURING_LOCK", contextlib.nullcontext())
    gmm = stock_work_dirs["GMM"]
    out = _together({"coverage": lambda: msviz.coverage("GMM-0", gmm),
                     "reproduce": lambda: retime_best(msviz.open(gmm))})
    assert not any(isinstance(v, BaseException) for v in out.values()), out
    assert recorder.overlaps() != []
