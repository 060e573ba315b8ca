"""Fixtures for the engine: tiny real-TVM sessions on GMM-0 (128x128x128 matmul, CPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

#: Knobs small enough for a 2-core machine shared with other tuning jobs.
TINY: dict[str, Any] = {
    "population_size": 16,
    "init_min_unmeasured": 8,
    "genetic_num_iters": 1,
    # every generation evolves, the first too (the msviz preset's task warm-up, one batch of
    # random picks, is tested in test_task_warmup.py)
    "cost_model_task_warmup": 0,
    "evaluator_config": {"number": 1, "repeat": 1, "min_repeat_ms": 0},
    "seed": 1,
}


def make_tiny_session(work_dir: Path, **kw: Any) -> Any:
    """A GMM-0 session with the TINY knobs (override any of them with ``kw``)."""
    from msviz.engine import Session

    options = {**TINY, "max_trials": 8, "trials_per_batch": 4, **kw}
    return Session("GMM-0", work_dir=work_dir, **options)


@pytest.fixture
def tiny_session() -> Any:
    """``tiny_session(work_dir, **kw)`` makes a GMM-0 session with the TINY knobs."""
    return make_tiny_session


@pytest.fixture(scope="session")
def stepped(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A session driven like a script: stepped by generation and batch, paused, resumed.

    Returns the finished session and the states ``wait()`` returned after each control.
    """
    session = make_tiny_session(tmp_path_factory.mktemp("stepped") / "wd")
    seen = []
    assert session.step("generation") is True  # from idle: starts, pauses after design spaces
    seen.append(session.wait(300))
    for _ in range(3):  # initial population, generation 0, generation 1
        session.step("generation")
        seen.append(session.wait(120))
    session.step("batch")  # the pick, then build + run + cost model update
    seen.append(session.wait(120))
    session.resume()
    session.pause()
    seen.append(session.wait(120))
    session.resume()
    seen.append(session.wait(300))
    return session, seen


def batch_column(session: Any, max_trials: int, per_batch: int, done: int = 0,
                 first_batch: int = 0) -> list[int]:
    """The batch of each trial this session measured, built from its ``picked`` events.

    ``done`` trials were in the work dir before, in batches ``0 .. first_batch - 1``. Checks
    each pick on the way: a batch asks for ``min(per_batch, trials left)`` and gets 1 to that
    many. It may get fewer: ``PickWithEpsGreedy`` (like the C++) drops a random pick that an
    earlier pick of the same batch took, so batch sizes depend on the cost model, and so on
    measured times.
    """
    column: list[int] = []
    for batch, picked in enumerate(session.events.of_kind("picked"), start=first_batch):
        assert picked["requested"] == min(per_batch, max_trials - done), picked
        size = len(picked["candidates"])
        assert 1 <= size <= picked["requested"], picked
        assert picked["by_score"] + picked["by_random"] == size
        column += [batch] * size
        done += size
    assert done == max_trials
    return column
