"""Search strategies by name, as MetaSchedule's ``SearchStrategy.create`` makes them:
``create("evolutionary", ...)`` (msviz's step-able port of ``EvolutionarySearch``) or
``create("replay", ...)`` (``ReplayTrace``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from msviz.engine.search.evolution import EvolutionarySearch
from msviz.engine.search.presets import SearchKnobs
from msviz.engine.search.quarantine import Quarantine
from msviz.engine.search.replay_trace import ReplayTrace

__all__ = ["STRATEGIES", "create"]

#: The search strategies :func:`create` makes (the ``strategy=`` of a Session).
STRATEGIES = ("evolutionary", "replay")


def create(kind: str, context: Any, design_spaces: Sequence[Any], *, seed: int,
           num_threads: int = 1, quarantine: Quarantine | None = None, database: Any = None,
           workload: Any = None, cost_model: Any = None, knobs: SearchKnobs | None = None,
           line_of: Callable[[int], int | None] | None = None,
           timeit: Callable[[str], Any] | None = None) -> EvolutionarySearch | ReplayTrace:
    """A search strategy of one task.

    Parameters
    ----------
    kind : {"evolutionary", "replay"}
        Which strategy (:data:`STRATEGIES`).
    context : TuneContext
        The task's tune context.
    design_spaces : sequence of Schedule
        The task's design spaces.
    seed : int
        The task's seed.
    num_threads : int
        Threads replaying (and mutating) schedules.
    quarantine : Quarantine, optional
        Where what raises is counted and skipped.
    database, workload, cost_model, knobs, line_of
        The evolutionary search's database, workload token, cost model, knobs and record-line
        lookup (see :class:`EvolutionarySearch`); replay uses none of them.
    timeit : callable, optional
        ``timeit(stage)`` times the evolutionary search's steps (a session's profile).

    Returns
    -------
    search : EvolutionarySearch | ReplayTrace

    Raises
    ------
    ValueError
        For a ``kind`` not in :data:`STRATEGIES`, naming the choices.
    """
    if kind == "replay":
        return ReplayTrace(context, design_spaces, seed=seed, num_threads=num_threads,
                           quarantine=quarantine)
    if kind == "evolutionary":
        if knobs is None:
            raise TypeError("the evolutionary search needs knobs= (a SearchKnobs)")
        search = EvolutionarySearch(context, design_spaces, database, workload, cost_model,
                                    knobs, seed=seed, num_threads=num_threads, line_of=line_of,
                                    quarantine=quarantine)
        if timeit is not None:
            search.timeit = timeit
        return search
    raise ValueError(f"unknown search strategy {kind!r}: choose one of "
                     f"{', '.join(repr(k) for k in STRATEGIES)}")
