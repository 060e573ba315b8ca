"""The genetic iteration of the evolutionary search: parents drawn by score, mutators by
probability, and each child made by ``MutatorApply`` and a replay (``f_find_candidate`` of
``evolutionary_search.cc``).

:func:`mutate` is :class:`~msviz.engine.search.evolution.EvolutionarySearch`'s ``_mutate``,
bound in the class as it is (no wrapper frame: it calls the mutators once per try);
:mod:`msviz.engine.search.evolution` holds the rest of the search, the loop that calls it once
per genetic iteration, and clamps the cost model's scores with :func:`normalized_scores` too.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from msviz import compat
from msviz.engine.search.candidates import Candidate

__all__ = ["mutate", "mutator_sampler", "normalized_scores"]

_SEED_MAX = 2**31 - 1


def _mutator_name(mutator: Any) -> str:
    return type(mutator).__name__


def normalized_scores(scores: Any) -> np.ndarray:
    """Scores clamped to >= 0, NaN as 0 (the C++'s ``std::max(0.0, score)`` does both)."""
    out = np.asarray(scores, dtype="float64")
    return np.where(out > 0.0, out, 0.0)  # NaN > 0 is False


def mutator_sampler(mutators: list[tuple[Any, float]],
                    mutate_prob: float) -> tuple[list[Any], np.ndarray]:
    """Mutator sampler: "none" with 1 - p, each mutator with p * its normalized share.

    Parameters
    ----------
    mutators : list of (Mutator, float)
        The space generator's mutators and their probabilities.
    mutate_prob : float
        ``genetic_mutate_prob``: the chance that a child is mutated at all.

    Returns
    -------
    choices : list
        ``None`` (keep the parent) then the mutators.
    cumulative : array of float
        The choices' cumulative masses.
    """
    masses = [1.0 - mutate_prob]
    choices: list[Any] = [None]
    mass_sum = sum(p for _, p in mutators) if mutate_prob > 0 else 0.0
    for m, p in mutators if mutate_prob > 0 else []:
        choices.append(m)
        masses.append(p * mutate_prob / (mass_sum if mass_sum else 1.0))
    if mass_sum == 0.0:
        masses = [1.0] + [0.0] * (len(masses) - 1)
    return choices, np.cumsum(masses)


def mutate(
    search: Any, population: list[Candidate], scores: np.ndarray, iteration: int,
    made: dict | None = None,
) -> tuple[list[Candidate], dict[str, int]]:
    """One genetic iteration's children (``f_find_candidate`` of the C++).

    Children are tried in parallel, each with its own random generator, in waves: a wave
    runs every unsettled child until it makes a mutated child, runs out of tries, or draws
    "keep the parent unmutated"; then the keeps are settled in child order (a parent is
    kept once, a later keep of it tries again in the next wave). So the result never
    depends on which thread ran first. Each failed try counts once: ``"mutator X"`` when
    the mutator found nothing to change, else the step (``"trace replay"`` or a postproc)
    that rejected the mutated trace.

    Bound in :class:`~msviz.engine.search.evolution.EvolutionarySearch` as its ``_mutate``
    method, so ``search`` is the search itself.

    Parameters
    ----------
    search : EvolutionarySearch
        Its knobs, mutators, replayer, quarantine, random seeds and threads are used.
    population : list of Candidate
        The previous genetic iteration's population (the parents).
    scores : array of float
        The parents' scores (clamped here with :func:`normalized_scores`).
    iteration : int
        The genetic iteration the children belong to.
    made : dict, optional
        This generation's replays by printed trace (``Applier.apply_once``), shared across
        its iterations.

    Returns
    -------
    children : list of Candidate
    failures : dict of str to int
        Failed tries, by the step that failed.
    """
    knobs = search.knobs
    pop_size = knobs.population_size
    scores = normalized_scores(scores)
    total = float(scores.sum())
    cum = np.cumsum(scores) if total > 0 else np.arange(1, len(scores) + 1, dtype=float)
    total = float(cum[-1])
    mutators, mcum = mutator_sampler(search.mutators, knobs.genetic_mutate_prob)
    apply_mutator = compat.mutator_apply
    failures: Counter[str] = Counter()
    made = {} if made is None else made  # printed trace -> replay (Applier.apply_once)

    def tries(state: dict[str, Any]) -> tuple[str, Any, list[str]]:
        """Try until made / keep / out of tries: (what, value, failed steps)."""
        rng, failed = state["rng"], []
        while state["left"] > 0:
            state["left"] -= 1
            parent_id = int(np.searchsorted(cum, rng.random() * total, side="right"))
            parent_id = min(parent_id, len(population) - 1) % pop_size
            state["parent"] = parent_id
            parent = population[parent_id]
            which = int(np.searchsorted(mcum, rng.random() * mcum[-1], side="right"))
            mutator = mutators[min(which, len(mutators) - 1)]
            if mutator is None:
                return "keep", parent_id, failed
            name = _mutator_name(mutator)
            try:
                new_trace = apply_mutator(
                    mutator, parent.sch.trace, int(rng.integers(1, _SEED_MAX)))
            except Exception as err:  # a mutator that raises: skip this try, say so
                if search.quarantine is None:
                    raise
                search.quarantine.add("mutator", name, err)
                new_trace = None
            if new_trace is None:
                failed.append(f"mutator {name}")
                continue
            sch, shash, step = search.replayer.apply_once(
                new_trace, int(rng.integers(1, _SEED_MAX)), made)
            if sch is None:
                failed.append(str(step))
                continue
            return "made", Candidate(sch, shash, parent.design_space, "mutated", parent_id,
                                     name, iteration, parent.ancestor_line), failed
        return "out", state["parent"], failed

    def copy_of(i: int, origin: str) -> Candidate:
        p = population[i]
        return Candidate(p.sch, p.shash, p.design_space, origin, i, None, iteration,
                         p.ancestor_line)

    states = [{"rng": np.random.default_rng(seed), "left": knobs.genetic_max_fail_count + 1,
               "parent": -1} for seed in search._seeds(pop_size)]
    children: list[Candidate | None] = [None] * pop_size
    kept: set[int] = set()
    todo = list(range(pop_size))
    while todo:
        outcomes = search._map(tries, [states[i] for i in todo])
        again = []
        for i, (what, value, failed) in zip(todo, outcomes):  # settled in child order
            failures.update(failed)
            if what == "made":
                children[i] = value
            elif what == "out":
                children[i] = copy_of(value, "copied")
            elif value not in kept:
                kept.add(value)
                children[i] = copy_of(value, "kept")
            elif states[i]["left"] > 0:
                again.append(i)
            else:
                children[i] = copy_of(value, "copied")
        todo = again
    return [c for c in children if c is not None], dict(failures)
