"""Stage breakdowns side by side: stock MetaSchedule under ``ms.Profiler`` and msviz from its
session's profile (``Session.profile``), for the benchmarks that tune both.

Stock's Profiler scopes nest (``EvoSearch/Evolve`` holds ``EvoSearch/Evolve/Mutation``) and
cover only what MetaSchedule times; msviz's stages are exclusive and sum to the session's wall
time. Rows are the union of both names; a dash means the side has no such scope.
"""

from __future__ import annotations

import math
import time
from typing import Any

__all__ = ["PROFILE_COST", "msviz_stages", "overhead_lines", "side_by_side", "timer_cost"]

#: msviz's own stages: what it adds to a batch beyond what stock MetaSchedule does.
MSVIZ_ONLY = ("msviz/Untuned", "msviz/CheckResults", "msviz/Events", "msviz/Commands",
              "msviz/Paused", "msviz/WaitingForDevices")
WHY = {
    "msviz/Untuned": "each task's untuned kernel timed once (the time-to-quality curve's start)",
    "msviz/CheckResults": "result checks (outputs of a new best against the untuned workload)",
    "msviz/Events": "events and the live trials table",
    "msviz/Commands": "commands applied between stages",
    "msviz/Paused": "paused by the user",
    "msviz/WaitingForDevices": "waiting for RPC devices",
    "other": "time no timer covers (scheduling, logs)",
}


def msviz_stages(session: Any) -> dict[str, float]:
    """Seconds per stage of a finished session, and ``profile_cost_s``: what its profile cost
    (its timer entries times the cost of one nested entry, timed here)."""
    frame = session.profile
    out = {str(k): float(v) for k, v in frame.groupby("stage")["seconds"].sum().items()}
    out[PROFILE_COST] = session.profile_calls * timer_cost()
    return out


#: The key of :func:`msviz_stages`'s profile cost (not a stage: printed apart).
PROFILE_COST = "profile_cost_s"


def timer_cost(n: int = 20_000) -> float:
    """Seconds of one ``Profile.timeit`` entry nested in another (the usual case)."""
    from msviz.engine.profile import Profile

    profile = Profile()
    with profile.timeit("outer"):
        tic = time.perf_counter()
        for _ in range(n):
            with profile.timeit("inner"):
                pass
        return (time.perf_counter() - tic) / n


def side_by_side(stock: dict[str, float] | None, mine: dict[str, float] | None,
                 *, names: tuple[str, str] = ("stock", "msviz")) -> str:
    """One line per stage name: seconds on each side, biggest first."""
    stock = {k: v for k, v in (stock or {}).items() if k != PROFILE_COST}
    mine = {k: v for k, v in (mine or {}).items() if k != PROFILE_COST}
    keys = sorted(set(stock) | set(mine),
                  key=lambda k: -max(stock.get(k, 0.0), mine.get(k, 0.0)))

    def cell(d: dict[str, float], k: str) -> str:
        v = d.get(k)
        return f"{v:9.2f}" if v is not None and math.isfinite(v) else f"{'-':>9}"

    lines = [f"  {'stage (s)':<44} {names[0]:>9} {names[1]:>9}"]
    lines += [f"  {k:<44} {cell(stock, k)} {cell(mine, k)}" for k in keys]
    return "\n".join(lines)


def overhead_lines(mine: dict[str, float], trials: int) -> str:
    """What msviz adds per trial, stage by stage, with the reason."""
    rows = [(k, mine.get(k, 0.0)) for k in (*MSVIZ_ONLY, "other") if mine.get(k, 0.0) > 0]
    total = sum(v for _, v in rows)
    lines = [f"  msviz adds {total / max(1, trials) * 1000:.1f} ms per trial "
             f"({total:.2f} s over {trials} trials):"]
    lines += [f"    {v / max(1, trials) * 1000:7.1f} ms  {k}: {WHY.get(k, '')}" for k, v in rows]
    if PROFILE_COST in mine:
        wall = sum(v for k, v in mine.items() if k != PROFILE_COST)
        lines.append(f"  the profile itself: {mine[PROFILE_COST] * 1000:.1f} ms "
                     f"({mine[PROFILE_COST] / max(wall, 1e-9):.4%} of the wall time; "
                     "its timer entries x one entry's cost)")
    return "\n".join(lines)
