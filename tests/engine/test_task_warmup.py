"""A task's first batches are a warm-up (preset "msviz"): random picks from a few fresh samples,
no genetic iterations, until the cost model has trained on 16 samples of the task; stock has no
such batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def _generations(session: Any) -> list[dict]:
    """Per generation: its initial population event and how many genetic iterations it ran."""
    out: list[dict] = []
    for e in session.events.snapshot():
        if e.kind == "initial_population":
            out.append({"task_warmup": e["task_warmup"], "fresh": e["fresh"],
                        "from_database": e["from_database"], "scored": 0})
        elif e.kind == "generation":
            out[-1]["scored"] += 1
    return out


@pytest.mark.parametrize(("preset", "trials", "expected"), [
    # population 32, init_min_unmeasured 8, batch 4: until the model holds 16 samples of the
    # task (4 batches), a warm-up samples max(8, 2 x 4) = 8 fresh schedules, next to the
    # database's best (up to 32 x 0.2 = 6 records), and scores once, at random; then 32 minus
    # the database's picks, and 1 + genetic_num_iters scorings
    ("msviz", 24, [{"task_warmup": True, "fresh": 8, "from_database": 0, "scored": 1},
                   {"task_warmup": True, "fresh": 8, "from_database": 4, "scored": 1},
                   {"task_warmup": True, "fresh": 8, "from_database": 6, "scored": 1},
                   {"task_warmup": True, "fresh": 8, "from_database": 6, "scored": 1},
                   {"task_warmup": False, "fresh": 26, "from_database": 6, "scored": 2},
                   {"task_warmup": False, "fresh": 26, "from_database": 6, "scored": 2}]),
    ("stock", 8, [{"task_warmup": False, "fresh": 32, "from_database": 0, "scored": 2},
                  {"task_warmup": False, "fresh": 28, "from_database": 4, "scored": 2}]),
])
def test_first_batches_are_a_warmup_in_preset_msviz(tmp_path: Path, tiny_session: Any,
                                                    preset: str, trials: int,
                                                    expected: list[dict]) -> None:
    session = tiny_session(tmp_path / "wd", preset=preset, population_size=32,
                           init_min_unmeasured=8, max_trials=trials, trials_per_batch=4,
                           cost_model_task_warmup=None)  # the preset's (TINY sets 0)
    session.start()
    assert session.wait(600) == "finished"
    assert _generations(session) == expected
    assert len(session.trials) == trials
