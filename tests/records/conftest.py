"""Fixtures for the records tests: a tiny msviz run of GMM-0 for another target than the stock
work dirs' (a generic x86-64 CPU: no ``mcpu``), with its sidecar and one re-measurement."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.conftest import make_tiny_session

#: The target of :func:`generic_work_dir`: LLVM's baseline x86-64 (the stock work dirs are
#: tuned for this machine's CPU, ``compat.make_target("llvm")``).
GENERIC_TARGET = {"kind": "llvm", "num-cores": 2}


@pytest.fixture(scope="session")
def generic_work_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An msviz session's work dir: GMM-0, 8 trials for :data:`GENERIC_TARGET`; its best
    trial re-measured once (a ``remeasured_secs`` list in the sidecar)."""
    work_dir = tmp_path_factory.mktemp("generic") / "gmm_generic"
    session = make_tiny_session(work_dir, target=GENERIC_TARGET)
    session.start()
    assert session.wait(600) == "finished", session.end_reason
    best = int(session.trials["latency_us"].idxmin())
    session.remeasure(best, repeats=2).result(timeout=300)
    return work_dir
