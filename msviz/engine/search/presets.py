"""Search knobs and the named presets that fill them (``"msviz"`` default, ``"stock"``).

The knobs and their stock defaults are those of MetaSchedule's ``EvolutionarySearch``
(``evolutionary_search.cc``) plus six that stock MetaSchedule fixes elsewhere or lacks:

* ``cost_model_warmup``: ``XGBModel(num_warmup_samples=...)``. Stock is 100: until 100 trials are
  measured the model returns uniform random scores, so the first batches are picked at random.
  msviz uses 0 (train from the first batch), which finds fast kernels sooner.
* ``eps_greedy_at_least_one``: stock rounds ``trials_per_batch * eps_greedy`` down, so a batch of
  16 with the stock 5% picks no random candidate at all; msviz picks at least one.
* ``cost_model_task_warmup``: samples *of this task* the cost model must hold before a
  generation evolves with it. Until then the model has seen too little of the task's workload
  for its scores to rank more than noise, and MetaSchedule's genetic iterations (about half of a
  generation's time, the scoring the other half) buy nothing over random picks: such a
  generation samples ``max(init_min_unmeasured, 2 * batch)`` fresh schedules and picks at random
  from them. Stock is 0 (no such warm-up); msviz uses 16: one batch of msviz's default 16 (or
  of 64), two of 8. A warm-up batch costs a fraction of a generation (a model's round-robin
  warm-up, a batch per task, gains most); ``benchmarks/model_vs_stock.py`` measured 1 and 16.
* ``task_warmup_ranked``: a task warm-up generation still ranks its fresh samples with the
  shared cost model once that model is trained (on other tasks' measurements, as stock's one
  ``XGBModel`` learns from every task) and picks the best-scored, with no genetic iterations:
  a task's first batch is then chosen by what the other tasks taught the model, at the cost of
  one scoring pass over a few dozen samples. Off, warm-up picks are random. msviz turns it on:
  ``benchmarks/model_vs_stock.py --model resnet18 --trials 160 --batch 16 --seeds 2 --configs
  msviz-unranked msviz-ranked`` (one batch for each of 10 tasks) found a faster best for every
  one of the 8 conv2d tasks, with both seeds (1.0-2.8x; 16 of 16 pairs).
* ``sample_to_minimum_after``: once the cost model has trained on this many samples of the task,
  a generation samples only ``init_min_unmeasured`` fresh schedules, where stock fills the
  population with them (``population_size`` minus the database's picks, ~410 of 512); the
  genetic iterations still make ``population_size`` children each. 0 (stock, and msviz's
  default) never does. Sampling and scoring those fresh schedules is ~20% of a generation, and
  in msviz's resnet-block runs at 160 trials (2 seeds) every score pick from the task's fourth
  batch on descended from a database record, none from a fresh sample (MetaSchedule PR #10163
  made the same cut on GPUs). Yet with 48 the same runs (``benchmarks/time_to_quality.py
  --model resnet-block --trials 160 --batch 16 --seeds 2``) were 12-17% faster and found no
  better kernel once it took effect (best 10.6 us at batch 4 and 9.1 us at batch 1, where the
  full population went on to 8.4 and 7.3 us): the fresh samples keep the search exploring. So
  it stays a knob, off.
* ``skip_db_measured``: stock evolution only skips schedules measured *in this run*, so a run that
  continues a work dir re-measures schedules the database already holds. msviz skips them.
* ``sibling_carry``: carried schedules a task's first batch measures from its siblings in the
  same run (the same operator at another shape, already tuned:
  :mod:`msviz.engine.tuning.sibling_carry`). Stock starts every task from random samples (0).

``preset="stock"`` reproduces MetaSchedule's choices exactly.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["PRESETS", "SearchKnobs", "knobs_for"]


#: The largest value of each count knob a session accepts (MetaSchedule's defaults are far
#: below: population 2048, 4 iterations).
KNOB_LIMITS = {"sibling_carry": 4096, "population_size": 65536, "init_min_unmeasured": 65536, "max_fail_count": 10000,
               "genetic_num_iters": 1000, "genetic_max_fail_count": 1000,
               "num_empty_iters_before_early_stop": 10000}


@dataclass(frozen=True)
class SearchKnobs:
    """The knobs of the evolutionary search (names and stock defaults as in MetaSchedule).

    Parameters
    ----------
    population_size : int
        Schedules per genetic iteration.
    init_measured_ratio : float
        Share of the population taken from the best measured records, in [0, 1].
    init_min_unmeasured : int
        Fewest fresh random samples a generation needs, or the search ends (>= 1).
    max_fail_count : int
        Sampling rounds that may produce nothing before the initial sampling gives up (>= 1).
    genetic_num_iters : int
        Genetic iterations per generation.
    genetic_mutate_prob : float
        Probability that a child is a mutation (else a copy of its parent), in [0, 1].
    genetic_max_fail_count : int
        Retries for one child before it becomes a copy of its parent.
    eps_greedy : float
        Share of each batch picked at random from the fresh samples, in [0, 1].
    num_empty_iters_before_early_stop : int
        Generations in a row that pick nothing new before the search ends.
    cost_model_warmup : int
        Measured samples before the XGBoost model's scores are used (random before).
    cost_model_task_warmup : int
        Measured samples of this task before a generation evolves with the cost model; before,
        it samples ``max(init_min_unmeasured, 2 * batch)`` fresh schedules and picks at random.
    task_warmup_ranked : bool
        During a task warm-up, pick the fresh samples the trained cost model scores best
        (no genetic iterations) instead of at random.
    sample_to_minimum_after : int
        Measured samples of this task after which a generation samples only
        ``init_min_unmeasured`` fresh schedules (0: never; stock fills the population).
    skip_db_measured : bool
        Never pick a schedule the database already holds (stock: only this run's).
    eps_greedy_at_least_one : bool
        Pick at least one candidate at random per batch when ``eps_greedy > 0`` (stock rounds
        ``batch * eps_greedy`` down, to 0 for a batch of 16).
    sibling_carry : int
        Schedules of sibling tasks (same operator, another shape, this run) carried into a
        task's first batch, at most (0: none).
    """

    population_size: int = 512
    init_measured_ratio: float = 0.2
    init_min_unmeasured: int = 50
    max_fail_count: int = 5
    genetic_num_iters: int = 4
    genetic_mutate_prob: float = 0.85
    genetic_max_fail_count: int = 10
    eps_greedy: float = 0.05
    num_empty_iters_before_early_stop: int = 5
    cost_model_warmup: int = 100
    cost_model_task_warmup: int = 0
    task_warmup_ranked: bool = False
    sample_to_minimum_after: int = 0
    skip_db_measured: bool = False
    eps_greedy_at_least_one: bool = False
    sibling_carry: int = 0

    def __post_init__(self) -> None:
        # Checked here, so a Session refuses a bad knob when it is made, not when it starts.
        for name in ("init_measured_ratio", "genetic_mutate_prob", "eps_greedy"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    0.0 <= float(value) <= 1.0):
                raise ValueError(
                    f"search knob {name} must be a number within [0, 1], got {value!r}")
        for name, high in KNOB_LIMITS.items():  # a bundle's knobs are untrusted input
            value = getattr(self, name)
            if isinstance(value, int) and not isinstance(value, bool) and value > high:
                raise ValueError(
                    f"search knob {name}={value:,} is beyond msviz's range (at most {high:,}; "
                    "its memory and time grow with it): choose a smaller value")
        for name, low in (
            ("population_size", 1),
            ("init_min_unmeasured", 1),  # 0: no fresh samples, the search ends at once
            ("max_fail_count", 1),  # 0: the initial sampling never runs, the search ends
            ("genetic_num_iters", 0),
            ("genetic_max_fail_count", 0),
            ("num_empty_iters_before_early_stop", 0),
            ("cost_model_warmup", 0),
            ("cost_model_task_warmup", 0),
            ("sample_to_minimum_after", 0),
            ("sibling_carry", 0),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"search knob {name} must be an int >= {low}, got {value!r}")
        for name in ("task_warmup_ranked", "skip_db_measured", "eps_greedy_at_least_one"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ValueError(f"search knob {name} must be True or False, got {value!r}")

    def replace(self, **changes: Any) -> SearchKnobs:
        """A copy with some knobs changed; unknown names raise TypeError."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(
                f"unknown search knob(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return dataclasses.replace(self, **changes)


#: Named presets: knob values that differ from MetaSchedule's stock defaults.
PRESETS: dict[str, dict[str, Any]] = {
    "stock": {},
    "msviz": {"cost_model_warmup": 0, "cost_model_task_warmup": 16, "task_warmup_ranked": True,
              "skip_db_measured": True, "eps_greedy_at_least_one": True, "sibling_carry": 8},
}


def knobs_for(preset: str, **overrides: Any) -> SearchKnobs:
    """The knobs of a preset, with explicit overrides (``None`` values are ignored).

    Parameters
    ----------
    preset : str
        ``"msviz"`` (default choices that find better kernels sooner) or ``"stock"``.
    **overrides
        Knob values that win over the preset's.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
    values = dict(PRESETS[preset])
    values.update({k: v for k, v in overrides.items() if v is not None})
    return SearchKnobs().replace(**values)
