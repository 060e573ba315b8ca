"""What a resumed session takes from the records its work dir already holds, read once and
bounded.

A session resumed on a work dir of 20,000 records used to read the record file once per task,
replay every stored trace of each task, hash it and train the cost model on all of them (and
XGBoost then retrained on every one of those samples after each batch): 108 s and 2 GB before
the first batch. Here:

* :class:`StoredRecords` reads the record file's columns once per session (only each line's tail:
  workload, ``run_secs``, target; :func:`msviz.records.database.read_record_columns`) and the
  sidecar once, and hands each task its lines;
* the stored schedules a search must not pick again are known by their structural hashes, which
  msviz's sidecar holds for every trial it measured (no trace replayed for them);
* the cost model trains on a bounded sample of each task's successful records,
  :func:`training_sample`: at most :data:`TRAIN_AT_MOST` per task, spread evenly over the latency
  ranking (the fastest always in it), so the model sees the good and the bad schedules of the
  earlier run in their proportions; only those traces are replayed
  (:func:`stored_candidates`).

A stock work dir has no sidecar hashes: its sampled records are hashed as they are replayed, and
a stored schedule outside the sample may be measured again (once).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from msviz import compat
from msviz.engine.measure import callbacks
from msviz.engine.tuning.work_dir_database import read_tuning_records
from msviz.records import database as db_files
from msviz.records import row as trial_row
from msviz.records.sidecar import read_sidecar

__all__ = ["TRAIN_AT_MOST", "StoredRecords", "best_history_ms", "learn_from_database",
           "mean_secs", "stored_candidates", "training_sample"]

#: Stored records of one task the cost model trains on when a session resumes.
TRAIN_AT_MOST = 256


class StoredRecords:
    """A work dir's records (those ``database``, a
    :class:`~msviz.engine.tuning.work_dir_database.WorkDirDatabase`, read) and sidecar
    trials, read once (on first use) for every task."""

    def __init__(self, work_dir: str | Path, database: Any) -> None:
        self.work_dir = Path(work_dir)
        self._database = database
        self._lock = threading.Lock()
        self._by_workload: dict[int, list[db_files.RecordLine]] | None = None
        self._trials: dict[int, dict] = {}

    def _read(self) -> None:
        with self._lock:
            if self._by_workload is not None:
                return
            self._trials = read_sidecar(self.work_dir).trials
            self._by_workload = self._database.stored_records()

    def of(self, workload_index: int) -> list[db_files.RecordLine]:
        """The records of one workload (by its line in the workload file), in file order."""
        self._read()
        return list(self._by_workload.get(workload_index, ()))  # type: ignore[union-attr]

    @property
    def trials(self) -> dict[int, dict]:
        """The sidecar's trial lines by record line."""
        self._read()
        return self._trials


def mean_secs(run_secs: Sequence[float] | None) -> float:
    """A record's mean run time (s) as stock's database ranks it; NaN where it is no
    measurement (no times, or only MetaSchedule's 1e10 mark: :func:`row.valid_run_secs`)."""
    if not trial_row.valid_run_secs(run_secs):
        return math.nan
    return trial_row.mean_run_secs(run_secs)


def training_sample(secs: Sequence[float], at_most: int | None = None) -> list[int]:
    """Positions (into ``secs``) of at most ``at_most`` (default :data:`TRAIN_AT_MOST`)
    successful records spread evenly over their ranking by run time, the fastest first; NaNs
    (failures) are never picked.

    Examples
    --------
    >>> training_sample([3.0, float("nan"), 1.0, 2.0, 5.0, 4.0], at_most=3)
    [2, 0, 4]
    """
    at_most = TRAIN_AT_MOST if at_most is None else at_most
    values = np.asarray(secs, dtype=float)
    ok = np.flatnonzero(~np.isnan(values))
    ranked = ok[np.argsort(values[ok], kind="stable")]
    if len(ranked) <= at_most:
        return [int(i) for i in ranked]
    picks = np.unique(np.linspace(0, len(ranked) - 1, max(at_most, 1)).round().astype(int))
    return [int(i) for i in ranked[picks]]


def stored_candidates(path: Path, records: Iterable[db_files.RecordLine], workload: Any
                      ) -> tuple[list[tuple[db_files.RecordLine, Any]], list[int]]:
    """Replay the traces of ``records`` (lines of the record file at ``path``) on ``workload``
    (the task's database Workload): the measure candidates, and the lines that would not
    replay (skipped)."""
    read, bad = read_tuning_records(path, records, workload)
    out = []
    for rec, record in read:
        try:
            out.append((rec, record.as_measure_candidate()))
        except Exception:  # TVM's own error types: a trace that no longer replays
            bad.append(rec.line)
    return out, bad


def learn_from_database(tuner: Any) -> None:
    """msviz preset, on resume: the tuner's search never re-picks a stored schedule, and the
    cost model trains on a bounded sample of the stored records (:func:`training_sample`).

    Infrastructure failures are neither: they may be picked again and never train."""
    stored = tuner.shared.stored
    side = stored.trials
    usable = [r for r in stored.of(tuner.workload_index) if r.line not in tuner._infra_lines]
    for rec in usable:  # msviz's sidecar hashed every trial it measured
        shash = side.get(rec.line, {}).get("shash")
        if shash is not None:
            tuner.search.measured.add(int(shash))
    picks = training_sample([mean_secs(r.run_secs) for r in usable])
    with tuner.timeit("msviz/ResumeReplay"):
        replayed, _bad = stored_candidates(tuner.work_dir / db_files.RECORD_FILE,
                                           [usable[i] for i in picks], tuner.token)
    cands, results = [], []
    for rec, cand in replayed:
        if side.get(rec.line, {}).get("shash") is None:  # a stock record
            tuner.search.measured.add(int(compat.structural_hash(cand.sch.mod)))
        cands.append(cand)
        results.append(compat.ms.runner.RunnerResult([float(s) for s in rec.run_secs], None))
    if cands:
        with tuner.timeit("msviz/ResumeTrain"):
            callbacks.train(tuner.cost_model, tuner.context, cands, results, tuner.num_threads)
        if tuner.evo is not None:
            tuner.evo.trained_on(len(cands))
    tuner.emit("cost_model_updated", batch=None, samples=int(getattr(
        tuner.cost_model, "data_size", len(cands))), source="database", trained_on=len(cands),
        stored=len(usable))


def best_history_ms(records: list, side: dict) -> list[float]:
    """The best-latency history (ms) of a task's stored records, one value per batch (by the
    sidecar's batch numbers; records without one count as one batch each)."""
    batches: dict[Any, list[float]] = {}
    for r in records:
        key = side.get(r.line, {}).get("batch")
        key = ("line", r.line) if not isinstance(key, int) else ("batch", key)
        us = trial_row.median_latency_us(r.run_secs)
        batches.setdefault(key, []).append(us / 1e3 if not math.isnan(us) else 1e9)
    history, best = [], 1e9
    for values in batches.values():
        best = min(best, *values)
        history.append(best)
    return history
