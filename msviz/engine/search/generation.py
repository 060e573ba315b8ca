"""Driving one generation of the search: its stages one by one, then its picks."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterator
from typing import Any

__all__ = ["Generation"]


class Generation:
    """The stages of one search generation, iterated; :attr:`picks` holds its result after.

    ``EvolutionarySearch.generate`` (and ``ReplayTrace.generate``) are generators that yield a
    ``Stage`` after each step and return the picked candidates (``[]``: nothing new; None: the
    search has ended). Iterating a :class:`Generation` yields the stages and keeps the return
    value, so a caller that pauses between stages (a
    session) and one that does not (the ``PySearchStrategy``) drive it the same way.

    Parameters
    ----------
    stages : generator
        ``search.generate(n, generation=...)``.
    timeit : callable, optional
        A session's ``Profile.timeit``: the search's own steps are timed inside it, the rest of
        each stage counts as ``EvoSearch/Evolve/Misc``.
    """

    def __init__(self, stages: Generator[Any, None, list | None], *,
                 timeit: Any = None) -> None:
        self._stages = stages
        self._timeit = timeit or (lambda _stage: contextlib.nullcontext())
        #: The candidates picked (set when the iteration ends; None: the search has ended).
        self.picks: list | None = None

    def __iter__(self) -> Iterator[Any]:
        while True:
            try:
                with self._timeit("EvoSearch/Evolve/Misc"):
                    stage = next(self._stages)
            except StopIteration as done:
                self.picks = done.value
                return
            yield stage

    def close(self) -> None:
        """Abandon the generation (new rules arrived)."""
        self._stages.close()
