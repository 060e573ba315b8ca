"""A shape cover's estimates, as pure functions of what it measured: a shape's weighted
latency over its tasks, the throughput the tuned shapes reach interpolated to another size, and
the next shape to tune (the family's weighted middle first, then the largest weighted estimated
regret). :class:`~msviz.workflows.shapes.cover.ShapeTuning` calls them with its measurements."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from msviz.records.shape_cover import weighted_geomean

__all__ = ["interpolated_throughput", "next_shape", "weighted_latency"]


def weighted_latency(weights: dict[int, float], per_task: dict[int, float],
                     fill: dict[int, float] | None = None) -> tuple[float | None, int]:
    """Weighted latency of per-task times (``fill`` where a task has none), and how many
    tasks have no time at all (left out of the sum: a model task no tuned shape gave a
    trial, when the trials were fewer than the tasks' first batches)."""
    total, counted, missing = 0.0, 0, 0
    for i, w in weights.items():
        us = per_task.get(i)
        if us is None and fill is not None:
            us = fill.get(i)
        if us is None:
            missing += 1
            continue
        total, counted = total + w * us, counted + 1
    return (total if counted else None), missing


def interpolated_throughput(points: Sequence[tuple[float, float]], x: float) -> float | None:
    """The throughput at log size ``x`` from ``(log size, throughput)`` points: linear in
    log throughput between the nearest two, flat beyond them; None without points."""
    pts = sorted((px, math.log(py)) for px, py in points)
    if not pts:
        return None
    if x <= pts[0][0]:
        return math.exp(pts[0][1])
    if x >= pts[-1][0]:
        return math.exp(pts[-1][1])
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if x0 <= x <= x1:
            f = 0.0 if x1 == x0 else (x - x0) / (x1 - x0)
            return math.exp(y0 + f * (y1 - y0))
    return None  # pragma: no cover - the points cover x


def next_shape(family: Any, tuned: set[str], estimated: dict[str, float | None], *,
               k: int | None, max_k: int, regret: float) -> tuple[str | None, str]:
    """The next shape of ``family`` to tune and why, or None and why tuning ends.

    ``tuned``: the labels tuned so far; ``estimated``: each untuned shape's estimated regret
    (None where no carried schedule ran). The first is the family's weighted middle by log
    size; then none past ``k`` (or ``max_k``), or when the weighted estimated regret is within
    ``regret`` (without ``k``); else the largest weight x log(estimated regret)."""
    left = [s for s in family.shapes if s.label not in tuned]
    if not left:
        return None, "every shape is tuned"
    if not tuned:
        def spread(s: Any) -> float:
            x = family.log_size(s)
            return sum(o.weight * abs(family.log_size(o) - x) for o in family.shapes)
        first = min(family.shapes, key=spread)
        return first.label, "the family's weighted middle (by log size)"
    limit = k if k is not None else max_k
    if len(tuned) >= limit:
        return None, (f"k={k} shapes tuned" if k is not None else f"max_k={max_k} shapes tuned")
    if k is None:
        overall = weighted_geomean([(s.weight, 1.0 if s.label in tuned else
                                     estimated[s.label] or math.inf) for s in family.shapes])
        if overall is not None and overall <= regret:
            return None, f"estimated weighted regret {overall:.3f} <= target {regret:.3f}"

    def score(s: Any) -> float:
        r = estimated[s.label]
        return math.inf if r is None else s.weight * math.log(r)

    pick = max(left, key=score)
    r = estimated[pick.label]
    why = ("no schedule carried to it ran" if r is None else
           f"the largest weighted estimated regret ({r:.2f}x)")
    return pick.label, why
