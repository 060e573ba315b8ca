"""Stage breakdowns side by side: stock MetaSchedule under ``ms.Profiler`` and msviz from its
session's profile (``Session.profile``), for the benchmarks that tune both.

Stock's Profiler scopes nest (``EvoSearch/Evolve`` holds ``EvoSearch/Evolve/Mutation``) and
cover only what MetaSchedule times; msviz's stages are exclusive and sum to the session's wall
time. Rows are the union of both names; a dash means the side has no such scope.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["msviz_stages", "overhead_lines", "side_by_side"]

#: msviz's own stages: what it adds to a batch beyond what stock MetaSchedule does.
MSVIZ_ONLY = ("msviz/CheckResults", "msviz/Events", "msviz/Commands", "msviz/Paused",
              "msviz/WaitingForDevices")
WHY = {
    "msviz/CheckResults": "result checks (outputs of a new best against the untuned workload)",
    "msviz/Events": "events and the live trials table",
    "msviz/Commands": "commands applied between stages",
    "msviz/Paused": "paused by the user",
    "msviz/WaitingForDevices": "waiting for RPC devices",
    "other": "time no timer covers (scheduling, logs)",
}


def msviz_stages(session: Any) -> dict[str, float]:
    """Seconds per stage of a finished session."""
    frame = session.profile
    return {str(k): float(v) for k, v in frame.groupby("stage")["seconds"].sum().items()}


def side_by_side(stock: dict[str, float] | None, mine: dict[str, float] | None,
                 *, names: tuple[str, str] = ("stock", "msviz")) -> str:
    """One line per stage name: seconds on each side, biggest first."""
    stock, mine = stock or {}, mine or {}
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
    return "\n".join(lines)
