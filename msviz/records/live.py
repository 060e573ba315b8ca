"""A live session's records: one read of the work dir, then the rows its events carry.

Each ``measured`` event already holds the new trials, so :class:`LiveRun` appends them instead
of re-reading the work dir: a refresh costs the same at trial 10,000 as at trial 10 (the new
rows become one small typed chunk, joined to the cached frame). After the session, its
``trials`` equal ``msviz.open(work_dir).trials``. Traces are read from the record file only
when a trial is opened, by byte offset (the line index grows by reading only the new bytes).
"""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import pandas as pd

from msviz.errors import WorkDirError
from msviz.records import database as db_files
from msviz.records import row as trial_row
from msviz.records.row import ALL_COLUMNS
from msviz.records.run import Run, tasks_frame
from msviz.records.run_actions import READ_ONLY, RunActions
from msviz.records.sidecar import SIDECAR_FILE

__all__ = ["LiveRun"]

_LINEAGE = ("iteration", "origin", "pick", "predicted_score", "design_space", "mutator",
            "parent", "ancestor_line", "check", "check_detail", "device", "carried_from",
            "carry", "adjusted")


class LiveRun(Run):
    """The records of a running session, as a :class:`Run` kept up to date by its events.

    Parameters
    ----------
    work_dir : str | Path
        The session's work dir; what it holds already is read once, now.
    task : str
        The session's task (workload name), for rows whose event does not name it.
    flop : float
        FLOPs of the session's workload (for GFLOPS), until a ``started`` event gives them.
    actions : RunActions
        What its checks and exports are handed to (the session's engine).
    """

    def __init__(self, work_dir: str | Path, *, task: str = "main", flop: float = math.nan,
                 actions: RunActions = READ_ONLY) -> None:
        self.work_dir = Path(work_dir)
        self.actions = actions
        self._lock = threading.RLock()
        self._task, self._flop = task, float(flop)
        self._generation: int | None = None  # from "picked", for rows that do not carry it
        records = self.work_dir / db_files.RECORD_FILE
        if records.is_file() and records.stat().st_size > 0:
            base = Run(self.work_dir)  # the one read of what the work dir already holds
            self._adopt(base)
            frame = base.trials
        else:
            self._workloads, self._records = [], db_files.RecordColumns([], [], [], [], [])
            self._task_names, self._flops, self._weights = {}, {}, {}
            self._task_ids, self._done = {}, {}
            self.task_table, self.total_latency_us = None, None
            self._profile_rows = []
            self.environments, self.environment = [], None
            frame = trial_row.trials_frame({c: [] for c in ALL_COLUMNS})
        self._frame: pd.DataFrame = frame
        self._pending: dict[str, list] = {c: [] for c in ALL_COLUMNS}
        self._size = len(frame)
        self._counts = {int(w): int(n) for w, n in frame["workload"].value_counts().items()}
        self._last_line = int(frame["line"].max()) if len(frame) else 0
        self._rows_by_line: dict[int, int] | None = None
        records = self._records
        self._offsets = dict(zip(records.line, records.offset))
        # where to go on reading line offsets: (byte offset, the line that starts there)
        self._scan = (records.offset[-1], records.line[-1]) if records.line else (0, 1)
        self._tasks: tuple[int, pd.DataFrame] | None = None
        self._model_tasks: dict[str, dict] = {}  # by task name, from the last "tasks" event

    # -- tables ---------------------------------------------------------------------------------

    @property
    def trials(self) -> pd.DataFrame:  # type: ignore[override]
        """Every trial so far (same columns and dtypes as ``msviz.open(work_dir).trials``)."""
        with self._lock:
            if self._pending["line"]:
                start = len(self._frame)
                chunk = trial_row.trials_frame(
                    self._pending, index=pd.RangeIndex(start, start + len(self._pending["line"])))
                self._frame = pd.concat([self._frame, chunk]) if start else chunk
                self._pending = {c: [] for c in ALL_COLUMNS}
            # a shallow copy: copy-on-write keeps a caller's edits out of this table
            return self._frame.copy(deep=False)

    @property
    def tasks(self) -> pd.DataFrame:  # type: ignore[override]
        """The per-task table of :attr:`trials`."""
        with self._lock:
            if self._tasks is None or self._tasks[0] != self._size:
                names = {**self._task_names}
                flops = {**self._flops}
                weights, task_ids = {**self._weights}, {**self._task_ids}
                trials = self.trials
                for w, name in zip(trials["workload"], trials["task"]):  # a model's tasks
                    entry = self._model_tasks.get(str(name))
                    if entry is not None and int(w) not in task_ids:
                        task_ids[int(w)] = int(entry["index"])
                        weights.setdefault(int(w), float(entry["weight"]))
                        if entry.get("flop") is not None:
                            flops.setdefault(int(w), float(entry["flop"]))
                self._tasks = (self._size, tasks_frame(trials, names, flops, weights,
                                                       task_ids=task_ids, done=self._done))
            return self._tasks[1].copy(deep=False)

    def __len__(self) -> int:
        return self._size

    def name_workload(self, workload: int, *, task: str, flop: float, weight: int) -> None:
        """Say which task a workload index of the database is (its name, FLOP count and weight
        in the model); a workload already named keeps what it was told first."""
        with self._lock:
            self._task_names.setdefault(workload, task)
            self._flops.setdefault(workload, float(flop))
            self._weights.setdefault(workload, weight)
            self._tasks = None

    # -- events ---------------------------------------------------------------------------------

    def feed(self, event: Any, *, workload: int | None = None) -> None:
        """Take what a session event says about the trials (``started``, ``picked``,
        ``measured``, ``remeasured``), its time (``profile``) and the rules its records are made
        with (``environment``); other events are ignored.

        Parameters
        ----------
        event : Event
            The event.
        workload : int, optional
            The session's workload index, for rows that do not carry it.
        """
        kind = event.kind
        if kind == "started":
            if event.get("flop") is not None:
                self._flop = float(event["flop"])
        elif kind == "tasks":  # a model's tasks: their IDs, weights and FLOPs
            with self._lock:
                self._model_tasks = {str(t["name"]): dict(t) for t in event.get("tasks") or ()}
                self._tasks = None
        elif kind == "picked":
            self._generation = event.get("generation")
        elif kind == "environment":  # the session's rules from this record line on
            env = json.loads(json.dumps(dict(event.data)))  # as a sidecar read gives it
            with self._lock:
                if env not in self.environments:  # read from the sidecar already, or replayed
                    self.environments = [*self.environments, env]
                    self.environment = env
        elif kind == "profile":
            self._profile_rows.append({"task": event.task, "batch": event.get("batch"),
                                       "wall": event.get("wall"), "stages": event.get("stages")})
        elif kind == "measured":
            for data in event.get("trials") or ():
                self.append(data, task=event.task, batch=event.get("batch"), time=event.time,
                            workload=workload)
        elif kind == "remeasured":
            if event.get("new_trial"):
                data = event.get("trial") or self._sidecar_entry(event["line"])
                self.append({"origin": "edit", "pick": "user", **data,
                             "line": event["line"]}, task=event.task, batch=None,
                            time=event.time, workload=workload)
            else:
                secs = event.get("run_secs")
                self.remeasure(event["line"], list(secs) if secs else None)

    def append(self, data: dict, *, task: str, batch: int | None, time: float,
               workload: int | None) -> None:
        """Add one trial from a ``measured`` event's row (skipped if its line is already in,
        or if it has no record line: the stock database does not hold it)."""
        if data.get("line") is None:
            return
        line = int(data["line"])
        with self._lock:
            if line <= self._last_line:
                return
            w = int(data["workload"]) if data.get("workload") is not None else workload
            if w is None:
                raise ValueError(f"trial at record line {line} names no workload")
            name = self._task_names.setdefault(w, data.get("task") or task or self._task)
            model_flop = (self._model_tasks.get(name) or {}).get("flop")  # a model's task
            flop = self._flops.setdefault(
                w, self._flop if model_flop is None else float(model_flop))
            secs = trial_row.stored_run_secs(data.get("run_secs"))
            error = data.get("error")
            latency = trial_row.mean_latency_us(secs)
            stamp = data.get("timestamp", time)
            k = self._counts.get(w, 0)
            values = {
                "task": name, "trial": self._size, "task_trial": k,
                "status": trial_row.status(secs, data.get("error_kind"), error),
                "latency_us": latency, "gflops": trial_row.gflops(flop, latency),
                "run_secs": secs, "error": error, "workload": w, "line": line,
                "logged_at": trial_row.log_time(stamp),
                "timestamp": trial_row.iso_timestamp(stamp),
                "batch": data.get("batch", batch),
                "generation": data.get("generation", self._generation),
                "remeasured_secs": None,
            }
            for column in _LINEAGE:
                values[column] = data.get(column)
            for column in ALL_COLUMNS:
                self._pending[column].append(values[column])
            if self._rows_by_line is not None:
                self._rows_by_line[line] = self._size
            self._counts[w] = k + 1
            self._size += 1
            self._last_line = line

    def remeasure(self, line: int, run_secs: list[float] | None) -> None:
        """Add a re-measurement to the trial at record ``line`` (as the sidecar merge does)."""
        with self._lock:
            frame = self.trials  # joins the pending rows
            if self._rows_by_line is None:
                self._rows_by_line = {int(v): i for i, v in enumerate(frame["line"])}
            row = self._rows_by_line.get(int(line))
            if row is None:
                return  # a schedule the table does not hold: the sidecar keeps it in `other`
            values = frame["remeasured_secs"].tolist()
            values[row] = [*(values[row] or []), run_secs]
            self._frame = frame.assign(
                remeasured_secs=pd.Series(values, dtype=object, index=frame.index))

    def _sidecar_entry(self, line: int) -> dict:
        """The sidecar's ``trial`` entry of ``line``, read from the file's tail (it was just
        written there)."""
        path = self.work_dir / SIDECAR_FILE
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 65536))
            tail = f.read().split(b"\n")
        for raw in reversed(tail):
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if entry.get("kind") == "trial" and entry.get("line") == line:
                return entry
        return {}

    # -- traces, read on demand -----------------------------------------------------------------

    def _offset(self, line: int) -> int:
        path = self.work_dir / db_files.RECORD_FILE
        if line not in self._offsets:
            offset, at = self._scan
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read()
            start = 0
            while True:  # complete lines only: the last one may still be being written
                end = data.find(b"\n", start)
                if end < 0:
                    break
                self._offsets.setdefault(at, offset + start)
                at, start = at + 1, end + 1
            self._scan = (offset + start, at)
        if line not in self._offsets:
            raise WorkDirError(f"{path} has no complete line {line}")
        return self._offsets[line]

    def _record_location(self, index: int) -> tuple[int, int, int]:
        frame = self.trials
        line, workload = int(frame["line"].iat[index]), int(frame["workload"].iat[index])
        with self._lock:
            return line, self._offset(line), workload

    def _workload_entry(self, workload: int) -> db_files.WorkloadLine | None:
        with self._lock:  # the session commits its workload after the first read
            if workload >= len(self._workloads) or self._workloads[workload] is None:
                self._workloads = db_files.read_workloads(self.work_dir / db_files.WORKLOAD_FILE)
            return self._workloads[workload]

    def __repr__(self) -> str:
        return f"LiveRun({str(self.work_dir)!r}, trials={self._size})"
