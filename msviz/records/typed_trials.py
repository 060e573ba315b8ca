"""A run's trials typed for others to read: :attr:`Run.trials` with each trial's task columns
joined, the record's target and workload key, categorical task and status, nullable integers,
UTC timestamps. What an export writes (:mod:`msviz.archive.export`) and what
:func:`msviz.records.many_runs.open_many` stacks."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd

from msviz.records.row import STATUSES
from msviz.records.targets import target_text

__all__ = ["LIST_COLUMNS", "TASK_COLUMNS_JOINED", "export_frame", "task_categorical"]

#: The columns of :attr:`Run.tasks` joined onto each trial, and their names in the export.
TASK_COLUMNS_JOINED = {
    "index": "task_index",
    "flop": "flop",
    "weight": "weight",
    "best_latency_us": "task_best_latency_us",
    "done": "task_done",
}
_TEXT_COLUMNS = ("error", "origin", "pick", "mutator", "check", "check_detail", "device",
                 "carried_from", "carry", "adjusted", "target", "workload_key")
#: The list columns (one run's repeats; one list per re-measurement).
LIST_COLUMNS = ("run_secs", "remeasured_secs")


def _secs(values: Any) -> list[float] | None:
    return None if values is None else [float(v) for v in values]


def export_frame(run: Any) -> pd.DataFrame:
    """The trials of ``run`` as they are exported: typed, task columns joined, target as text.

    Parameters
    ----------
    run : Run
        An opened work dir.

    Returns
    -------
    frame : pandas.DataFrame
        ``run.trials``' columns in order (``run_secs`` a list, ``remeasured_secs`` a list of
        lists), then ``target`` (TVM's text of the record's target), ``workload_key`` (the
        workload's structural hash) and the task columns of :data:`TASK_COLUMNS_JOINED`.
        ``logged_at`` (MetaSchedule's log stamps, local time without a zone) is read as this
        machine's local time and turned into UTC like ``timestamp``.
    """
    trials = run.trials
    frame = trials.copy()
    frame["task"] = task_categorical(trials["task"])
    frame["status"] = pd.Categorical(trials["status"], categories=STATUSES)
    frame["run_secs"] = pd.Series([_secs(v) for v in trials["run_secs"]], dtype=object,
                                  index=trials.index)
    frame["remeasured_secs"] = pd.Series(
        [None if v is None else [_secs(s) for s in v] for v in trials["remeasured_secs"]],
        dtype=object, index=trials.index)
    frame["logged_at"] = (trials["logged_at"].dt.tz_localize(_local_zone(), ambiguous="NaT",
                                                             nonexistent="NaT")
                          .dt.tz_convert("UTC").astype("datetime64[ns, UTC]"))
    targets = run.record_targets
    frame["target"] = [_target_or_raw(targets[i]) for i in range(len(trials))]
    keys = {int(w): run.workload_key(int(w)) for w in set(trials["workload"])}
    frame["workload_key"] = [keys[int(w)] for w in trials["workload"]]
    tasks = run.tasks.set_index("workload")
    for column, name in TASK_COLUMNS_JOINED.items():
        frame[name] = trials["workload"].map(tasks[column]).to_numpy()
    frame["task_index"] = frame["task_index"].astype("Int64")
    frame["task_done"] = frame["task_done"].astype("boolean")
    for column in _TEXT_COLUMNS:
        frame[column] = frame[column].astype("string")
    return frame


def task_categorical(names: Any) -> pd.Categorical:
    """Task names as a categorical whose categories are typed ``str`` (so that an empty one
    also reads back from Parquet as categorical)."""
    names = [str(n) for n in names]
    return pd.Categorical(names, categories=pd.Index(sorted(set(names)), dtype="str"))


def _local_zone() -> Any:
    return datetime.now().astimezone().tzinfo


def _target_or_raw(raw: str) -> str:
    try:
        return target_text(raw)
    except ValueError:  # a target TVM cannot read: its JSON text, as the record holds it
        return raw
