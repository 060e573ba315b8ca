"""A step-able Python port of MetaSchedule's ``EvolutionarySearch`` (``evolutionary_search.cc``).

Only the loop is ported; every part it drives is MetaSchedule's own: the design-space traces,
``Trace`` replay into a ``Schedule``, the postprocs, the mutators (``MutatorApply``), the cost
model (``XGBModel.predict``) and the database (``get_top_k``). One generation is::

    PickBestFromDatabase(pop * init_measured_ratio)       -> "initial_population" (with the next)
    SampleInitPopulation(pop - picked)                    -/
    EvolveWithCostModel: genetic_num_iters + 1 scorings   -> one "generation" stage each
    PickWithEpsGreedy(fresh samples, heap bests, n)       -> "picked"

A task warm-up generation (:meth:`EvolutionarySearch.in_task_warmup`) has no genetic iterations.

:meth:`EvolutionarySearch.generate` is a generator: it yields a :class:`Stage` after each of
these, so the caller can pause, and returns the picked candidates (``None`` when the search ends,
as the C++ does). Replays and mutations of a population run on ``num_threads`` threads (TVM calls
release the GIL). Every random number comes from the search's own generators, seeded from the
session's seed (per child, per sample, and the untrained cost model's uniform scores: see
:meth:`EvolutionarySearch.predict`), never from numpy's global state, so the candidates a run
picks before its first measurement are the same for a seed whatever the thread count (the C++
is not; neither matches the other bit for bit).

A genetic iteration's children (mutator sampling, ``MutatorApply``, replay) are made in
:mod:`msviz.engine.search.mutation`. The same concept drawn: :mod:`msviz.views.evolution`.
"""

from __future__ import annotations

import contextlib
import heapq
from collections import Counter
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from msviz import compat
from msviz.engine.search.applier import Applier
from msviz.engine.search.candidates import (
    Candidate,
    Stage,
    decisions_of,
    pick_with_eps_greedy,
)
from msviz.engine.search.mutation import mutate, normalized_scores
from msviz.engine.search.presets import SearchKnobs
from msviz.engine.search.quarantine import Quarantine
from msviz.engine.search.scoring import FeatureCache
from msviz.trace.spaces import space_key, space_of

__all__ = ["Candidate", "EvolutionarySearch", "Stage", "decisions_of", "normalized_scores"]

_SEED_MAX = 2**31 - 1


class EvolutionarySearch:
    """The evolutionary search of one task, driven one stage at a time.

    Parameters
    ----------
    context : TuneContext
        MetaSchedule's tuning context (its mod, target and initialized space generator; the cost
        model receives it in ``predict``).
    design_spaces : sequence of Schedule
        The design spaces; their traces are simplified as the C++ does.
    database : Database
        Where measured records are read from (``get_top_k``).
    workload : Workload
        The database's workload entry of this task.
    cost_model : CostModel
        Scores candidates (``predict``).
    knobs : SearchKnobs
        Population size, ratios, iterations, probabilities.
    seed : int
        Seed of this search's random numbers.
    num_threads : int
        Threads replaying and mutating schedules.
    line_of : callable, optional
        ``line_of(shash) -> record line or None``, to name the database record a schedule came
        from.
    quarantine : Quarantine, optional
        Where a candidate, postproc or mutator that raises is counted (it is skipped).
    """

    def __init__(
        self,
        context: Any,
        design_spaces: Sequence[Any],
        database: Any,
        workload: Any,
        cost_model: Any,
        knobs: SearchKnobs,
        *,
        seed: int,
        num_threads: int = 1,
        line_of: Any = None,
        quarantine: Quarantine | None = None,
    ) -> None:
        self.context = context
        self.database = database
        self.workload = workload
        self.cost_model = cost_model
        self.knobs = knobs
        self.num_threads = max(1, int(num_threads))
        self.seed = int(seed)
        self.rng = np.random.default_rng(seed)
        self.measured: set[int] = set()
        #: Measured samples of this task the cost model was trained on (:meth:`trained_on`).
        self.task_samples = 0
        #: A tuning library taught the cost model this task's kind: its warm-up ranks by it.
        self.library_ranked = False
        #: Why :meth:`generate` returned None (the search ended), in words.
        self.stop_reason: str | None = None
        self._failures: Counter[str] = Counter()
        self._predict_calls = 0
        self.num_empty_iters = 0
        self._line_of = line_of or (lambda _shash: None)
        self.quarantine = quarantine
        self._pool = ThreadPoolExecutor(self.num_threads, thread_name_prefix="msviz-evo")
        #: Features of the schedules scored so far (:mod:`msviz.engine.search.scoring`).
        self.features = FeatureCache()
        #: Times each step under MetaSchedule's Profiler name (a session's Profile), or not.
        self.timeit: Any = lambda _stage: contextlib.nullcontext()
        self.set_space(context, design_spaces)

    # -- set up -----------------------------------------------------------------------------------

    def set_space(self, context: Any, design_spaces: Sequence[Any]) -> None:
        """Use new design spaces, postprocs and mutators (after the rules changed)."""
        self.context = context
        sg = context.space_generator
        self.design_spaces = [s.trace.simplified(remove_postproc=True) for s in design_spaces]
        self.space_keys = [space_key(trace) for trace in self.design_spaces]
        self.replayer = Applier(context.mod, list(sg.postprocs or []), self.quarantine)
        self._db_made: dict[str, tuple] = {}  # the database's records replayed (new postprocs)
        self.mutators = [(m, float(p)) for m, p in (sg.mutator_probs or {}).items()]

    def close(self) -> None:
        """Stop the worker threads."""
        self._pool.shutdown(wait=True)

    def _seeds(self, n: int) -> list[int]:
        return [int(s) for s in self.rng.integers(1, _SEED_MAX, size=n)]

    def _map(self, fn: Any, items: Sequence[Any]) -> list[Any]:
        if self.num_threads == 1 or len(items) < 2:
            return [fn(x) for x in items]
        return list(self._pool.map(fn, items, chunksize=1))

    @staticmethod
    def _hash(sch: Any) -> int:
        return int(compat.structural_hash(sch.mod))

    # -- the stages -------------------------------------------------------------------------------

    def pick_best_from_database(self, num: int) -> list[Candidate]:
        """``PickBestFromDatabase``: top-k records, replayed with their decisions + postprocs."""
        if num <= 0:
            return []
        records = list(self.database.get_top_k(self.workload, num))
        made, self._db_made = self._db_made, {}  # replays kept for the records still picked

        def one(args: tuple[Any, int]) -> tuple[Candidate | None, str | None]:
            record, seed = args
            sch, shash, failed = self.replayer.apply_once(record.trace, seed, made,
                                                          self._db_made)
            if sch is None:
                return None, failed
            space = space_of(record.trace, self.space_keys)
            line = self._line_of(shash)
            return Candidate(sch, shash, space, "database", ancestor_line=line), None

        return self._count(self._map(one, list(zip(records, self._seeds(len(records))))))

    def sample_init_population(self, num: int) -> list[Candidate]:
        """``SampleInitPopulation``: fresh decisions in random design spaces, ``num`` a round."""
        out: list[Candidate] = []
        fail_count = 0
        num = max(0, num)
        while len(out) < self.knobs.init_min_unmeasured and fail_count < self.knobs.max_fail_count:
            spaces = self.rng.integers(0, len(self.design_spaces), size=num)

            def one(args: tuple[int, int]) -> tuple[Candidate | None, str | None]:
                space, seed = args
                trace = compat.Trace(self.design_spaces[space].insts, {})
                sch, failed = self.replayer.apply(trace, seed)
                if sch is None:
                    return None, failed
                return Candidate(sch, self._hash(sch), int(space), "fresh"), None

            found = self._count(self._map(one, list(zip(spaces, self._seeds(num)))))
            out.extend(found)
            fail_count += not found
            if num == 0:
                break
        return out

    def _count(self, outcomes: list[tuple[Candidate | None, str | None]]) -> list[Candidate]:
        """The candidates made; each failure counted once under the step that failed."""
        self._failures.update(failed for cand, failed in outcomes if cand is None)
        return [cand for cand, _ in outcomes if cand is not None]

    def take_failures(self) -> dict[str, int]:
        """Failures counted since the last call (and forget them)."""
        out, self._failures = dict(self._failures), Counter()
        return out

    def trained_on(self, samples: int) -> None:
        """The cost model was trained on ``samples`` more measured samples of this task."""
        self.task_samples += int(samples)

    def in_task_warmup(self) -> bool:
        """True while the cost model holds fewer samples of this task than
        ``knobs.cost_model_task_warmup`` (its scores would rank noise): a generation then
        samples ``max(init_min_unmeasured, 2 * batch)`` fresh schedules, scores them at random
        and runs no genetic iteration."""
        return self.task_samples < self.knobs.cost_model_task_warmup

    def ranks_in_warmup(self) -> bool:
        """True when a task warm-up ranks its fresh samples with the trained cost model
        (``knobs.task_warmup_ranked``, or :attr:`library_ranked`) instead of picking at random."""
        return self._warmup_ranked() and not self._untrained(model_only=True)

    def _warmup_ranked(self) -> bool:
        return bool(self.knobs.task_warmup_ranked or self.library_ranked)

    def _untrained(self, model_only: bool = False) -> bool:
        """True while an ``XGBModel`` would answer with numpy's *global* random numbers, or
        (unless ``model_only``) an unranked task warm-up ignores the model's scores."""
        if not model_only and self.in_task_warmup() and not self._warmup_ranked():
            return True
        model = self.cost_model
        if not isinstance(model, compat.ms.cost_model.XGBModel):
            return False
        return model.data_size < model.num_warmup_samples or model.booster is None

    def predict(
        self, population: Sequence[Candidate], cache: dict[int, float] | None = None
    ) -> np.ndarray:
        """``PredictNormalizedScore``: the cost model's scores, clamped to >= 0 (NaN as 0).

        With a ``cache`` (one per generation: the model does not change within one), a schedule
        already scored, or met twice in the population, is scored once. Kept parents and
        duplicate children are common, so this saves a large share of feature extraction.

        Before an ``XGBModel`` is trained (and during its warm-up) it returns uniform random
        scores drawn from numpy's global state, which no seed of this search controls; this
        search draws those uniform scores itself, from its seed, the call number and each
        schedule's structural hash, so a run is reproducible for a seed.
        """
        cache = {} if cache is None else cache
        todo: dict[int, Candidate] = {}
        for c in population:
            if c.shash not in cache and c.shash not in todo:
                todo[c.shash] = c
        if todo and self._untrained():
            self._predict_calls += 1
            scores = np.array([
                np.random.default_rng([self.seed, self._predict_calls, shash % 2**63]).random()
                for shash in todo
            ])
            cache.update(zip(todo, normalized_scores(scores).tolist()))
        elif todo:
            scores = self.features.scores(self.cost_model, self.context,
                                          [(shash, c.sch) for shash, c in todo.items()])
            cache.update(zip(todo, normalized_scores(scores).tolist()))
        return np.array([cache[c.shash] for c in population], dtype="float64")

    #: One genetic iteration's children (:func:`msviz.engine.search.mutation.mutate`), bound
    #: as a method as it is: no wrapper frame around the code that mutates.
    _mutate = mutate

    def generate(
        self, num: int, *, generation: int = 0
    ) -> Generator[Stage, None, list[Candidate] | None]:
        """Run one generation, yielding a :class:`Stage` after each step.

        The stages' ``failures`` count each failed try once, in the stage where it happened,
        under the step that failed: ``"trace replay"``, a postproc's class name, or
        ``"mutator <Name>"`` (the mutator found nothing to change):

        * ``initial_population``: records of the database and fresh samples that failed to
          replay or were rejected by a postproc;
        * ``generation`` with ``iteration`` k >= 1: failed tries while mutating iteration
          k - 1's population into iteration k's (a mutated trace that a postproc rejects
          counts under the postproc only);
        * ``generation`` with ``iteration`` 0: always ``{}`` (its population is the initial
          population, whose failures were in the ``initial_population`` event).

        Parameters
        ----------
        num : int
            Candidates to pick (the batch size).
        generation : int
            Number of this generation (for the events).

        Returns
        -------
        picks : list of Candidate or None
            What to measure next; ``[]`` when nothing new was found, ``None`` when the search
            ends (:attr:`stop_reason` says why: too few initial samples, an empty initial
            population, or ``num_empty_iters_before_early_stop`` empty picks).
        """
        knobs = self.knobs
        pop = knobs.population_size
        # A task warm-up generation (cost_model_task_warmup): the model's scores would rank
        # noise, so no genetic iterations, and only as many fresh samples as random picks need.
        warmup = self.in_task_warmup()
        ranked = warmup and self.ranks_in_warmup()
        num_iters = 0 if warmup else knobs.genetic_num_iters
        self.take_failures()
        with self.timeit("EvoSearch/PickBestFromDatabase"):
            best = self.pick_best_from_database(int(pop * knobs.init_measured_ratio))
        num_fresh = pop - len(best)
        if warmup:
            num_fresh = min(num_fresh, max(knobs.init_min_unmeasured, 2 * num))
        elif 0 < knobs.sample_to_minimum_after <= self.task_samples and not self._untrained():
            num_fresh = min(num_fresh, knobs.init_min_unmeasured)
        with self.timeit("EvoSearch/SampleInitPopulation"):
            fresh = self.sample_init_population(num_fresh)
        inits = best + fresh
        yield Stage(
            "initial_population",
            {
                "generation": generation,
                "from_database": len(best),
                "fresh": len(fresh),
                "enough": len(fresh) >= knobs.init_min_unmeasured and bool(inits),
                "task_warmup": warmup,
                "warmup_ranked": ranked,
                "failures": self.take_failures(),
                "candidates": [
                    {**c.lineage(), "decisions": decisions_of(c.sch.trace)} for c in inits
                ],
            },
        )
        if len(fresh) < knobs.init_min_unmeasured:
            self.stop_reason = (
                f"the initial sampling found {len(fresh)} valid fresh schedule(s), fewer than "
                f"init_min_unmeasured={knobs.init_min_unmeasured} (max_fail_count="
                f"{knobs.max_fail_count} sampling rounds without one)")
            return None
        if not inits:
            self.stop_reason = (
                f"the initial population is empty: init_min_unmeasured="
                f"{knobs.init_min_unmeasured} asks for no fresh samples and the database holds "
                "no record of this workload to start from; set init_min_unmeasured >= 1")
            return None
        # EvolveWithCostModel
        exists = set(self.measured)
        heap: list[tuple[float, int, Candidate]] = []
        counter = 0
        population = inits
        score_cache: dict[int, float] = {}
        made: dict[str, tuple] = {}  # this generation's schedules by printed trace
        if num_iters:
            self.replayer.remember(made, inits)
        failures: dict[str, int] = {}
        for iteration in range(num_iters + 1):
            with self.timeit("EvoSearch/Evolve/PredictNormalizedScore"):
                scores = self.predict(population, score_cache)
            added = 0
            for cand, score in zip(population, scores):
                cand.score = float(score)
                if cand.shash in exists:
                    continue
                exists.add(cand.shash)
                added += 1
                counter += 1
                item = (float(score), -counter, cand)
                if len(heap) < num:
                    heapq.heappush(heap, item)
                elif score > heap[0][0]:
                    heapq.heapreplace(heap, item)
            yield Stage(
                "generation",
                {
                    "generation": generation,
                    "iteration": iteration,
                    "size": len(population),
                    "scores": [round(float(s), 6) for s in scores],
                    "best_score": float(scores.max()) if len(scores) else None,
                    "new_in_heap": added,
                    "heap_size": len(heap),
                    "children": [
                        [c.origin, c.parent, c.mutator, c.design_space] for c in population
                    ],
                    "failures": failures,
                },
            )
            if iteration == num_iters:
                break
            with self.timeit("EvoSearch/Evolve/Mutation"):
                population, failures = self._mutate(population, scores, iteration + 1, made)
        bests = [c for _, _, c in sorted(heap, key=lambda t: (-t[0], -t[1]))]
        with self.timeit("EvoSearch/PickWithEpsGreedy"):
            # an unranked warm-up's scores are random: every pick is a random one, so none
            # takes another's; a ranked one picks its best-scored fresh samples
            picks = self.pick_with_eps_greedy(fresh, bests if ranked or not warmup else [], num)
        yield Stage(
            "picked",
            {
                "generation": generation,
                "requested": num,
                "by_score": sum(1 for c in picks if c.pick == "score"),
                "by_random": sum(1 for c in picks if c.pick == "random"),
                "candidates": [
                    {
                        **c.lineage(),
                        "pick": c.pick,
                        "predicted_score": c.score,
                        "decisions": decisions_of(c.sch.trace),
                    }
                    for c in picks
                ],
            },
        )
        if not picks:
            self.num_empty_iters += 1
            if self.num_empty_iters >= knobs.num_empty_iters_before_early_stop:
                self.stop_reason = (
                    f"{self.num_empty_iters} generations in a row found nothing new to measure "
                    f"(num_empty_iters_before_early_stop="
                    f"{knobs.num_empty_iters_before_early_stop})")
                return None
        return picks

    def forget(self, shashes: Sequence[int]) -> None:
        """Count these schedules as unmeasured again (their measurement failed for reasons
        outside the schedule, e.g. a lost runner), so a later generation may pick them."""
        self.measured.difference_update(shashes)

    def pick_with_eps_greedy(
        self, unmeasured: list[Candidate], bests: list[Candidate], num: int
    ) -> list[Candidate]:
        """``PickWithEpsGreedy`` (:func:`~msviz.engine.search.candidates.pick_with_eps_greedy`)
        with this search's knobs, generator and measured schedules."""
        return pick_with_eps_greedy(unmeasured, bests, num, knobs=self.knobs, rng=self.rng,
                                    measured=self.measured)
