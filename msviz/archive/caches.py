"""The writer of the caches the records read (the records write nothing): what opening a large
work dir computed (:mod:`msviz.records.open_cache`) and a tuning library's index of each source
(:mod:`msviz.records.library_cache`), each written whole to msviz's cache folder, then renamed
in place. A cache folder that cannot be written is skipped: the records are read afresh.

Importing this module installs :class:`CacheWriter` as the records' cache keeper
(:func:`msviz.records.open_cache.keep_with`); ``import msviz`` imports it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from msviz.records import library_cache, open_cache

__all__ = ["CacheWriter"]


class CacheWriter:
    """Writes the caches a :class:`~msviz.records.run.Run` and a
    :class:`~msviz.records.library.Library` hand it."""

    def open_state(self, work_dir: Path, key: open_cache.CacheKey,
                   state: open_cache.OpenState) -> None:
        """Write ``state`` under ``key`` (atomically); a cache that cannot be written is
        skipped, and nothing is cached without pyarrow."""
        blob = open_cache.encoded(key, state)
        if blob is None:
            return
        path = open_cache.cache_path(work_dir)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".open-", suffix=".tmp")
            os.close(fd)
            try:
                with open(tmp, "wb") as f:
                    f.write(blob)
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError:
            return

    def library_index(self, path: Path, key: str, index: dict[str, Any]) -> None:
        """Keep the index of ``path`` under ``key`` (written whole, then renamed in place)."""
        target = library_cache.cache_file(path)
        try:
            data = library_cache.cache_data(path, key, index)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".library-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(data, f)
                os.replace(tmp, target)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError:  # an unwritable cache folder: the library works uncached
            return


open_cache.keep_with(CacheWriter())
