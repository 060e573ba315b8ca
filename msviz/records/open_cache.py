"""What opening a large work dir computed, kept so that the next open skips it.

Reading 100,000 records and their logs costs seconds; the result (the records' columns, each
record's log entry, task names, FLOPs, weights, the task table, and the warnings the reading
gave) is written as one Parquet file (and its checksum) to msviz's cache folder
(``$MSVIZ_CACHE_DIR``, else ``$XDG_CACHE_HOME/msviz``, else ``~/.cache/msviz``), not into the
work dir: opening never changes a work dir (bundles and digests of it stay the same, a
read-only one works).

The cache is used only while it describes the files as they are now: the key holds each
input file's size, modification and change times and inode, and the cache file ends with a
keyed BLAKE2b checksum of its Parquet bytes whose key is a BLAKE2b digest of the input files'
contents (the records, the workloads, the logs). A cache whose bytes were changed (forged
run_secs under the right key), or that was written for other contents, fails it; so does a
stale, unreadable or malformed one: each is rebuilt, never trusted. Hashing costs about 13 ms
a 10 MB of input (BLAKE2b reads some 800 MB/s), a small part of reading the records afresh. A
cache that cannot be written is skipped. What the user sees is the same either way (the
warnings of the first read are given again).
Parquet needs pyarrow (``msviz[parquet]``); without it nothing is cached.

This module reads a cache and encodes one; the records write nothing, so a :class:`Keeper`
writes it (:mod:`msviz.archive.caches`, installed when msviz is imported: :func:`keep_with`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from msviz.records import database as db_files
from msviz.records import logs as log_files

__all__ = ["MIN_CACHED_BYTES", "CacheKey", "Keeper", "OpenState", "cache_path", "content_digest",
           "encoded", "keep", "keep_with", "keeper", "load", "sealed", "unsealed"]

#: Record files smaller than this open fast enough read directly (and are not cached).
MIN_CACHED_BYTES = 4 << 20
#: Bumped when what the cache holds changes.
FORMAT = 3
#: The bytes of the checksum that ends a cache file.
_MAC_BYTES = 32
_CHUNK = 1 << 20


class OpenState(NamedTuple):
    """What :class:`msviz.records.run.Run` computes from the records and the logs."""

    records: db_files.RecordColumns
    logged: list[log_files.LogTrial | None]  # each record's log entry, where logs align
    names: dict[int, str]
    flops: dict[int, float]
    weights: dict[int, float]
    task_ids: dict[int, int]
    done: dict[int, bool]
    task_table: list[log_files.LogTask]
    total_latency_us: float | None
    warnings: list[str]  # the messages reading gave (MsvizWarning)
    impossible: dict[int, str]  # record line -> why it cannot be true


class CacheKey(NamedTuple):
    """What a cache must match: the input files' state (``text``, stored in the cache) and a
    digest of their contents (``digest``, never stored: the checksum's key)."""

    text: str
    digest: bytes


def content_digest(paths: list[Path]) -> bytes:
    """A BLAKE2b digest of the files' names, sizes and contents, in order."""
    h = hashlib.blake2b(digest_size=32)
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    for path in paths:
        with open(path, "rb") as f:
            h.update(f"{path.name}\0{os.fstat(f.fileno()).st_size}\0".encode())
            while n := f.readinto(buf):
                h.update(view[:n])
    return h.digest()


def sealed(data: bytes, digest: bytes) -> bytes:
    """``data`` followed by its checksum keyed by ``digest`` (of the files it stands for)."""
    return data + hashlib.blake2b(data, key=digest, digest_size=_MAC_BYTES).digest()


def unsealed(blob: bytes, digest: bytes) -> bytes | None:
    """The data of a :func:`sealed` blob, or None where its checksum does not match ``digest``
    (the blob was changed, or written for other files)."""
    if len(blob) < _MAC_BYTES:
        return None
    data, mac = blob[:-_MAC_BYTES], blob[-_MAC_BYTES:]
    want = hashlib.blake2b(data, key=digest, digest_size=_MAC_BYTES).digest()
    return data if hmac.compare_digest(mac, want) else None


def _cache_dir() -> Path:
    given = os.environ.get("MSVIZ_CACHE_DIR")
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "msviz"


def cache_path(work_dir: Path) -> Path:
    """Where the cache of ``work_dir`` lives (named by its absolute path)."""
    name = hashlib.sha256(str(work_dir.resolve()).encode()).hexdigest()[:24]
    return _cache_dir() / f"open-{name}.parquet"


def _key(work_dir: Path) -> CacheKey | None:
    """The state of the input files; None when the records are too few to cache."""
    records = work_dir / db_files.RECORD_FILE
    if records.stat().st_size < MIN_CACHED_BYTES:
        return None
    files = [records, work_dir / db_files.WORKLOAD_FILE]
    logs = work_dir / "logs"
    if logs.is_dir():
        files += sorted(p for p in logs.glob("*.log") if p.is_file())
    stats = []
    for path in files:
        s = path.stat()
        stats.append([path.name, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino])
    text = json.dumps({"format": FORMAT, "work_dir": str(work_dir.resolve()), "files": stats},
                      sort_keys=True)
    return CacheKey(text, content_digest(files))


def load(work_dir: Path) -> tuple[OpenState | None, CacheKey | None]:
    """(the cached state, or None if there is no valid one; the key to save a new one under,
    or None if this work dir is not cached)."""
    try:
        key = _key(work_dir)
    except OSError:
        return None, None
    if key is None:
        return None, None
    path = cache_path(work_dir)
    if not path.is_file():
        return None, key
    try:
        return _read(path, key), key
    except Exception:  # unreadable or malformed: rebuilt by the caller
        return None, key


def _read(path: Path, key: CacheKey) -> OpenState | None:
    import pyarrow as pa  # optional: msviz[parquet]
    import pyarrow.parquet as pq

    data = unsealed(path.read_bytes(), key.digest)
    if data is None:  # changed, or written for other contents
        return None
    table = pq.read_table(pa.BufferReader(data))
    meta = table.schema.metadata or {}
    if meta.get(b"msviz_key", b"").decode() != key.text:
        return None
    info = json.loads(meta[b"msviz_state"])
    cols = table.to_pydict()
    n = len(cols["line"])
    if any(len(values) != n for values in cols.values()):
        return None
    run_secs = [None if v is None else tuple(v) for v in cols["run_secs"]]
    records = db_files.RecordColumns(cols["line"], cols["offset"], cols["workload"], run_secs,
                                     cols["target"], frozenset(info["unscheduled"]))
    logged = [None if t is None else log_files.LogTrial(t, time, kind, error)
              for t, time, kind, error in zip(cols["log_trial"], cols["log_time"],
                                              cols["log_error_kind"], cols["log_error"])]

    def by_workload(values: dict) -> dict:
        return {int(w): v for w, v in values.items()}

    return OpenState(records, logged, by_workload(info["names"]), by_workload(info["flops"]),
                     by_workload(info["weights"]), by_workload(info["task_ids"]),
                     by_workload(info["done"]),
                     [log_files.LogTask(*row) for row in info["task_table"]],
                     info["total_latency_us"], list(info["warnings"]),
                     {int(line): str(why) for line, why in info["impossible"]})


def encoded(key: CacheKey, state: OpenState) -> bytes | None:
    """``state`` under ``key`` as the bytes of a cache file (Parquet, sealed: see
    :func:`sealed`); None without pyarrow (nothing is cached)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    records, logged = state.records, state.logged
    columns = {
        "line": pa.array(records.line, pa.int64()),
        "offset": pa.array(records.offset, pa.int64()),
        "workload": pa.array(records.workload, pa.int64()),
        "run_secs": pa.array([None if s is None else list(s) for s in records.run_secs],
                             pa.list_(pa.float64())),
        "target": pa.array(records.target, pa.string()).dictionary_encode(),
        "log_trial": pa.array([e and e.trial for e in logged], pa.int64()),
        "log_time": pa.array([e and e.time for e in logged], pa.string()),
        "log_error_kind": pa.array([e and e.error_kind for e in logged], pa.string()),
        "log_error": pa.array([e and e.error for e in logged], pa.string()),
    }
    info = {"names": state.names, "flops": state.flops, "weights": state.weights,
            "task_ids": state.task_ids, "done": state.done,
            "task_table": [list(row) for row in state.task_table],
            "total_latency_us": state.total_latency_us, "warnings": state.warnings,
            "unscheduled": sorted(records.unscheduled),
            "impossible": sorted(state.impossible.items())}
    table = pa.table(columns).replace_schema_metadata(
        {"msviz_key": key.text, "msviz_state": json.dumps(info)})
    out = pa.BufferOutputStream()
    pq.write_table(table, out)
    return sealed(out.getvalue().to_pybytes(), key.digest)


class Keeper(Protocol):
    """What keeps the caches the records compute (the records write nothing):
    :class:`msviz.archive.caches.CacheWriter`, installed when msviz is imported."""

    def open_state(self, work_dir: Path, key: CacheKey, state: OpenState) -> None:
        """Keep what opening ``work_dir`` computed, under ``key``."""

    def library_index(self, path: Path, key: str, index: dict[str, Any]) -> None:
        """Keep a library source's index, under ``key``."""


_keepers: list[Keeper] = []


def keep_with(keeper: Keeper) -> None:
    """Make ``keeper`` keep the caches from now on (the archive installs its writer)."""
    _keepers[:] = [keeper]


def keeper() -> Keeper | None:
    """What keeps the caches (None: nothing is kept)."""
    return _keepers[0] if _keepers else None


def keep(work_dir: Path, key: CacheKey, state: OpenState) -> None:
    """Hand ``state`` to the :func:`keeper` to keep under ``key`` (nothing without one)."""
    found = keeper()
    if found is not None:
        found.open_state(work_dir, key, state)
