"""A run's per-task table (MetaSchedule's task table) from its trials: :func:`tasks_frame`.

The same concept drawn: :mod:`msviz.views.tasks`."""

from __future__ import annotations

import math

import pandas as pd

from msviz.records.row import mean_run_secs

__all__ = ["TASK_COLUMNS", "tasks_frame"]


#: The columns of :attr:`Run.tasks`, in order.
TASK_COLUMNS = ["task", "flop", "weight", "best_latency_us", "best_gflops", "trials", "failed",
                "best_trial", "workload", "index", "weighted_latency_us", "done"]


def tasks_frame(trials: pd.DataFrame, names: dict[int, str], flops: dict[int, float],
                weights: dict[int, float], *, task_ids: dict[int, int] | None = None,
                done: dict[int, bool] | None = None) -> pd.DataFrame:
    """The per-task table (MetaSchedule's task table) of a trials frame, one row per workload.

    ``index`` is the task's ID in MetaSchedule's task table (from the logs; else the order of
    first appearance), rows are in that order; ``weighted_latency_us`` is weight x best
    latency (weight 1 when unknown); ``done`` is the logged Done flag (None: not logged).
    ``best_trial`` is the record stock ``Database.get_top_k(workload, 1)`` gives: the least mean
    ``run_secs`` of the trials with a latency, the first in file order among equal means.
    """
    task_ids, done = task_ids or {}, done or {}
    rows = []
    for w, mine in trials.groupby("workload", sort=True):
        best = _best_trial(trials, mine["latency_us"].dropna())
        weight = weights.get(int(w), math.nan)
        best_us = math.nan if best is None else float(trials.at[best, "latency_us"])
        rows.append(
            {
                "task": names.get(int(w), str(mine["task"].iloc[0])),
                "flop": flops.get(int(w), math.nan),
                "weight": weight,
                "best_latency_us": best_us,
                "best_gflops": math.nan if best is None else trials.at[best, "gflops"],
                "trials": len(mine),
                "failed": int((mine["status"] != "ok").sum()),
                "best_trial": best,
                "workload": int(w),
                "index": task_ids.get(int(w)),
                "weighted_latency_us": best_us * (1.0 if weight != weight else weight),
                "done": done.get(int(w)),
            }
        )
    # tasks without a logged ID follow the logged ones, in workload order
    known = {r["index"] for r in rows if r["index"] is not None}
    spare = (i for i in range(len(rows) + len(known)) if i not in known)
    for row in rows:
        if row["index"] is None:
            row["index"] = next(spare)
    rows.sort(key=lambda r: r["index"])
    return pd.DataFrame(rows, columns=TASK_COLUMNS)


def _best_trial(trials: pd.DataFrame, latency_us: pd.Series) -> int | None:
    """The row of ``trials`` (among ``latency_us``' rows, in file order) that stock ranks first.

    Latencies are the stock means x 1e6: never in another order than the means, but two means
    a rounding apart can meet there; those few are ranked by their means in seconds.
    """
    if not len(latency_us):
        return None
    least = latency_us.index[latency_us == latency_us.min()]
    if len(least) == 1 or "run_secs" not in trials:
        return int(least[0])
    return int(min(least, key=lambda i: mean_run_secs(trials.at[i, "run_secs"])))
