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
                           cost_model_task_warmup=None,  # the preset's (TINY sets 0)
                           # random warm-up picks (ranked ones: the test below), so the
                           # batches' sizes and the counts here do not depend on the model
                           task_warmup_ranked=False)
    session.start()
    assert session.wait(600) == "finished"
    assert _generations(session) == expected
    assert len(session.trials) == trials


def test_a_ranked_warmup_picks_the_best_scored_fresh_samples(tmp_path: Path,
                                                             tiny_session: Any) -> None:
    """``task_warmup_ranked``: once the cost model is trained (after the first batch here), a
    warm-up generation still runs no genetic iteration but picks its fresh samples by score:
    the by-score picks are the top-scored fresh samples of its one scoring pass."""
    session = tiny_session(tmp_path / "wd", population_size=32, init_min_unmeasured=8,
                           max_trials=12, trials_per_batch=4, cost_model_task_warmup=16,
                           task_warmup_ranked=True, eps_greedy=0.0)
    session.start()
    assert session.wait(600) == "finished"
    events = session.events.snapshot()
    inits = [e for e in events if e.kind == "initial_population"]
    gens = [e for e in events if e.kind == "generation"]
    picked = [e for e in events if e.kind == "picked"]
    # no model before the first batch: a random warm-up; then ranked ones, all one scoring each
    assert [(e["task_warmup"], e["warmup_ranked"]) for e in inits] == [
        (True, False), (True, True), (True, True)]
    assert [e["iteration"] for e in gens] == [0, 0, 0]
    assert [(e["by_score"], e["by_random"]) for e in picked] == [(0, 4), (4, 0), (4, 0)]
    for init, gen, pick in list(zip(inits, gens, picked))[1:]:
        fresh_scores = sorted(gen["scores"][init["from_database"]:], reverse=True)
        got = sorted((c["predicted_score"] for c in pick["candidates"]), reverse=True)
        assert got == pytest.approx(fresh_scores[:4], abs=1e-6)  # events round to 6 places
