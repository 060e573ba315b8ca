"""A catalogue model of real structure tuned end to end at a tiny budget: BERT-base's encoder
(12 layers sharing one weight set, so 11 tasks, one called 36 times), one trial per task, at
sequence length 8 (the catalogue's 32 has the same tasks and weights; 8 runs a quarter of the
FLOP in every measurement and in the end-to-end check's runs)."""

from __future__ import annotations

import pytest

from msviz import models
from msviz.bench import draws
from msviz.engine import Session
from tests.engine.conftest import TINY


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Session:
    work_dir = tmp_path_factory.mktemp("bert") / "wd"
    model = models.build("bert-base", input_shape=(8, 768))
    # one batch of one trial per task: exactly the round-robin warm-up
    session = Session(model, work_dir=work_dir, max_trials=11, trials_per_batch=1,
                      **{**TINY, "init_min_unmeasured": 4, "population_size": 8})
    with pytest.MonkeyPatch.context() as patch:
        # the end-to-end check in one fresh process: what several draws make of their timings
        # is tested on the MLP (tests/engine/test_model.py)
        patch.setattr(draws, "DEFAULT_DRAWS", 1)  # the worker reads it when it checks
        session.start()
        assert session.wait(1500) == "finished", session.end_reason
    return session


def test_every_task_tuned_once(bert: Session) -> None:
    tasks = bert.tasks
    assert len(tasks) == 11
    assert max(t.weight for t in tasks) == 36  # the 12 layers' matmuls of one shape
    trials = bert.trials
    assert trials.groupby("task").size().to_dict() == {t.name: 1 for t in tasks}
    # every task has a working kernel, so the tuned model falls back to none
    assert trials["latency_us"].notna().all()


def test_end_to_end_matches_the_untuned_build(bert: Session) -> None:
    e2e = bert.end_to_end
    assert e2e is not None
    assert (e2e["match"], e2e["fallback"], e2e["error"]) == (True, [], None)
    assert e2e["tuned_us"] > 0 and e2e["untuned_us"] > 0
    # the check compiled the work dir with stock compile_relax and compared it with the untuned
    # build on random inputs: tests/engine/test_model.py checks that comparison on the MLP
