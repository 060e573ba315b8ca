"""How long exporting and merging take on large, realistic work dirs.

Two work dirs of ``--records`` records each (three tasks: GMM-0, C2D-3, SFM-0, replaying real
traces from tiny msviz sessions, see benchmarks/workdirs.py; the second with other run_secs, so
its records are not duplicates of the first). Timed: ``Run.to_parquet``, ``Run.to_csv`` (files
sizes printed), ``msviz.open_many`` of both, ``msviz.merge`` of both (plus the first again: all
its records are exact duplicates), and ``msviz.database(merged, target="llvm")``
(each workload's best record, the default).

    .venv/bin/python benchmarks/export_merge.py [--records 20000]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from workdirs import make_work_dir, seed_work_dir

import msviz

SEEDS = Path(tempfile.gettempdir()) / "msviz-bench-seeds"
TASKS = ("GMM-0", "C2D-3", "SFM-0")


def timed(label: str, fn, *args, **kw):  # type: ignore[no-untyped-def]
    tic = time.perf_counter()
    out = fn(*args, **kw)
    print(f"{label}: {time.perf_counter() - tic:.2f} s")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    args = parser.parse_args()
    seeds = {name: seed_work_dir(name, SEEDS) for name in TASKS}
    root = Path(tempfile.mkdtemp(prefix="msviz-bench-export-"))
    try:
        a = make_work_dir(root / "a", args.records, seeds, rng_seed=0)
        b = make_work_dir(root / "b", args.records, seeds, rng_seed=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = msviz.open(a)
            parquet = timed(f"Run.to_parquet ({args.records} trials)", run.to_parquet,
                            root / "a.parquet")
            csv = timed(f"Run.to_csv ({args.records} trials)", run.to_csv, root / "a.csv")
            print(f"  sizes: Parquet {parquet.stat().st_size / 1e6:.1f} MB, CSV "
                  f"{csv.stat().st_size / 1e6:.1f} MB")
            frame = timed("msviz.open_many (2 work dirs)", msviz.open_many, [a, b])
            print(f"  {len(frame)} rows, {frame['run'].nunique()} runs")
            result = timed(f"msviz.merge (3 work dirs, {3 * args.records} records)", msviz.merge,
                           [a, b, a], root / "merged")
            print(f"  {result.records} records written, {result.duplicates} duplicates dropped")
            timed("msviz.database(merged, target='llvm')", msviz.database, root / "merged",
                  target="llvm")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
