"""Writing what records read: trials exported (Parquet, CSV), run bundles, work dirs merged by
target, old work dirs migrated into new ones; every output file through one writer
(:mod:`msviz.archive.writer`: never over an existing file unless told, atomic, usual modes)."""

from msviz.archive import caches  # the records' cache keeper, installed on import

__all__ = ["caches"]
