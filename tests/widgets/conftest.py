"""Fixtures for widget tests: real runs and a real (tiny) msviz session."""

from __future__ import annotations

from pathlib import Path

import pytest

import msviz


@pytest.fixture(scope="session")
def stock_run(stock_work_dirs: dict[str, Path]) -> msviz.Run:
    """The stock GMM run (8 ok trials, 4 build timeouts)."""
    return msviz.open(stock_work_dirs["GMM"])


@pytest.fixture(scope="session")
def tuned_session(tmp_path_factory: pytest.TempPathFactory) -> msviz.Session:
    """A finished msviz session: GMM-0, 16 trials in 2 batches (with sidecar columns)."""
    session = msviz.Session(
        "GMM-0", work_dir=tmp_path_factory.mktemp("tuned") / "wd", max_trials=16,
        trials_per_batch=8, population_size=16, init_min_unmeasured=8, genetic_num_iters=1,
        cost_model_task_warmup=8,  # the first batch a warm-up, the second evolved
        seed=3,
    )
    session.start()
    assert session.wait(300) == "finished"
    return session
