"""The session's database: MetaSchedule's two JSON files, written line for line as
``JSONDatabase`` writes them, with only the best stored records of each task held in memory.

Stock ``JSONDatabase`` parses every line of both files into memory when it opens: on a work dir
of 20,000 records that took 20 s and 1 GB before a resumed session's first batch. A session
needs far less of what is stored: the search asks for the best few records of its task
(``get_top_k``, its initial population's share from the database), and every new record is
appended. :class:`WorkDirDatabase` therefore

* reads the record file's columns with msviz's fast reader (no trace parsed), and when a task
  commits its workload, parses and holds only that workload's :data:`KEEP_TOP` fastest valid
  records (in a ``MemoryDatabase``, which ranks them as ``JSONDatabase`` does);
* appends each new workload and record to the files in ``JSONDatabase``'s own format (the lines
  are made by TVM's JSON writer, ``ffi.json.Stringify``, from ``Workload.as_json`` and
  ``TuningRecord.as_json``), so stock MetaSchedule, ``msviz.open`` and ``compile_relax`` read
  them as ever.

What it does not do: ``get_all_tuning_records`` gives the held records (the best stored and
this session's), not every line of the file; the reading side of msviz (``msviz.open``,
``Run``) and stock tools read the files themselves.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from msviz import compat
from msviz.records import database as db_files
from msviz.records import row as trial_row

__all__ = ["KEEP_TOP", "WorkDirDatabase", "read_tuning_records"]

#: Stored records of one workload held in memory when a session opens a work dir: the
#: fastest ones (``get_top_k`` asks for at most a population's share, 512 x 0.2 by default).
KEEP_TOP = 256

_STRINGIFY = compat.get_global_func("ffi.json.Stringify")


def _plain(value: Any) -> Any:
    """An ``as_json`` value as plain lists, numbers and strings, with booleans as 0 and 1:
    ``JSONDatabase``'s writer prints a trace's boolean attributes as integers."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, str)) or value is None:
        return value
    if isinstance(value, compat.IndexMap):  # a prepacked weight's layout (TransformLayout)
        return compat.ir_save_json(value)
    if hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    return [_plain(v) for v in value]


def _record_json(record: Any) -> Any:
    """``record.as_json()``, which TVM's Python cannot give for a trace that holds an
    ``IndexMap`` (``RewriteLayout``'s ``TransformLayout``): the raw form, made plain here."""
    return compat.to_jsonable(compat.tuning_record_as_json(record))


def _dumps(value: Any) -> str:
    """One line as ``JSONDatabase`` writes it (TVM's JSON writer: its number format)."""
    return str(_STRINGIFY(_plain(value), None))


def read_tuning_records(path: Path, records: Iterable[db_files.RecordLine], workload: Any
                        ) -> tuple[list[tuple[db_files.RecordLine, Any]], list[int]]:
    """The ``TuningRecord`` of each of ``records`` (lines of the record file at ``path``, read
    at their offsets) on ``workload``, and the lines whose trace TVM would not read."""
    out, bad = [], []
    with open(path, "rb") as f:
        for rec in records:
            f.seek(rec.offset)
            try:
                body = json.loads(f.readline())[1]
                compat.register_intrins_for(body)
                out.append((rec, compat.tuning_record_from_json(body, workload)))
            except Exception:  # TVM's own error types: a trace that no longer reads
                bad.append(rec.line)
    return out, bad


class WorkDirDatabase:
    """A work dir's ``database_workload.json`` and ``database_tuning_record.json``.

    Parameters
    ----------
    work_dir : str | Path
        The work dir (the files are created when missing).
    keep_top : int, optional
        Stored records of each workload held in memory (default :data:`KEEP_TOP`).
    """

    def __init__(self, work_dir: str | Path, keep_top: int | None = None) -> None:
        self.work_dir = Path(work_dir)
        self.path_workload = self.work_dir / db_files.WORKLOAD_FILE
        self.path_tuning_record = self.work_dir / db_files.RECORD_FILE
        self.work_dir.mkdir(parents=True, exist_ok=True)
        for path in (self.path_workload, self.path_tuning_record):
            path.touch(exist_ok=True)
        self.keep_top = KEEP_TOP if keep_top is None else keep_top
        self._lock = threading.Lock()
        self._memory = compat.ms.database.MemoryDatabase()
        entries = db_files.read_workloads(self.path_workload)
        #: (shash text, JSON payload) of each workload line, by line index (None: corrupt).
        self._entries: list[Any] = list(entries)
        #: Workload -> its line index, for the workloads committed so far.
        self._index: list[tuple[Any, int]] = []
        self._stored: dict[int, list[db_files.RecordLine]] | None = None
        self._size = 0

    # -- workloads ---------------------------------------------------------------------------------

    def stored_records(self) -> dict[int, list[db_files.RecordLine]]:
        """The records the file held when first asked (read once), by workload index."""
        if self._stored is None:
            by: dict[int, list[db_files.RecordLine]] = {}
            for rec in db_files.read_records(self.path_tuning_record, len(self._entries)):
                by.setdefault(rec.workload, []).append(rec)
            self._stored = by
            self._size = sum(len(v) for v in by.values())
        return self._stored

    def _find(self, mod: Any) -> tuple[Any, int] | None:
        for workload, index in self._index:
            if compat.structural_equal(workload.mod, mod):
                return workload, index
        return None

    def has_workload(self, mod: Any) -> bool:
        """Whether ``mod`` is a workload of the file (committed or stored)."""
        with self._lock:
            if self._find(mod) is not None:
                return True
            shash = str(int(compat.structural_hash(mod)))
            return any(e is not None and e.shash == shash for e in self._entries)

    def commit_workload(self, mod: Any) -> Any:
        """The workload of ``mod``: the file's line for it (its fastest stored records loaded),
        or a new line appended."""
        with self._lock:
            found = self._find(mod)
            if found is not None:
                return found[0]
            shash = int(compat.structural_hash(mod))
            for index, entry in enumerate(self._entries):
                if entry is None or entry.shash != str(shash):
                    continue
                stored = compat.Workload.from_json([entry.shash, entry.payload])
                if compat.structural_equal(stored.mod, mod):
                    workload = self._memory.commit_workload(stored.mod)
                    self._index.append((workload, index))
                    self._load_best(workload, index)
                    return workload
            workload = self._memory.commit_workload(mod)
            self._append(self.path_workload, _dumps(workload.as_json()))
            self._entries.append(db_files.WorkloadLine(len(self._entries) + 1, str(shash), ""))
            self._index.append((workload, len(self._entries) - 1))
            return workload

    def _load_best(self, workload: Any, index: int) -> None:
        """Hold the ``keep_top`` fastest valid stored records of one workload, valid and ranked
        as stock's database ranks them (:func:`msviz.records.row.valid_run_secs`, the mean in
        file order; a record whose trace schedules nothing is not valid either)."""
        records = [r for r in self.stored_records().get(index, ())
                   if trial_row.valid_run_secs(r.run_secs)]
        records.sort(key=lambda r: (trial_row.mean_run_secs(r.run_secs), r.line))
        held, start = 0, 0
        while held < self.keep_top and start < len(records):
            chunk = records[start: start + self.keep_top - held]
            start += len(chunk)
            for _, record in read_tuning_records(self.path_tuning_record, chunk, workload)[0]:
                if len(record.trace.insts) and record.trace.insts[0].kind.name != "EnterPostproc":
                    self._memory.commit_tuning_record(record)
                    held += 1

    # -- records -------------------------------------------------------------------------------

    def commit_tuning_record(self, record: Any) -> None:
        """Hold ``record`` and append its line (``[workload index, record]``)."""
        with self._lock:
            found = [i for w, i in self._index if w.same_as(record.workload)] or \
                    [i for w, i in self._index if compat.structural_equal(w.mod,
                                                                          record.workload.mod)]
            if not found:
                raise ValueError("the record's workload was not committed to this database")
            self.stored_records()  # what was stored before this line
            self._memory.commit_tuning_record(record)
            self._append(self.path_tuning_record, _dumps([found[0], _record_json(record)]))
            self._size += 1

    def get_top_k(self, workload: Any, top_k: int) -> list[Any]:
        """The ``top_k`` fastest valid records of ``workload`` held (stored and new)."""
        if top_k < 0:
            raise ValueError("top_k must be non-negative")
        with self._lock:
            return list(self._memory.get_top_k(workload, top_k))

    def get_all_tuning_records(self) -> list[Any]:
        """The records held: the fastest stored ones of each committed workload and this
        session's (see the module doc)."""
        with self._lock:
            return list(self._memory.get_all_tuning_records())

    def __len__(self) -> int:
        """Records in the file (stored and new)."""
        with self._lock:
            self.stored_records()
            return self._size

    @staticmethod
    def _append(path: Path, line: str) -> None:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")

