"""Where a :class:`~msviz.records.library.Library` keeps each source's index: one JSON file
per source in msviz's cache folder (:mod:`msviz.records.open_cache`'s), never in the library,
keyed by the source files' size, times and inode, and holding a keyed BLAKE2b checksum of the
index whose key is a digest of the source files' contents (as the open cache's): an index
changed in the cache (forged latencies under the right key) or made from other contents fails
it. An absent, stale, forged or malformed cache is indexed afresh; an unwritable cache folder
is skipped. This module reads the cache; :mod:`msviz.archive.caches` writes it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from msviz.records import database as db_files
from msviz.records import open_cache
from msviz.records.sidecar import SIDECAR_FILE

__all__ = ["cache_data", "cache_file", "input_stats", "load", "save"]


def _input_files(work_dir: Path, bundle: Path | None) -> list[Path]:
    """The files an index is read from (a bundle: its zip)."""
    files = [bundle] if bundle else [work_dir / db_files.WORKLOAD_FILE,
                                     work_dir / db_files.RECORD_FILE, work_dir / SIDECAR_FILE]
    if not bundle and (work_dir / "logs").is_dir():
        files += sorted(p for p in (work_dir / "logs").glob("*.log") if p.is_file())
    return [p for p in files if p.is_file()]


def input_stats(work_dir: Path, bundle: Path | None) -> list[list]:
    """Name, size, times and inode of each file an index is read from (a bundle: its zip)."""
    stats = [(p.name, p.stat()) for p in _input_files(work_dir, bundle)]
    return [[n, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino] for n, s in stats]


def _checksum(path: Path, key: str, index: Any) -> str:
    """A BLAKE2b checksum of the key and the index (as canonical JSON), keyed by a digest of
    the contents of the files the index of ``path`` (a work dir or a bundle's zip) is read
    from: only an index made from those very files has it."""
    digest = open_cache.content_digest(_input_files(path, path if path.is_file() else None))
    text = json.dumps({"key": key, "index": index}, sort_keys=True).encode()
    return hashlib.blake2b(text, key=digest, digest_size=32).hexdigest()


def cache_file(path: Path) -> Path:
    """Where the cached index of ``path`` lives (msviz's cache folder)."""
    name = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
    return open_cache.cache_path(path).parent / f"library-{name}.json"


def load(path: Path, key: str) -> dict[str, Any] | None:
    """The cached index of ``path`` when its key is ``key`` and its checksum matches the
    source files' contents, else None."""
    try:
        with open(cache_file(path), encoding="utf-8") as f:
            data = json.load(f)
        if data.get("key") != key or data.get("checksum") != _checksum(path, key, data["index"]):
            return None  # stale, changed, or written for other contents
        return data["index"]
    except Exception:  # absent, unreadable or malformed: indexed afresh
        return None


def cache_data(path: Path, key: str, index: dict[str, Any]) -> dict[str, Any]:
    """What the cache file of ``path`` holds for ``index`` under ``key``: the index as
    :func:`load` reads it back (keys as text), and its checksum."""
    index = json.loads(json.dumps(index))  # as load reads it back (keys as text)
    return {"key": key, "index": index, "checksum": _checksum(path, key, index)}


def save(path: Path, key: str, index: dict[str, Any]) -> None:
    """Keep the index of ``path`` under ``key``: handed to the cache keeper
    (:func:`msviz.records.open_cache.keeper`, the archive's writer), which writes
    :func:`cache_data` to :func:`cache_file` (nothing without a keeper)."""
    keeper = open_cache.keeper()
    if keeper is not None:
        keeper.library_index(path, key, index)
