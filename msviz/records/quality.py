"""Time to quality as stored: a model's estimated end-to-end latency after each batch, against
wall time.

The estimate is MetaSchedule's "Total latency" with one change: a task that has no successful
trial yet counts at its *untuned* time (its unscheduled PrimFunc built and timed once), not as
unknown, so that the curve starts at the untuned model and falls as tasks get tuned
(:func:`model_estimate`). A task with neither a trial nor an untuned time leaves the estimate
unknown (NaN): leaving it out would make the model look faster than any build of it.

Where the points come from:

* an msviz session writes them: an ``untuned`` sidecar line (each task's untuned time, measured
  once at the start through the session's builder and runner) and a ``model_latency`` line after
  each batch (:data:`UNTUNED_KIND`, :data:`QUALITY_KIND`; the events of the same names);
* a stock ``tune_relax``/``tune_tasks`` work dir has no timings: :func:`log_batches` rebuilds its
  batches from the task-scheduler log (each ``TaskScheduler picks Task #i`` line starts a batch
  of the size its ``Sending N sample(s) to builder`` line says; a batch's results are known when
  the next pick starts, as the stock ``LocalRunner`` returns only once it has run the batch) and
  the records of each task in file order. Stock logs stamp to the second.

The same concept drawn: :mod:`msviz.views.quality`.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from msviz.errors import MsvizWarning

__all__ = [
    "QUALITY_KIND", "UNTUNED_KIND", "QualityBatch", "log_batches", "model_estimate",
    "recorded_points", "recorded_untuned", "run_batches", "run_started", "run_untuned",
    "scheduler_log_of",
    "sidecar_batches", "weights_of",
]

#: The sidecar line (and event) of the estimate after a batch.
QUALITY_KIND = "model_latency"
#: The sidecar line (and event) of each task's untuned time, measured at the session's start.
UNTUNED_KIND = "untuned"

_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) ")
_PICK = re.compile(r"TaskScheduler picks Task #(\d+): \"?(.*?)\"?\s*$")
_SENDING = re.compile(r"Sending (\d+) sample\(s\) to builder")


class QualityBatch(NamedTuple):
    """One measured batch of one task, as the curve needs it."""

    seconds: float  # wall time since the run started when the batch's results were known
    task: str
    trials: int  # trials the batch measured
    latencies_us: tuple[float, ...]  # its successful trials' latencies (mean of run_secs)


def model_estimate(weights: Mapping[str, float], best_us: Mapping[str, float | None],
                   untuned_us: Mapping[str, float | None]) -> tuple[float, int]:
    """Sum over tasks of weight x (best latency, else untuned time), in ``weights``' order.

    Returns
    -------
    estimate_us : float
        NaN when some task has neither.
    untuned : int
        Tasks counted at their untuned time (those with neither are not counted).
    """
    total, untuned = 0.0, 0
    for name, weight in weights.items():
        best = best_us.get(name)
        if best is not None and math.isfinite(best):
            total += weight * best
            continue
        base = untuned_us.get(name)
        if base is None or not math.isfinite(base):
            total = math.nan  # unknown; the count goes on
            continue
        total += weight * base
        untuned += 1
    return total, untuned


def recorded_points(other: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The ``model_latency`` lines of a sidecar (``Sidecar.other``), in order."""
    return [dict(e) for e in other if e.get("kind") == QUALITY_KIND]


def recorded_untuned(other: Iterable[Mapping[str, Any]]) -> dict[str, float | None]:
    """Each task's untuned time (µs) from a sidecar's last ``untuned`` line ({} if none)."""
    lines = [e for e in other if e.get("kind") == UNTUNED_KIND]
    if not lines:
        return {}
    return {str(t["name"]): t.get("untuned_us") for t in lines[-1].get("tasks") or ()}


def run_untuned(run: Any) -> dict[str, float | None]:
    """The untuned times a work dir's sidecar recorded (``Run``'s; {} for a stock work dir or a
    live run)."""
    return recorded_untuned(getattr(run, "sidecar_entries", None) or [])


def _stamp(text: str) -> datetime | None:
    match = _STAMP.match(text)
    return datetime.fromisoformat(match.group(1)) if match else None


def _ok_latencies(mine: pd.DataFrame) -> tuple[float, ...]:
    ok = mine[mine["status"] == "ok"]["latency_us"].dropna()
    return tuple(float(v) for v in ok)


def log_batches(scheduler_log: Path, trials: pd.DataFrame, names: Mapping[int, str]
                ) -> list[QualityBatch]:
    """A stock run's batches from its task-scheduler log and its records (see the module doc).

    Parameters
    ----------
    scheduler_log : Path
        ``logs/*task_scheduler.log``.
    trials : pandas.DataFrame
        ``Run.trials`` (file order; ``task``, ``status``, ``latency_us``).
    names : mapping of int to str
        Task id (the log's ``#i``) -> the task's name in ``trials``.

    Returns
    -------
    batches : list of QualityBatch
        In the order the batches ended; seconds since the log's first stamp. Where a task's
        records and logged batches disagree in number, with a warning: fewer records (an
        interrupted run) fill the first batches; more (an earlier run whose log is gone)
        leave out the first records.
    """
    picks: list[list[Any]] = []  # [start, task id, size]
    first = last = None
    for text in scheduler_log.read_text(errors="replace").splitlines():
        stamp = _stamp(text)
        if stamp is None:
            continue
        first = first or stamp
        last = stamp
        pick = _PICK.search(text)
        if pick:
            picks.append([stamp, int(pick.group(1)), 0])
            continue
        sending = _SENDING.search(text)
        if sending and picks and picks[-1][2] == 0:
            picks[-1][2] = int(sending.group(1))
    if first is None or last is None:
        return []
    sizes: dict[int, int] = {}
    for _, task, size in picks:
        sizes[task] = sizes.get(task, 0) + size
    rows: dict[int, list[int]] = {}
    for task, want in sizes.items():
        name = names.get(task)
        mine = list(trials.index[trials["task"] == name]) if name is not None else []
        if len(mine) < want:  # an interrupted run: its last batches were never joined
            warnings.warn(f"task #{task} ({name}): the scheduler log sends {want} trials to the "
                          f"builder, the records hold {len(mine)}: the last logged batches "
                          "were never stored (an interrupted run?)", MsvizWarning, stacklevel=2)
            mine = mine + [-1] * (want - len(mine))
        elif len(mine) > want:  # records of an earlier run whose log is gone
            warnings.warn(f"task #{task} ({name}): the records hold {len(mine)} trials, the "
                          f"scheduler log sends {want} to the builder: the last records are "
                          "taken as the logged batches'", MsvizWarning, stacklevel=2)
            mine = mine[len(mine) - want:]
        rows[task] = mine
    taken = dict.fromkeys(sizes, 0)
    out = []
    for k, (_, task, size) in enumerate(picks):
        if not size:
            continue
        end = picks[k + 1][0] if k + 1 < len(picks) else last
        chunk = [r for r in rows[task][taken[task]:taken[task] + size] if r != -1]
        taken[task] += size
        out.append(QualityBatch((end - first).total_seconds(), str(names.get(task, task)),
                                size, _ok_latencies(trials.loc[chunk])))
    return out


def sidecar_batches(trials: pd.DataFrame, start: str | None) -> list[QualityBatch]:
    """An msviz work dir's batches from its trials' sidecar stamps and batch numbers (for work
    dirs written before sessions recorded ``model_latency`` lines): a batch ends at its last
    trial's stamp; seconds since ``start`` (the first sidecar stamp) or the first trial's."""
    have = trials.dropna(subset=["timestamp", "batch"])
    if have.empty:
        return []
    stamps = pd.to_datetime(have["timestamp"], utc=True, format="ISO8601")
    origin = pd.to_datetime(start, utc=True, format="ISO8601") if start else stamps.min()
    out = []
    for (task, _), mine in have.groupby(["task", "batch"], sort=False):
        end = stamps.loc[mine.index].max()
        out.append(QualityBatch((end - origin).total_seconds(), str(task), len(mine),
                                _ok_latencies(mine)))
    return sorted(out, key=lambda b: b.seconds)


def scheduler_log_of(work_dir: Path) -> Path | None:
    """The task-scheduler log of a work dir (None if it has none)."""
    files = sorted((Path(work_dir) / "logs").glob("*task_scheduler.log"))
    return files[0] if files else None


def _weights(tasks: pd.DataFrame) -> dict[str, float]:
    return {str(n): 1.0 if w != w else float(w) for n, w in zip(tasks["task"], tasks["weight"])}


def run_batches(run: Any) -> tuple[list[QualityBatch], str]:
    """A work dir's batches for the curve and where they came from (``"sidecar"`` stamps of
    an msviz run, ``"logs"`` of a stock one, ``"none"``)."""
    trials = run.trials
    if "timestamp" in trials.columns and trials["timestamp"].notna().any():
        other = getattr(run, "sidecar_entries", None) or []
        stamps = [e.get("timestamp") for e in other if e.get("timestamp")]
        return sidecar_batches(trials, min(stamps) if stamps else None), "sidecar"
    log = scheduler_log_of(run.work_dir)
    if log is None or trials.empty:
        return [], "none"
    names = {int(i): str(n) for i, n in zip(run.tasks["index"], run.tasks["task"])}
    return log_batches(log, trials, names), "logs"


def run_started(run: Any) -> pd.Timestamp | None:
    """When a work dir's run started: an msviz session's first sidecar stamp (its environment
    line, written as it starts; tz-aware), else the first stamp of a stock run's task-scheduler
    log (naive, as its logs and ``Run.trials["logged_at"]`` are); None if neither is known."""
    other = getattr(run, "sidecar_entries", None) or []
    stamps = [e.get("timestamp") for e in other if e.get("timestamp")]
    if stamps:
        return pd.to_datetime(min(stamps), utc=True, format="ISO8601")
    log = scheduler_log_of(run.work_dir) if getattr(run, "work_dir", None) else None
    if log is None:
        return None
    with open(log, errors="replace") as f:
        for text in f:
            stamp = _stamp(text)
            if stamp is not None:
                return pd.Timestamp(stamp)
    return None


def weights_of(run: Any) -> dict[str, float]:
    """Task name -> weight of a Run, in task order: from the task table its logs printed last
    (every task, tuned or not), else from ``Run.tasks`` (the tasks with records); weight 1
    when unknown, as MetaSchedule's default. Where the logs name fewer tasks than the records
    hold, a workload the logs do not name counts only if the run knows its weight: records of
    other workloads (a tuning library merged into the work dir first) are not the model's."""
    logged = getattr(run, "task_table", None)
    if logged is not None and len(logged) >= len(run.tasks):
        ordered = logged.sort_values("id")
        return {str(n): float(w) for n, w in zip(ordered["name"], ordered["weight"])}
    if logged is not None and len(logged) and run.tasks["weight"].notna().any():
        named = set(map(str, logged["name"]))
        tasks = run.tasks[run.tasks["weight"].notna() | run.tasks["task"].isin(named)]
        return _weights(tasks)
    return _weights(run.tasks)
