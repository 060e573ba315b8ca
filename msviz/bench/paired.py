"""Two builds of one model compared as users run them: whole models, in one process, in
alternating rounds, in several fresh processes; the paired ratio with its spread, and a verdict
only where the rounds agree.

On small shared machines a model's timing flips between a fast mode and a ~2x slow one, from one
process to the next and within a process; two builds timed in turn in the same process share the
mode of that moment, so their ratio round by round holds where their separate times do not. Each
draw (a fresh process, :func:`msviz.bench.draws.run_draws`; the builds exported once) times
A, B, then B, A, round after round, so neither build always goes first; a round is one A and
one B timing
(``time_evaluator``: ``number`` runs, ``repeat`` times, its median).

:func:`paired_summary` (pure) makes the :class:`PairedComparison` of the timings;
:func:`compare_builds` times two builds;
:func:`msviz.workflows.compare_models.compare_models` two work dirs of a model.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from msviz.bench.draws import DEFAULT_DRAWS, SLOW_FACTOR, check_draws, run_draws

__all__ = ["AGREEMENT", "DEFAULT_ROUNDS", "MAX_ROUNDS", "MIN_VERDICT_DRAWS",
           "MIN_VERDICT_ROUNDS", "SLOW_FACTOR", "PairedComparison", "check_count",
           "compare_builds", "paired_summary"]

#: Rounds per draw by default, and the most a caller may ask for.
DEFAULT_ROUNDS = 6
MAX_ROUNDS = 200
#: The share of rounds that must fall on one side of 1 (and the median beyond the tolerance) for
#: a verdict.
AGREEMENT = 0.8
#: The fewest rounds, and fresh processes, a verdict is drawn from: below that, one process's
#: mode (a ~2x slow mode comes and goes) or one lucky round decides, and a verdict from one
#: round said "1.505x (100% of rounds agree)" of two copies of one work dir.
MIN_VERDICT_ROUNDS = 4
MIN_VERDICT_DRAWS = 2


@dataclass(frozen=True)
class PairedComparison:
    """Two builds compared in paired rounds.

    ``ratio`` per round is B's time over A's (below 1: B is faster). ``median``, ``low`` and
    ``high`` are the median, least and most of those ratios; ``draw_medians`` the median per
    draw; ``slow_rounds`` per build, its rounds in the slow mode (over :data:`SLOW_FACTOR` times
    its least); ``verdict`` says which is faster, or why there is none.
    """

    names: tuple[str, str]
    a_us: list[float]
    b_us: list[float]
    draw: list[int]
    ratio: list[float]
    median: float
    low: float
    high: float
    draw_medians: list[float]
    faster_share: float
    slow_rounds: dict[str, int]
    verdict: str
    tolerance: float = 0.02
    settings: dict[str, Any] = field(default_factory=dict)

    def frame(self) -> pd.DataFrame:
        """One row per round: draw, A's and B's µs, their ratio."""
        a, b = self.names
        return pd.DataFrame({"draw": self.draw, f"{a}_us": self.a_us, f"{b}_us": self.b_us,
                             "ratio": self.ratio})

    def __str__(self) -> str:
        a, b = self.names
        return (f"{b} / {a}: paired median {self.median:.3f}x (rounds {self.low:.3f}-"
                f"{self.high:.3f}x, {len(self.ratio)} rounds in {len(self.draw_medians)} "
                f"process{'es' if len(self.draw_medians) != 1 else ''}; per process "
                f"{', '.join(f'{m:.3f}' for m in self.draw_medians)}); {a} "
                f"{statistics.median(self.a_us):.1f} us, {b} {statistics.median(self.b_us):.1f}"
                f" us (medians); slow-mode rounds: {a} {self.slow_rounds[a]}, {b} "
                f"{self.slow_rounds[b]}. {self.verdict}")


def paired_summary(names: Sequence[str], rounds: Sequence[tuple[int, float, float]], *,
                   tolerance: float = 0.02, agreement: float = AGREEMENT,
                   settings: Mapping[str, Any] | None = None) -> PairedComparison:
    """The comparison of paired rounds. Pure.

    Parameters
    ----------
    names : (str, str)
        A's and B's names.
    rounds : sequence of (draw, a_us, b_us)
        Each round: its draw (process) and both builds' timings.
    tolerance : float
        A median ratio within ``1 ± tolerance`` is "no faster".
    agreement : float
        The share of rounds that must agree on the faster build for a verdict.
    """
    if len(names) != 2:
        raise ValueError(f"names must be two build names, got {list(names)!r}")
    if not rounds:
        raise ValueError("no rounds to compare")
    a, b = str(names[0]), str(names[1])
    draws = [int(r[0]) for r in rounds]
    a_us = [float(r[1]) for r in rounds]
    b_us = [float(r[2]) for r in rounds]
    bad = [(i, t) for i, t in enumerate(a_us + b_us) if not (math.isfinite(t) and t > 0)]
    if bad:
        i, t = bad[0]
        raise ValueError(f"round {i % len(rounds)}: {(a, b)[i // len(rounds)]} timed {t!r} us, "
                         "not a finite time > 0 (were number, repeat or min_repeat_ms 0?): "
                         "nothing to compare")
    ratio = [y / x for x, y in zip(a_us, b_us)]
    median = statistics.median(ratio)
    draw_medians = [statistics.median([r for d, r in zip(draws, ratio) if d == k])
                    for k in sorted(set(draws))]
    b_faster = sum(r < 1 for r in ratio) / len(ratio)
    a_faster = sum(r > 1 for r in ratio) / len(ratio)
    slow = {name: sum(t > SLOW_FACTOR * min(times) for t in times)
            for name, times in ((a, a_us), (b, b_us))}
    if len(ratio) < MIN_VERDICT_ROUNDS or len(draw_medians) < MIN_VERDICT_DRAWS:
        verdict = (f"no verdict: too few rounds ({len(ratio)} round(s) in {len(draw_medians)} "
                   f"process(es); a verdict needs at least {MIN_VERDICT_ROUNDS} rounds in "
                   f"{MIN_VERDICT_DRAWS} processes: raise rounds= or draws=)")
    elif abs(median - 1) <= tolerance:
        verdict = (f"no verdict: {b} and {a} are within {tolerance:.0%} of each other "
                   f"(paired median {median:.3f}x)")
    elif median < 1 and b_faster >= agreement and all(m < 1 for m in draw_medians):
        verdict = f"{b} is faster: {median:.3f}x {a}'s time ({b_faster:.0%} of rounds agree)"
    elif median > 1 and a_faster >= agreement and all(m > 1 for m in draw_medians):
        verdict = (f"{a} is faster: {b} takes {median:.3f}x its time ({a_faster:.0%} of rounds "
                   "agree)")
    else:
        verdict = (f"no verdict: the rounds disagree ({b} faster in {b_faster:.0%} of them, "
                   f"per-process medians {', '.join(f'{m:.3f}' for m in draw_medians)})")
    return PairedComparison(names=(a, b), a_us=a_us, b_us=b_us, draw=draws, ratio=ratio,
                            median=median, low=min(ratio), high=max(ratio),
                            draw_medians=draw_medians, faster_share=b_faster, slow_rounds=slow,
                            verdict=verdict, tolerance=tolerance, settings=dict(settings or {}))


def check_count(name: str, value: Any, most: int | None = MAX_ROUNDS) -> int:
    """``value`` as an int in 1 .. ``most`` (rounds, runs; None: no upper bound), else
    ValueError naming ``name``: ``rounds=10**9`` is refused at once, not run until the draw's
    time limit kills it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if most is not None and value > most:
        raise ValueError(f"{name} must be at most {most}, got {value!r}")
    return value


def compare_builds(builds: Mapping[str, Any], inputs: Sequence[Any], func_name: str, *,
                   device: str = "cpu", rounds: int = DEFAULT_ROUNDS, draws: int = DEFAULT_DRAWS,
                   number: int = 10, repeat: int = 3, min_repeat_ms: int = 30,
                   tolerance: float = 0.02) -> PairedComparison:
    """Two builds (``{name: Executable}``, A first) timed in paired rounds.

    Parameters
    ----------
    builds : mapping of str to Executable
        Exactly two builds of the same model (``compile_relax`` / ``tvm.compile`` results).
    inputs : sequence of numpy.ndarray
        The model's arguments.
    func_name : str
        Its entry function.
    rounds : int
        Rounds per draw (each: one A and one B timing).
    draws : int
        Fresh processes, one after the other.
    number, repeat, min_repeat_ms : int
        Each timing's ``time_evaluator`` settings (its median repeat is the round's time).
    """
    if len(builds) != 2:
        raise ValueError(f"builds must hold two builds, got {len(builds)}")
    check_count("rounds", rounds)
    check_draws(draws)
    a, b = list(builds)
    jobs = [{"kind": "time", "build": name, "number": number, "repeat": repeat,
             "min_repeat_ms": min_repeat_ms, "budget": False}
            for r in range(rounds) for name in ((a, b) if r % 2 == 0 else (b, a))]
    results = []
    for k, out in enumerate(run_draws(builds, inputs, func_name, device, jobs, draws=draws)):
        times: dict[str, list[float]] = {a: [], b: []}
        for job, res in zip(jobs, out):
            times[job["build"]].append(res["us"])
        results += [(k, x, y) for x, y in zip(times[a], times[b])]
    return paired_summary((a, b), results, tolerance=tolerance, settings={
        "rounds": rounds, "draws": draws, "number": number, "repeat": repeat,
        "min_repeat_ms": min_repeat_ms})
