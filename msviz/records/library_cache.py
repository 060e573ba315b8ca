"""Where a :class:`~msviz.records.library.Library` keeps each source's index: one JSON file
per source in msviz's cache folder (:mod:`msviz.records.open_cache`'s), never in the library,
keyed by the source files' size, times and inode. An absent, stale or malformed cache is
indexed afresh; an unwritable cache folder is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from msviz.records import database as db_files
from msviz.records import open_cache
from msviz.records.sidecar import SIDECAR_FILE

__all__ = ["input_stats", "load", "save"]


def input_stats(work_dir: Path, bundle: Path | None) -> list[list]:
    """Name, size, times and inode of each file an index is read from (a bundle: its zip)."""
    files = [bundle] if bundle else [work_dir / db_files.WORKLOAD_FILE,
                                     work_dir / db_files.RECORD_FILE, work_dir / SIDECAR_FILE]
    if not bundle and (work_dir / "logs").is_dir():
        files += sorted(p for p in (work_dir / "logs").glob("*.log") if p.is_file())
    stats = [(p.name, p.stat()) for p in files if p.is_file()]
    return [[n, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino] for n, s in stats]


def _cache_file(path: Path) -> Path:
    name = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
    return open_cache.cache_path(path).parent / f"library-{name}.json"


def load(path: Path, key: str) -> dict[str, Any] | None:
    """The cached index of ``path`` when its key is ``key``, else None."""
    try:
        with open(_cache_file(path), encoding="utf-8") as f:
            data = json.load(f)
        return data["index"] if data.get("key") == key else None
    except Exception:  # absent, unreadable or malformed: indexed afresh
        return None


def save(path: Path, key: str, index: dict[str, Any]) -> None:
    """Keep the index of ``path`` under ``key`` (written whole, then renamed in place)."""
    target = _cache_file(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".library-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"key": key, "index": index}, f)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:  # an unwritable cache folder: the library works uncached
        return
