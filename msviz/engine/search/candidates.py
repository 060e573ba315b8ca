"""A candidate schedule with its lineage, a search stage, and a trace's decisions as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from msviz import compat

__all__ = ["Candidate", "Stage", "decisions_of", "pick_with_eps_greedy"]


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
        Index of the design space it was sampled from (for a database record, the space its
        trace matches; None if none of the current spaces: other rules made it).
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


def pick_with_eps_greedy(unmeasured: list[Candidate], bests: list[Candidate], num: int, *,
                         knobs: Any, rng: Any, measured: set[int]) -> list[Candidate]:
    """``PickWithEpsGreedy``: ``num * (1 - eps)`` from the bests, the rest at random.

    The C++ rounds ``num * eps`` down (16 * 0.05 -> 0 random picks); with the knob
    ``eps_greedy_at_least_one`` (preset ``"msviz"``) at least one pick is random when
    ``eps_greedy > 0``. Picks skip (and then join) ``measured``, the shashes measured so far;
    ``knobs`` are the search's (:class:`~msviz.engine.search.presets.SearchKnobs`), ``rng`` its
    numpy generator.
    """
    num_rands = int(num * knobs.eps_greedy)
    if knobs.eps_greedy_at_least_one and knobs.eps_greedy > 0 and num > 0:
        num_rands = max(1, num_rands)
    num_bests = num - num_rands
    rands = [int(i) for i in rng.permutation(len(unmeasured))]
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
        if cand.shash not in measured:
            measured.add(cand.shash)
            cand.pick = how
            results.append(cand)
    return results
