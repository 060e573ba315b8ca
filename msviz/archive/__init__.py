"""Writing what records read: trials exported (Parquet, CSV), run bundles, work dirs merged by
target, old work dirs migrated into new ones; every output file through one writer
(:mod:`msviz.archive.writer`: never over an existing file unless told, atomic, usual modes)."""
