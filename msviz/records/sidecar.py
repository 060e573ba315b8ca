"""msviz's append-only sidecar: what MetaSchedule's stock JSON database drops.

The stock ``database_tuning_record.json`` keeps a trace and its ``run_secs`` (``[1e10]`` for a
failure) and nothing else. The engine appends one JSON line per trial to ``msviz_sidecar.jsonl``
in the same work dir, keyed by the record's line number in ``database_tuning_record.json``::

    {"v": 1, "kind": "trial", "line": 7, "task": "GMM-0", "timestamp": "...", "batch": 0,
     "generation": 0, "iteration": 2, "origin": "mutated", "pick": "score",
     "predicted_score": 0.93, "design_space": 1, "mutator": "MutateTileSize", "parent": 12,
     "ancestor_line": null, "error_kind": null, "error": null, "run_secs": [1.2e-05]}
    {"v": 1, "kind": "remeasure", "line": 7, "timestamp": "...", "run_secs": [...], "error": null}

Each line is written with one ``write`` and flushed, after the stock record it describes, so a
``kill -9`` can lose at most the sidecar line of the last record, never a record. A torn last line
(a crash mid-write) is cut off when a writer reopens the file, and skipped with a warning by the
reader.
"""

from __future__ import annotations

import json
import math
import os
import threading
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from msviz.errors import MsvizWarning, WriteError
from msviz.records import row as trial_row
from msviz.records.row import SIDECAR_COLUMNS

__all__ = [
    "SIDECAR_COLUMNS",
    "SIDECAR_FILE",
    "Sidecar",
    "SidecarWriter",
    "merge_sidecar",
    "quarantine_entries",
    "quarantine_of",
    "read_sidecar",
]

SIDECAR_FILE = "msviz_sidecar.jsonl"

#: The sidecar kind (and event kind) of a quarantine entry (see msviz.engine.search.quarantine).
QUARANTINE_KIND = "quarantine"
QUARANTINE_FIELDS = ("task", "where", "what", "message", "last_message", "count")


def quarantine_entries(items: Any) -> list[dict]:
    """The last state of each quarantine entry (by task, where, what) among ``quarantine``
    events' data or sidecar lines (other kinds are ignored), in the order each first
    appeared."""
    out: dict[tuple, dict] = {}
    for item in items:
        if item.get("kind", QUARANTINE_KIND) != QUARANTINE_KIND:
            continue
        key = (item.get("task"), item.get("where"), item.get("what"))
        out[key] = {k: item.get(k) for k in QUARANTINE_FIELDS}
    return list(out.values())


def quarantine_of(run: Any) -> list[dict]:
    """The quarantine entries of a :class:`msviz.Run` (the sidecar it read) or a work dir."""
    other = getattr(run, "sidecar_entries", None)
    if other is None:
        other = read_sidecar(getattr(run, "work_dir", run)).other
    return quarantine_entries(other)

def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _plain(value: Any) -> Any:
    """JSON-safe copy: NaN/inf become None, tuples become lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


class SidecarWriter:
    """Appends sidecar lines to ``work_dir/msviz_sidecar.jsonl``; safe to share between threads.

    Parameters
    ----------
    work_dir : str | Path
        The MetaSchedule work dir the sidecar belongs to.
    fsync : bool
        Also ``os.fsync`` after each line (survives a power loss, not only a process kill).
    """

    def __init__(self, work_dir: str | Path, *, fsync: bool = False) -> None:
        self.path = Path(work_dir) / SIDECAR_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fsync = fsync
        self._lock = threading.Lock()
        self.repaired = _cut_torn_tail(self.path)
        self._file = open(self.path, "a", encoding="utf-8")

    def write(self, kind: str, **fields: Any) -> dict:
        """Append one line ``{"v": 1, "kind": kind, "timestamp": now, **fields}``.

        A ``timestamp`` field (``time.time()`` seconds, e.g. the one an event carries) replaces
        now; it is stored as ISO 8601 UTC in milliseconds either way.
        """
        stamp = trial_row.iso_timestamp(fields.pop("timestamp", None)) or _now()
        entry = {"v": 1, "kind": kind, "timestamp": stamp, **_plain(fields)}
        text = json.dumps(entry, separators=(",", ":")) + "\n"
        with self._lock:
            if self._file.closed:
                raise ValueError(f"sidecar {self.path} is closed")
            try:
                self._file.write(text)
                self._file.flush()
                if self._fsync:
                    os.fsync(self._file.fileno())
            except OSError as err:  # a flush names no file: say which (and why, e.g. disk full)
                raise WriteError(f"cannot append to the sidecar {self.path}: "
                                 f"{err.strerror or err}") from err
        return entry

    def trial(self, line: int, **fields: Any) -> dict:
        """Record what the stock database drops about the record at ``line`` (1-based)."""
        return self.write("trial", line=line, **fields)

    def remeasure(self, line: int | None, run_secs: list[float] | None, **fields: Any) -> dict:
        """Record a re-measurement of the record at ``line``."""
        return self.write("remeasure", line=line, run_secs=run_secs, **fields)

    def close(self) -> None:
        """Close the file (idempotent)."""
        with self._lock:
            if not self._file.closed:
                try:
                    self._file.close()
                except OSError:  # the write that could not be flushed has raised already
                    pass

    def __enter__(self) -> SidecarWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _cut_torn_tail(path: Path) -> int:
    """Truncate a last line that has no newline (a crash mid-write); returns bytes removed."""
    if not path.is_file() or path.stat().st_size == 0:
        return 0
    with open(path, "rb+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 1))
        if f.read(1) == b"\n":
            return 0
        keep = 0
        pos = size
        while pos > 0:  # find the last newline, reading backwards in blocks
            step = min(65536, pos)
            pos -= step
            f.seek(pos)
            block = f.read(step)
            hit = block.rfind(b"\n")
            if hit >= 0:
                keep = pos + hit + 1
                break
        f.truncate(keep)
        return size - keep


@dataclass
class Sidecar:
    """The sidecar of a work dir, read back.

    Attributes
    ----------
    trials : dict[int, dict]
        The ``trial`` entry of each record line (the last one wins).
    remeasures : dict[int, list[dict]]
        The ``remeasure`` entries of each record line, in order.
    other : list[dict]
        Every other entry (session markers, remeasures of untracked schedules).
    """

    trials: dict[int, dict] = field(default_factory=dict)
    remeasures: dict[int, list[dict]] = field(default_factory=dict)
    other: list[dict] = field(default_factory=list)


def read_sidecar(work_dir: str | Path) -> Sidecar:
    """Read ``msviz_sidecar.jsonl`` of a work dir; an absent file gives an empty Sidecar.

    A line that is not valid JSON is skipped with one :class:`MsvizWarning` naming the file and
    the lines: a corrupt line anywhere, and a last line without its newline (torn by a crash, or
    still being written).
    """
    out = Sidecar()
    path = Path(work_dir) / SIDECAR_FILE
    if not path.is_file():
        return out
    bad: list[int] = []
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    torn = lines.pop()  # empty after a final newline, else a torn last line
    numbered = [(n, raw) for n, raw in enumerate(lines, start=1) if raw.strip()]
    try:  # one parse of the whole file; line by line only when some line is bad
        entries = json.loads(b"[" + b",".join(raw for _, raw in numbered) + b"]")
        if len(entries) != len(numbered):  # a line such as `1, 2` holds two values
            raise ValueError
    except ValueError:
        entries = [_entry(raw) for _, raw in numbered]
    for (number, _), entry in zip(numbered, entries, strict=True):
        if not isinstance(entry, dict):
            bad.append(number)
            continue
        kind, line = entry.get("kind"), entry.get("line")
        if kind == "trial" and isinstance(line, int):
            out.trials[line] = entry
        elif kind == "remeasure" and isinstance(line, int):
            out.remeasures.setdefault(line, []).append(entry)
        else:
            out.other.append(entry)
    problems = []
    if bad:
        shown = ", ".join(map(str, bad[:20])) + (" ..." if len(bad) > 20 else "")
        problems.append(f"skipped {len(bad)} corrupt sidecar line(s) (line {shown})")
    if torn.strip():
        problems.append(f"skipped its torn last line (line {len(lines) + 1}, no newline: "
                        "cut by a crash, or still being written)")
    if problems:
        warnings.warn(f"{path}: {'; '.join(problems)}", MsvizWarning, stacklevel=2)
    return out


def _entry(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def merge_sidecar(trials: Any, work_dir: str | Path) -> Any:
    """Add the sidecar's columns to a trials frame (matched on its ``line`` column).

    Sidecar error text replaces the frame's, and sets ``status`` (``build_error``,
    ``run_timeout``, ``infra_error``, ...) of a failed trial. Returns a new DataFrame.
    ``Run`` merges while it reads; this is for frames built elsewhere.
    """
    sidecar = read_sidecar(work_dir)
    frame = trials.copy()
    lines = [int(v) for v in frame["line"]] if "line" in frame else []
    data: dict[str, list] = {c: [] for c in SIDECAR_COLUMNS}
    errors = list(frame["error"]) if "error" in frame else [None] * len(lines)
    status = list(frame["status"]) if "status" in frame else [None] * len(lines)
    for row, line in enumerate(lines):
        entry = sidecar.trials.get(line, {})
        for column in SIDECAR_COLUMNS[:-1]:
            data[column].append(entry.get(column))
        again = sidecar.remeasures.get(line)
        data["remeasured_secs"].append([e.get("run_secs") for e in again] if again else None)
        if entry.get("error"):
            errors[row] = entry["error"]
            if status[row] != "ok":
                status[row] = trial_row.status(None, entry.get("error_kind"), entry["error"])
    data["timestamp"] = [trial_row.iso_timestamp(v) for v in data["timestamp"]]
    if lines:
        data["error"], data["status"] = errors, status
    typed = trial_row.trials_frame(data, index=frame.index)
    for column in typed.columns:
        frame[column] = typed[column]
    return frame
