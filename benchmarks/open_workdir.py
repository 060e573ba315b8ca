"""How long msviz.open takes on a large, realistic work dir (target: 100,000 records, with their
logs and sidecar, opened in <= 2 s).

The work dir holds three tasks (GMM-0, C2D-3, SFM-0) whose records replay real traces from
tiny msviz sessions (benchmarks/workdirs.py), 5% failed builds with their error text, one
sidecar line per record, the per-task logs and the task table. Timed: ``msviz.open`` (records,
logs, sidecar, the ``trials`` and ``tasks`` tables), then opening the best trial's IRModule.

    .venv/bin/python benchmarks/open_workdir.py [--records 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from workdirs import make_work_dir, seed_work_dir

import msviz
from msviz.records.database import RECORD_FILE
from msviz.records.sidecar import SIDECAR_FILE

SEEDS = Path(tempfile.gettempdir()) / "msviz-bench-seeds"
TASKS = ("GMM-0", "C2D-3", "SFM-0")


def _size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    seeds = {name: seed_work_dir(name, SEEDS) for name in TASKS}
    root = Path(tempfile.mkdtemp(prefix="msviz-bench-open-"))
    try:
        tic = time.perf_counter()
        wd = make_work_dir(root / "big", args.records, seeds)
        made = time.perf_counter() - tic
        print(f"work dir: {args.records} records of {len(TASKS)} tasks, "
              f"{_size_mb(wd):.0f} MB in all (records {os.path.getsize(wd / RECORD_FILE) / 1e6:.0f}"
              f" MB, sidecar {os.path.getsize(wd / SIDECAR_FILE) / 1e6:.0f} MB, logs "
              f"{_size_mb(wd / 'logs'):.0f} MB); written in {made:.1f} s")
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        times = []
        for _ in range(args.repeats):
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a realistic dir opens without a warning
                tic = time.perf_counter()
                run = msviz.open(wd)
                times.append(time.perf_counter() - tic)
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        trials = run.trials
        assert len(trials) == args.records
        assert trials["timestamp"].notna().all() and trials["logged_at"].notna().all()
        assert set(run.tasks["task"]) == set(TASKS), run.tasks
        failed = trials[trials["status"] != "ok"]
        assert (failed["status"] == "build_error").all() and failed["error"].notna().all()
        tic = time.perf_counter()
        best = run.best("GMM-0")
        _ = best.mod
        best_s = time.perf_counter() - tic
        print(f"msviz.open (records + logs + sidecar, trials + tasks tables): "
              f"{', '.join(f'{t:.2f}' for t in times)} s, median {statistics.median(times):.2f} s"
              f" (target <= 2 s)")
        print(f"best('GMM-0').mod (parse one trace, replay it): {best_s * 1e3:.0f} ms")
        print(f"trials rows: {len(trials)} ({len(failed)} failed); tasks: "
              f"{', '.join(f'{t} {n}' for t, n in zip(run.tasks['task'], run.tasks['trials']))}"
              f"; peak RSS grew by {(rss1 - rss0) / 1024:.0f} MB")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
