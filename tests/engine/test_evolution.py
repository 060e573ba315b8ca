"""The evolutionary-search port: knobs and defaults as MetaSchedule's, the picking rules."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from msviz import compat
from msviz.engine.search.evolution import Candidate, EvolutionarySearch
from msviz.engine.search.presets import PRESETS, SearchKnobs, knobs_for


def test_stock_preset_equals_metaschedule_defaults() -> None:
    stock = compat.ms.search_strategy.EvolutionarySearch()
    knobs = knobs_for("stock")
    for f in dataclasses.fields(SearchKnobs):
        if hasattr(stock, f.name):
            assert getattr(knobs, f.name) == pytest.approx(getattr(stock, f.name)), f.name
    assert knobs.num_empty_iters_before_early_stop == 5
    assert knobs.cost_model_warmup == 100  # XGBModel's num_warmup_samples
    assert knobs.skip_db_measured is False
    assert knobs.eps_greedy_at_least_one is False
    assert knobs.cost_model_task_warmup == 0  # stock has no task warm-up
    assert knobs.task_warmup_ranked is False
    assert knobs.sample_to_minimum_after == 0  # stock fills the population with fresh samples
    assert knobs.sibling_carry == 0  # stock starts every task from random samples
    assert PRESETS["msviz"] == {"cost_model_warmup": 0, "cost_model_task_warmup": 16,
                                "task_warmup_ranked": True, "skip_db_measured": True,
                                "eps_greedy_at_least_one": True, "sibling_carry": 8}


@pytest.mark.parametrize("name", ["init_measured_ratio", "genetic_mutate_prob", "eps_greedy"])
def test_probabilities_must_be_in_unit_range(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        SearchKnobs(**{name: 1.5})


def _search(knobs: SearchKnobs) -> Any:
    search = EvolutionarySearch.__new__(EvolutionarySearch)
    search.knobs = knobs
    search.measured = set()
    search.num_threads = 1
    search.mutators = []
    search.rng = np.random.default_rng(0)
    return search


def _cands(n: int, start: int = 0) -> list[Candidate]:
    return [Candidate(None, start + i, 0, "fresh", score=1.0 - i / 100) for i in range(n)]


def test_eps_greedy_pick_shares_and_skips_measured() -> None:
    search = _search(SearchKnobs(eps_greedy=0.25))
    bests, rands = _cands(10), _cands(10, start=100)
    picks = search.pick_with_eps_greedy(rands, bests, 8)
    assert [c.pick for c in picks] == ["score"] * 6 + ["random"] * 2
    assert [c.shash for c in picks[:6]] == list(range(6))
    again = search.pick_with_eps_greedy(rands, bests, 8)  # the same bests are measured now
    assert all(c.shash not in {p.shash for p in picks} for c in again)
    assert len(again) < 8


def test_eps_greedy_falls_back_when_a_side_runs_out() -> None:
    search = _search(SearchKnobs(eps_greedy=0.5))
    picks = search.pick_with_eps_greedy(_cands(2, start=50), _cands(1), 4)
    assert [c.pick for c in picks] == ["score", "random", "random"]


@pytest.mark.parametrize(("preset", "eps", "expected"), [
    ("msviz", 0.05, 1),  # int(16 * 0.05) == 0, raised to one
    ("stock", 0.05, 0),  # MetaSchedule's rounding kept
    ("msviz", 0.0, 0),  # no epsilon, no random pick
    ("msviz", 0.25, 4),  # already >= 1: unchanged
])
def test_eps_greedy_random_picks_per_batch_of_16(preset: str, eps: float, expected: int) -> None:
    search = _search(knobs_for(preset, eps_greedy=eps))
    picks = search.pick_with_eps_greedy(_cands(20, start=100), _cands(20), 16)
    assert len(picks) == 16
    assert [c.pick for c in picks].count("random") == expected


def test_nan_scores_count_as_zero() -> None:
    from msviz.engine.search.mutation import normalized_scores

    got = normalized_scores([float("nan"), -1.0, 0.5, 0.0, 3.0])
    assert got.tolist() == [0.0, 0.0, 0.5, 0.0, 3.0]


def test_parents_with_nan_scores_are_never_picked() -> None:
    """Parent sampling with partly-NaN scores: only parents with a positive score are drawn."""
    search = _search(SearchKnobs(population_size=8, genetic_mutate_prob=0.0))
    population = _cands(8)
    nan = float("nan")
    scores = np.array([nan, 1.0, nan, nan, 2.0, nan, nan, nan])
    children, failures = search._mutate(population, scores, 1)
    assert len(children) == 8 and failures == {}
    assert {c.parent for c in children} == {1, 4}
    assert sorted(c.origin for c in children if c.origin == "kept") == ["kept", "kept"]
