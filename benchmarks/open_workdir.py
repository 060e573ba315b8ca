"""How long msviz.open takes on a large work dir (target: under 5 s for 100,000 records).

Makes a small real work dir with stock ``tune_tir`` (GMM-0, 16 trials), repeats its record lines
to N records, then times ``msviz.open`` (reading + the ``trials`` and ``tasks`` tables) and opening
the best trial's IRModule.

    .venv/bin/python benchmarks/open_workdir.py [--records 100000]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import msviz
from msviz.records.database import RECORD_FILE, WORKLOAD_FILE
from tests.conftest import tune_stock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="msviz-bench-"))
    try:
        seed_dir = tune_stock("GMM-0", root / "seed", trials=16)
        lines = (seed_dir / RECORD_FILE).read_text().splitlines(keepends=True)
        big = root / "big"
        big.mkdir()
        shutil.copy(seed_dir / WORKLOAD_FILE, big / WORKLOAD_FILE)
        with open(big / RECORD_FILE, "w") as f:
            for i in range(args.records):
                f.write(lines[i % len(lines)])
        size_mb = os.path.getsize(big / RECORD_FILE) / 1e6
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        run = msviz.open(big)
        opened = time.perf_counter() - start
        start = time.perf_counter()
        best = run.best()
        _ = best.mod
        best_s = time.perf_counter() - start
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"records file: {args.records} records, {size_mb:.0f} MB")
        print(f"msviz.open (read + trials + tasks tables): {opened:.2f} s  (target < 5 s)")
        print(f"best().mod (parse one trace, replay it): {best_s * 1e3:.0f} ms")
        print(f"trials rows: {len(run.trials)}; peak RSS grew by {(rss1 - rss0) / 1024:.0f} MB")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
