"""A Python port of MetaSchedule's ``ReplayTrace`` search strategy (``replay_trace.cc``).

Each candidate is a random design space replayed with fresh decisions, then postprocessed;
a candidate whose replay or postprocs fail is tried again, up to ``max_fail_count`` times
(then dropped, as in the C++). The C++ draws from per-thread random states handed out to
whichever thread is free, so its candidates depend on thread timing; here every candidate's
design space and schedule seed are drawn up front from the search's own generator, so the
whole run's candidates are the same for a seed, whatever the thread count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from msviz import compat
from msviz.engine.search.candidates import Candidate, Stage, decisions_of
from msviz.engine.search.quarantine import Quarantine, quarantine_raised
from msviz.trace.replay import apply_trace

__all__ = ["ReplayTrace"]

_SEED_MAX = 2**31 - 1


class ReplayTrace:
    """Random sampling of the design spaces, one batch at a time.

    Parameters
    ----------
    context : TuneContext
        The task's context (its mod and initialized space generator's postprocs).
    design_spaces : sequence of Schedule
        The design spaces.
    seed : int
        Seed of every draw of this search.
    num_threads : int
        Threads replaying candidates.
    max_fail_count : int
        Tries per candidate (``ReplayTrace(max_fail_count=100)`` is MetaSchedule's default).
    quarantine : Quarantine, optional
        Where a candidate or postproc that raises is counted (it is skipped).
    """

    def __init__(self, context: Any, design_spaces: Sequence[Any], *, seed: int,
                 num_threads: int = 1, max_fail_count: int = 100,
                 quarantine: Quarantine | None = None) -> None:
        self.quarantine = quarantine
        self.rng = np.random.default_rng(seed)
        self.max_fail_count = int(max_fail_count)
        self.num_threads = max(1, int(num_threads))
        self.stop_reason: str | None = None
        self.measured: set[int] = set()  # unused: replay does not skip what it measured
        self._pool = ThreadPoolExecutor(self.num_threads, thread_name_prefix="msviz-replay")
        self.set_space(context, design_spaces)

    def set_space(self, context: Any, design_spaces: Sequence[Any]) -> None:
        """Use new design spaces and postprocs (after the rules changed)."""
        self.mod = context.mod
        self.postprocs = [(type(p).__name__, p)
                          for p in list(context.space_generator.postprocs or [])]
        self.design_spaces = [s.trace.simplified(remove_postproc=True) for s in design_spaces]

    def close(self) -> None:
        """Stop the worker threads."""
        self._pool.shutdown(wait=True)

    def forget(self, shashes: Sequence[int]) -> None:
        """Nothing to do: replay never skips a measured schedule."""

    def _one(self, draws: list[tuple[int, int]]) -> tuple[Candidate | None, list[str]]:
        failed: list[str] = []
        for space, seed in draws:
            trace = compat.Trace(self.design_spaces[space].insts, {})
            outcome = apply_trace(self.mod, trace, self.postprocs, seed=seed)
            quarantine_raised(self.quarantine, outcome)
            if outcome.schedule is not None:
                sch = outcome.schedule
                return Candidate(sch, int(compat.structural_hash(sch.mod)), space,
                                 "fresh", pick="random"), failed
            failed.append(str(outcome.failed_step))
        return None, failed

    def generate(self, num: int, *, generation: int = 0
                 ) -> Generator[Stage, None, list[Candidate] | None]:
        """Sample ``num`` candidates; yields one ``picked`` stage and returns them.

        Returns None (the search ends, :attr:`stop_reason` says why) when every try of every
        candidate failed.
        """
        tries = max(1, self.max_fail_count)
        spaces = self.rng.integers(0, len(self.design_spaces), size=(num, tries))
        seeds = self.rng.integers(1, _SEED_MAX, size=(num, tries))
        jobs = [list(zip(map(int, s), map(int, d))) for s, d in zip(spaces, seeds)]
        if self.num_threads == 1 or num < 2:
            outcomes = [self._one(j) for j in jobs]
        else:
            outcomes = list(self._pool.map(self._one, jobs))
        picks = [c for c, _ in outcomes if c is not None]
        failures = Counter(step for _, failed in outcomes for step in failed)
        yield Stage("picked", {
            "generation": generation, "requested": num, "by_score": 0,
            "by_random": len(picks), "failures": dict(failures),
            "candidates": [{**c.lineage(), "pick": c.pick, "predicted_score": None,
                            "decisions": decisions_of(c.sch.trace)} for c in picks],
        })
        if not picks and num > 0:
            self.stop_reason = (f"the replay search found no valid schedule in "
                                f"max_fail_count={self.max_fail_count} tries per candidate")
            return None
        return picks
