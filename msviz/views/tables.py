"""The task table and the trials table as display-ready frames."""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

__all__ = ["TableInfo", "task_table_info", "trial_table_info"]


class TableInfo(NamedTuple):
    """A frame to show and a note on what was left out."""

    frame: pd.DataFrame
    note: str


def task_table_info(tasks: pd.DataFrame) -> TableInfo:
    """MetaSchedule's per-task table (ID, name, FLOP, weight, GFLOPS, latency, trials, failures)."""
    frame = pd.DataFrame(
        {
            "Name": tasks["task"],
            "FLOP": tasks["flop"].map(lambda f: f"{f:,.0f}" if f == f else "?"),
            "Weight": tasks["weight"],
            "Speed (GFLOPS)": tasks["best_gflops"].round(4),
            "Latency (us)": tasks["best_latency_us"].round(4),
            "Weighted Latency (us)": (
                tasks["best_latency_us"] * tasks["weight"].fillna(1)
            ).round(4),
            "Trials": tasks["trials"],
            "Failed": tasks["failed"],
        }
    )
    frame.index.name = "ID"
    return TableInfo(frame, "")


def trial_table_info(trials: pd.DataFrame, *, limit: int = 2000) -> TableInfo:
    """The trials to list: all of them up to ``limit``, else the fastest and every failure.

    Parameters
    ----------
    trials : pandas.DataFrame
        ``Run.trials``.
    limit : int
        Most rows to show.
    """
    columns = ["task", "trial", "task_trial", "status", "latency_us", "gflops", "error"]
    frame = trials[columns]
    if len(frame) <= limit:
        return TableInfo(frame, "")
    failed = frame[frame["status"] != "ok"].head(limit // 2)
    fastest = frame[frame["status"] == "ok"].nsmallest(limit - len(failed), "latency_us")
    shown = pd.concat([fastest, failed]).sort_values("trial")
    note = (
        f"showing {len(shown)} of {len(frame)} trials: the {len(fastest)} fastest and "
        f"{len(failed)} of {int((frame['status'] != 'ok').sum())} failures"
    )
    return TableInfo(shown, note)
