"""The writer of msviz's append-only sidecar (``msviz_sidecar.jsonl``, read by
:mod:`msviz.records.sidecar`, which says what its lines hold): one JSON line per write, flushed
at once, a torn last line cut off when the file is reopened.
"""

from __future__ import annotations

import json
import math
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from msviz.errors import WriteError
from msviz.records import row as trial_row
from msviz.records.sidecar import SIDECAR_FILE

__all__ = ["SidecarWriter"]


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
