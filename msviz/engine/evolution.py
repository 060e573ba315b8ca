"""A step-able Python port of MetaSchedule's ``EvolutionarySearch`` (``evolutionary_search.cc``).

Only the loop is ported; every part it drives is MetaSchedule's own: the design-space traces,
``Trace`` replay into a ``Schedule``, the postprocs, the mutators (``MutatorApply``), the cost
model (``XGBModel.predict``) and the database (``get_top_k``). One generation is::

    PickBestFromDatabase(pop * init_measured_ratio)       -> "initial_population" (with the next)
    SampleInitPopulation(pop - picked)                    -/
    EvolveWithCostModel: genetic_num_iters + 1 scorings   -> one "generation" stage each
    PickWithEpsGreedy(fresh samples, heap bests, n)       -> "picked"

:meth:`EvolutionarySearch.generate` is a generator: it yields a :class:`Stage` after each of
these, so the caller can pause, and returns the picked candidates (``None`` when the search ends,
as the C++ does). Replays and mutations of a population run on ``num_threads`` threads (TVM calls
release the GIL). Random numbers come from numpy seeded per child, so a run is reproducible for a
given seed whatever the thread count (the C++ is not; neither matches the other bit for bit).
"""

from __future__ import annotations

import heapq
import threading
from collections import Counter
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from msviz import compat
from msviz.engine.presets import SearchKnobs

__all__ = ["Candidate", "EvolutionarySearch", "Stage", "decisions_of"]

_SEED_MAX = 2**31 - 1


@dataclass(eq=False)
class Candidate:
    """One schedule of a population, with where it came from (live: holds the Schedule).

    Attributes
    ----------
    sch : Schedule
        The schedule, postprocs applied.
    shash : int
        Structural hash of ``sch.mod`` (the dedup key, as the C++'s module equality).
    design_space : int | None
        Index of the design space it was sampled from (None for database records).
    origin : str
        ``"database"``, ``"fresh"``, ``"mutated"``, ``"kept"`` (unmutated parent) or ``"copied"``
        (every mutation try failed).
    parent : int | None
        Index of its parent in the previous genetic iteration's population.
    mutator : str | None
        Name of the mutator that made it.
    iteration : int
        The genetic iteration it appeared in (0 for the initial population).
    ancestor_line : int | None
        Record line of the database record at the root of its lineage.
    score : float
        The cost model's last (clamped) score.
    """

    sch: Any
    shash: int
    design_space: int | None
    origin: str
    parent: int | None = None
    mutator: str | None = None
    iteration: int = 0
    ancestor_line: int | None = None
    score: float = float("nan")
    pick: str | None = None

    def lineage(self) -> dict[str, Any]:
        """Plain lineage fields (no TVM objects)."""
        return {
            "design_space": self.design_space,
            "origin": self.origin,
            "parent": self.parent,
            "mutator": self.mutator,
            "iteration": self.iteration,
            "ancestor_line": self.ancestor_line,
        }


@dataclass
class Stage:
    """One finished stage of a generation: ``kind`` and plain data for its event."""

    kind: str
    data: dict[str, Any] = field(default_factory=dict)


def decisions_of(trace: Any) -> list[list[Any]]:
    """``[[inst_index, kind, decision], ...]`` of a trace, in instruction order, as plain data."""
    decisions = trace.decisions
    if not len(decisions):
        return []
    index = {inst: i for i, inst in enumerate(trace.insts)}  # FFI objects hash by identity
    out = [
        [index.get(inst, -1), inst.kind.name, compat.to_jsonable(value)]
        for inst, value in decisions.items()
    ]
    out.sort(key=lambda row: row[0])
    return out


def _mutator_name(mutator: Any) -> str:
    return type(mutator).__name__


class _Replayer:
    """``ThreadedTraceApply``: replay a trace, then the postprocs; counts failures."""

    def __init__(self, mod: Any, postprocs: Sequence[Any]) -> None:
        self.mod = mod
        self.postprocs = list(postprocs)
        self.names = [type(p).__name__ for p in self.postprocs]
        self.failures: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _fail(self, what: str) -> None:
        with self._lock:
            self.failures[what] += 1

    def apply(self, trace: Any, seed: int) -> Any | None:
        try:
            sch = compat.Schedule(self.mod, seed=seed, debug_mask=0, error_render_level="none")
            trace.apply_to_schedule(sch, remove_postproc=True)
            sch.enter_postproc()
        except Exception:
            self._fail("trace replay")
            return None
        for name, postproc in zip(self.names, self.postprocs):
            try:
                ok = postproc.apply(sch)
            except Exception:
                ok = False
            if not ok:
                self._fail(name)
                return None
        return sch

    def take_failures(self) -> dict[str, int]:
        with self._lock:
            out = dict(self.failures)
            self.failures.clear()
        return out


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
    ) -> None:
        self.context = context
        self.database = database
        self.workload = workload
        self.cost_model = cost_model
        self.knobs = knobs
        self.num_threads = max(1, int(num_threads))
        self.rng = np.random.default_rng(seed)
        self.measured: set[int] = set()
        self.num_empty_iters = 0
        self._line_of = line_of or (lambda _shash: None)
        self._pool = ThreadPoolExecutor(self.num_threads, thread_name_prefix="msviz-evo")
        self.set_space(context, design_spaces)

    # -- set up -----------------------------------------------------------------------------------

    def set_space(self, context: Any, design_spaces: Sequence[Any]) -> None:
        """Use new design spaces, postprocs and mutators (after the rules changed)."""
        self.context = context
        sg = context.space_generator
        self.design_spaces = [s.trace.simplified(remove_postproc=True) for s in design_spaces]
        self.replayer = _Replayer(context.mod, list(sg.postprocs or []))
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

        def one(args: tuple[Any, int]) -> Candidate | None:
            record, seed = args
            sch = self.replayer.apply(record.trace, seed)
            if sch is None:
                return None
            shash = self._hash(sch)
            return Candidate(sch, shash, None, "database", ancestor_line=self._line_of(shash))

        out = self._map(one, list(zip(records, self._seeds(len(records)))))
        return [c for c in out if c is not None]

    def sample_init_population(self, num: int) -> list[Candidate]:
        """``SampleInitPopulation``: fresh decisions in random design spaces, ``num`` a round."""
        out: list[Candidate] = []
        fail_count = 0
        num = max(0, num)
        while len(out) < self.knobs.init_min_unmeasured and fail_count < self.knobs.max_fail_count:
            spaces = self.rng.integers(0, len(self.design_spaces), size=num)

            def one(args: tuple[int, int]) -> Candidate | None:
                space, seed = args
                trace = compat.Trace(self.design_spaces[space].insts, {})
                sch = self.replayer.apply(trace, seed)
                if sch is None:
                    return None
                return Candidate(sch, self._hash(sch), int(space), "fresh")

            found = [c for c in self._map(one, list(zip(spaces, self._seeds(num)))) if c]
            out.extend(found)
            fail_count += not found
            if num == 0:
                break
        return out

    def predict(
        self, population: Sequence[Candidate], cache: dict[int, float] | None = None
    ) -> np.ndarray:
        """``PredictNormalizedScore``: the cost model's scores, clamped to >= 0.

        With a ``cache`` (one per generation: the model does not change within one), a schedule
        already scored, or met twice in the population, is scored once. Kept parents and
        duplicate children are common, so this saves a large share of feature extraction.
        """
        cache = {} if cache is None else cache
        todo: dict[int, Candidate] = {}
        for c in population:
            if c.shash not in cache and c.shash not in todo:
                todo[c.shash] = c
        if todo:
            cands = [
                compat.ms.search_strategy.MeasureCandidate(
                    c.sch, compat.ArgInfo.from_entry_func(c.sch.mod, remove_preproc=True)
                )
                for c in todo.values()
            ]
            scores = np.asarray(self.cost_model.predict(self.context, cands), dtype="float64")
            cache.update(zip(todo, np.maximum(scores, 0.0).tolist()))
        return np.array([cache[c.shash] for c in population], dtype="float64")

    def _mutate(
        self, population: list[Candidate], scores: np.ndarray, iteration: int
    ) -> tuple[list[Candidate], dict[str, int]]:
        """One genetic iteration's children (``f_find_candidate`` of the C++)."""
        knobs = self.knobs
        pop_size = knobs.population_size
        total = float(scores.sum())
        cum = np.cumsum(scores) if total > 0 else np.arange(1, len(scores) + 1, dtype=float)
        total = float(cum[-1])
        # Mutator sampler: "none" with 1 - p, each mutator with p * its normalized probability.
        masses = [1.0 - knobs.genetic_mutate_prob]
        mutators: list[Any] = [None]
        mass_sum = sum(p for _, p in self.mutators) if knobs.genetic_mutate_prob > 0 else 0.0
        for m, p in self.mutators if knobs.genetic_mutate_prob > 0 else []:
            mutators.append(m)
            masses.append(p * knobs.genetic_mutate_prob / (mass_sum if mass_sum else 1.0))
        if mass_sum == 0.0:
            masses = [1.0] + [0.0] * (len(masses) - 1)
        mcum = np.cumsum(masses)
        kept: set[int] = set()
        kept_lock = threading.Lock()
        mutator_fail: Counter[str] = Counter()
        fail_lock = threading.Lock()
        apply_mutator = compat.ms._ffi_api.MutatorApply

        def child(seed: int) -> Candidate:
            rng = np.random.default_rng(seed)
            parent_id = -1
            for _ in range(knobs.genetic_max_fail_count + 1):
                parent_id = int(np.searchsorted(cum, rng.random() * total, side="right"))
                parent_id = min(parent_id, len(population) - 1) % pop_size
                parent = population[parent_id]
                which = int(np.searchsorted(mcum, rng.random() * mcum[-1], side="right"))
                mutator = mutators[min(which, len(mutators) - 1)]
                if mutator is not None:
                    name = _mutator_name(mutator)
                    new_trace = apply_mutator(
                        mutator, parent.sch.trace, int(rng.integers(1, _SEED_MAX))
                    )
                    sch = None
                    if new_trace is not None:
                        sch = self.replayer.apply(new_trace, int(rng.integers(1, _SEED_MAX)))
                    if sch is not None:
                        return Candidate(
                            sch, self._hash(sch), parent.design_space, "mutated", parent_id,
                            name, iteration, parent.ancestor_line,
                        )
                    with fail_lock:
                        mutator_fail[name] += 1
                    continue
                with kept_lock:
                    first = parent_id not in kept
                    kept.add(parent_id)
                if first:
                    return Candidate(
                        parent.sch, parent.shash, parent.design_space, "kept", parent_id, None,
                        iteration, parent.ancestor_line,
                    )
            parent = population[parent_id]
            return Candidate(
                parent.sch, parent.shash, parent.design_space, "copied", parent_id, None,
                iteration, parent.ancestor_line,
            )

        children = self._map(child, self._seeds(pop_size))
        return children, dict(mutator_fail)

    def generate(
        self, num: int, *, generation: int = 0
    ) -> Generator[Stage, None, list[Candidate] | None]:
        """Run one generation, yielding a :class:`Stage` after each step.

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
            ends (too few initial samples, or ``num_empty_iters_before_early_stop`` empty picks).
        """
        knobs = self.knobs
        pop = knobs.population_size
        best = self.pick_best_from_database(int(pop * knobs.init_measured_ratio))
        fresh = self.sample_init_population(pop - len(best))
        failures = self.replayer.take_failures()
        inits = best + fresh
        yield Stage(
            "initial_population",
            {
                "generation": generation,
                "from_database": len(best),
                "fresh": len(fresh),
                "enough": len(fresh) >= knobs.init_min_unmeasured,
                "failures": failures,
                "candidates": [
                    {**c.lineage(), "decisions": decisions_of(c.sch.trace)} for c in inits
                ],
            },
        )
        if len(fresh) < knobs.init_min_unmeasured:
            return None
        # EvolveWithCostModel
        exists = set(self.measured)
        heap: list[tuple[float, int, Candidate]] = []
        counter = 0
        population = inits
        score_cache: dict[int, float] = {}
        for iteration in range(knobs.genetic_num_iters + 1):
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
            if iteration == knobs.genetic_num_iters:
                break
            population, mutator_fail = self._mutate(population, scores, iteration + 1)
            failures = {**self.replayer.take_failures(), **{
                f"mutator {k}": v for k, v in mutator_fail.items()}}
        bests = [c for _, _, c in sorted(heap, key=lambda t: (-t[0], -t[1]))]
        picks = self.pick_with_eps_greedy(fresh, bests, num)
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
                return None
        return picks

    def pick_with_eps_greedy(
        self, unmeasured: list[Candidate], bests: list[Candidate], num: int
    ) -> list[Candidate]:
        """``PickWithEpsGreedy``: ``num * (1 - eps)`` from the bests, the rest at random."""
        num_rands = int(num * self.knobs.eps_greedy)
        num_bests = num - num_rands
        rands = [int(i) for i in self.rng.permutation(len(unmeasured))]
        results: list[Candidate] = []
        i_bests = i_rands = 0
        for i in range(num):
            has_best, has_rand = i_bests < len(bests), i_rands < len(rands)
            if i < num_bests:
                if has_best:
                    cand, how = bests[i_bests], "score"
                    i_bests += 1
                elif has_rand:
                    cand, how = unmeasured[rands[i_rands]], "random"
                    i_rands += 1
                else:
                    break
            elif has_rand:
                cand, how = unmeasured[rands[i_rands]], "random"
                i_rands += 1
            elif has_best:
                cand, how = bests[i_bests], "score"
                i_bests += 1
            else:
                break
            if cand.shash not in self.measured:
                self.measured.add(cand.shash)
                cand.pick = how
                results.append(cand)
        return results
