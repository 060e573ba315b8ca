"""msviz's evolutionary search as a MetaSchedule ``PySearchStrategy`` for stock tuning.

``tune_tir`` / ``tune_relax`` / ``tune_tasks`` take a ``SearchStrategy``; this module wraps
:class:`msviz.engine.search.evolution.EvolutionarySearch` (the step-able port of
``evolutionary_search.cc``) in MetaSchedule's Python search-strategy protocol, so stock
MetaSchedule drives it::

    ms.tune_tir(mod, target, work_dir, max_trials_global=64,
                strategy=msviz.search_strategy("stock", population_size=128))

The protocol is the C++ strategy's (``EvolutionarySearchNode``):

* ``_initialize_with_tune_context``: keeps the context (its space generator's postprocs and
  mutators) and forks the seed from ``TuneContext.rand_state`` unless one was given;
* ``pre_tuning``: a new search over the design spaces, with the database (records of this
  workload seed the initial population) and the cost model the task scheduler owns;
* ``generate_measure_candidates``: one generation; ``None`` once ``max_trials`` candidates were
  handed out or the search ends (too few initial samples, repeated empty picks), ``[]`` when a
  generation found nothing new, exactly as the C++;
* ``notify_runner_results``: advances the ``[st, ed)`` trial window (the C++ does only that: the
  cost model and the database are updated by the task scheduler's measure callbacks);
* ``post_tuning``: ends the search (frees its threads); ``clone``: same knobs, no state.

Knobs the stock task scheduler owns are not the strategy's: ``cost_model_warmup`` (pass
``cost_model=XGBModel(num_warmup_samples=...)`` to the tuning call) has no effect here, and the
cost model reaches the strategy as a bare MetaSchedule object, so an ``XGBModel``'s warm-up scores
come from numpy's global random state, as in stock MetaSchedule (a Session draws them from its
seed). The other
knobs of a preset apply as in a :class:`msviz.Session`; ``skip_db_measured`` (preset ``"msviz"``)
counts the schedules the database already holds for the workload as measured, so a run that
continues a work dir does not measure them again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from msviz import compat
from msviz.engine.search.candidates import Stage
from msviz.engine.search.evolution import EvolutionarySearch
from msviz.engine.search.generation import Generation
from msviz.engine.search.presets import SearchKnobs, knobs_for

__all__ = ["MsvizSearchStrategy", "search_strategy"]

_SEED_MAX = 2**31 - 1


class _Strategy(compat.ms.search_strategy.PySearchStrategy):
    """The protocol's methods (MetaSchedule calls them through the derived object)."""

    def __init__(
        self,
        knobs: SearchKnobs,
        *,
        seed: int | None = None,
        num_threads: int | None = None,
        on_stage: Callable[[Stage], None] | None = None,
    ) -> None:
        if not isinstance(knobs, SearchKnobs):
            raise TypeError(f"knobs must be a SearchKnobs, not {type(knobs).__name__}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"seed must be an int or None, not {seed!r}")
        if num_threads is not None and (not isinstance(num_threads, int) or num_threads < 1):
            raise ValueError(f"num_threads must be an int >= 1 or None, got {num_threads!r}")
        if on_stage is not None and not callable(on_stage):
            raise TypeError(f"on_stage must be callable, not {type(on_stage).__name__}")
        self.knobs = knobs
        self.seed = seed
        self.num_threads = num_threads
        self.on_stage = on_stage
        self.context: Any = None
        #: The search of the current tuning (between ``pre_tuning`` and ``post_tuning``).
        self.search: EvolutionarySearch | None = None
        self.max_trials = 0
        self.num_trials_per_iter = 0
        self.st = 0
        self.ed = 0
        self.generation = 0
        #: The stages of the last generation (plain data, as a Session's events).
        self.last_stages: list[Stage] = []

    # -- the protocol -----------------------------------------------------------------------------

    def _initialize_with_tune_context(self, context: Any) -> None:
        sg = context.space_generator
        if sg is None or sg.postprocs is None or sg.mutator_probs is None:
            raise ValueError(
                "msviz's search strategy needs TuneContext.space_generator with postprocs and "
                "mutator_probs defined (e.g. PostOrderApply(sch_rules='from-target', "
                "postprocs='from-target', mutator_probs='from-target'))")
        self.context = context
        if self.seed is None:
            # The C++ forks its seed from the context's; so do we (deterministic per rand_state).
            base = int(context.rand_state)
            rng = np.random.default_rng(None if base < 0 else base)
            self._seed = int(rng.integers(1, _SEED_MAX))
        else:
            self._seed = int(self.seed)
        self._end_search()

    def pre_tuning(
        self,
        max_trials: int,
        num_trials_per_iter: int,
        design_spaces: Any,
        database: Any = None,
        cost_model: Any = None,
    ) -> None:
        if self.context is None:
            raise ValueError("pre_tuning before the strategy was initialized with a TuneContext")
        if self.search is not None:
            raise ValueError("pre_tuning was already called without a matching post_tuning")
        if not len(design_spaces):
            raise ValueError("pre_tuning got no design spaces")
        if database is None:
            raise ValueError(
                "msviz's evolutionary search needs a database (records of the workload seed its "
                "initial population); use MemoryDatabase() to keep nothing on disk")
        if cost_model is None:
            raise ValueError(
                "msviz's evolutionary search needs a cost model; use RandomModel() for none")
        context = self.context
        threads = self.num_threads or max(1, int(context.num_threads))
        workload = database.commit_workload(context.mod)
        self.search = EvolutionarySearch(
            context, list(design_spaces), database, workload, cost_model, self.knobs,
            seed=self._seed, num_threads=threads)
        self.max_trials = int(max_trials)
        self.num_trials_per_iter = int(num_trials_per_iter)
        self.st, self.ed = 0, self.num_trials_per_iter
        self.generation = 0
        if self.knobs.skip_db_measured:
            self._skip_stored(database)

    def post_tuning(self) -> None:
        if self.search is None:
            raise ValueError("post_tuning without a matching pre_tuning")
        self._end_search()

    def generate_measure_candidates(self) -> list[Any] | None:
        search = self.search
        if search is None:
            raise ValueError("generate_measure_candidates outside pre_tuning/post_tuning")
        if self.st >= self.max_trials:
            return None
        num = self.num_trials_per_iter
        if self.ed > self.max_trials:
            num = self.max_trials - self.st
            self.ed = self.max_trials
        self.last_stages = []
        generation = Generation(search.generate(num, generation=self.generation))
        for stage in generation:
            self.last_stages.append(stage)
            if self.on_stage is not None:
                self.on_stage(stage)
        picks = generation.picks
        self.generation += 1
        if picks is None:
            return None
        make = compat.ms.search_strategy.MeasureCandidate
        return [make(c.sch, compat.ArgInfo.from_entry_func(c.sch.mod, remove_preproc=True))
                for c in picks]

    def notify_runner_results(self, measure_candidates: Any, results: Any) -> None:
        self.st += len(results)
        self.ed += len(results)
        if self.search is not None:  # the task scheduler's UpdateCostModel trains on them
            self.search.trained_on(sum(1 for r in results if r.run_secs))

    def clone(self) -> Any:
        return MsvizSearchStrategy(self.knobs, seed=self.seed, num_threads=self.num_threads,
                                   on_stage=self.on_stage)

    # -- helpers ----------------------------------------------------------------------------------

    @property
    def stop_reason(self) -> str | None:
        """Why the search ended (None while it goes on)."""
        return None if self.search is None else self.search.stop_reason

    def _end_search(self) -> None:
        if getattr(self, "search", None) is not None:
            self.search.close()
        self.search = None

    def _skip_stored(self, database: Any) -> None:
        """Count the schedules stored for this workload as measured (``skip_db_measured``)."""
        mod = self.context.mod
        for rec in database.get_all_tuning_records():
            if not compat.structural_equal(rec.workload.mod, mod):
                continue
            try:
                cand = rec.as_measure_candidate()
            except Exception:  # a record that no longer replays: nothing to skip
                continue
            self.search.measured.add(int(compat.structural_hash(cand.sch.mod)))


MsvizSearchStrategy = compat.derived_object(_Strategy)
MsvizSearchStrategy.__doc__ = """msviz's evolutionary search as a MetaSchedule ``SearchStrategy``.

    Parameters
    ----------
    knobs : SearchKnobs
        The search's knobs (see :func:`search_strategy` to build them from a preset).
    seed : int, optional
        Seed of the search; by default forked from ``TuneContext.rand_state`` (the tuning
        call's ``seed``).
    num_threads : int, optional
        Threads replaying and mutating schedules; by default ``TuneContext.num_threads``.
    on_stage : callable, optional
        ``on_stage(stage)`` after each stage of a generation (initial population, each genetic
        iteration, the pick), with the same plain data as a Session's events.
    """


def search_strategy(
    preset: str = "msviz",
    *,
    seed: int | None = None,
    num_threads: int | None = None,
    on_stage: Callable[[Stage], None] | None = None,
    **knobs: Any,
) -> Any:
    """msviz's evolutionary search, for stock ``tune_tir`` / ``tune_relax`` / ``tune_tasks``.

    Parameters
    ----------
    preset : str
        ``"msviz"`` (default) or ``"stock"`` (MetaSchedule's own choices, see
        :mod:`msviz.engine.search.presets`).
    seed : int, optional
        Seed of the search; by default forked from the tuning call's ``seed``.
    num_threads : int, optional
        Threads replaying and mutating schedules; by default the tuning call's.
    on_stage : callable, optional
        Called with each :class:`~msviz.engine.search.candidates.Stage` of every generation.
    **knobs
        Search knobs overriding the preset's (``population_size=128``, ``eps_greedy=0.1``...).

    Returns
    -------
    strategy : SearchStrategy
        A MetaSchedule ``SearchStrategy`` to pass as ``strategy=`` to the tuning functions.

    Examples
    --------
    >>> ms.tune_tir(mod, target, "wd", max_trials_global=32,
    ...             strategy=msviz.search_strategy("stock", population_size=64))  # doctest: +SKIP
    """
    return MsvizSearchStrategy(knobs_for(preset, **knobs), seed=seed, num_threads=num_threads,
                               on_stage=on_stage)
