"""The cost model trains on one thread while its training set is small, on the session's
threads from ``ONE_THREAD_BELOW`` samples on (msviz.engine.measure.callbacks)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msviz import compat
from msviz.engine.measure.callbacks import ONE_THREAD_BELOW, training_threads


def test_training_threads_by_size() -> None:
    assert ONE_THREAD_BELOW == 512
    assert [training_threads(n, 2) for n in (0, 4, 511, 512, 5000)] == [1, 1, 1, 2, 2]
    assert [training_threads(n, 16) for n in (100, 512)] == [1, 16]
    assert training_threads(10_000, 1) == 1 and training_threads(10_000, 0) == 1


def test_a_tiny_session_trains_its_model_on_one_thread(tmp_path: Path,
                                                       tiny_session: Any) -> None:
    """A real session of 8 trials on 2 threads: its XGBoost model, trained after each batch,
    was trained (and predicts) on one thread, where MetaSchedule's would use the session's 2."""
    session = tiny_session(tmp_path / "wd", max_trials=8, trials_per_batch=4, num_threads=2)
    session.start()
    assert session.wait(300) == "finished"
    model = session._worker.shared.cost_model
    assert isinstance(model, compat.ms.cost_model.XGBModel)
    assert model.data_size == 8 and model.booster is not None
    assert model.config.nthread == 1
    assert model.booster.num_boosted_rounds() > 0
    updates = session.events.of_kind("cost_model_updated")
    assert [e["samples"] for e in updates] == [4, 8]
