"""How long msviz.open takes on a large, realistic work dir (target: 100,000 records, with their
logs and sidecar, opened in <= 2 s).

The work dir holds three tasks (GMM-0, C2D-3, SFM-0) whose records replay real traces from
tiny msviz sessions (benchmarks/workdirs.py), 5% failed builds with their error text, one
sidecar line per record, the per-task logs and the task table. Timed: ``msviz.open`` (records,
logs, sidecar, the ``trials`` and ``tasks`` tables), then opening the best trial's IRModule.

    .venv/bin/python benchmarks/open_workdir.py [--records 100000] [--repeats 3]
    .venv/bin/python benchmarks/open_workdir.py --model resnet18 --tasks 18 [--records 20000]

With ``--model``: a stock ``tune_relax``-style work dir of that catalogue model (its first
``--tasks`` tasks; logs printing each workload's TVMScript, no sidecar), opened in fresh
processes as a user meets it: the first open with no cache (issue 28: <= 0.5 s at 20,000
records, <= 2 s and <= 300 MB of RSS growth at 100,000), then again from the open cache the
first one wrote (<= 0.2 s at 20,000).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from workdirs import make_model_work_dir, make_work_dir, seed_model_work_dir, seed_work_dir

import msviz
from msviz.records.database import RECORD_FILE
from msviz.records.sidecar import SIDECAR_FILE

SEEDS = Path(tempfile.gettempdir()) / "msviz-bench-seeds"
TASKS = ("GMM-0", "C2D-3", "SFM-0")


def _size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


_FRESH = """
import json, sys, time, psutil
tic = time.perf_counter(); import msviz; imported = time.perf_counter() - tic
rss0 = psutil.Process().memory_info().rss
tic = time.perf_counter(); run = msviz.open(sys.argv[1]); trials, tasks = run.trials, run.tasks
seconds = time.perf_counter() - tic
grew = (psutil.Process().memory_info().rss - rss0) / 1e6
print(json.dumps({"seconds": seconds, "import": imported, "trials": len(trials),
                  "tasks": len(tasks), "rss_mb": grew}))
"""


def model_dir(args: argparse.Namespace) -> None:
    """Fresh processes opening a stock model work dir: no cache, then from the cache."""
    import json

    seed = seed_model_work_dir(args.model, SEEDS)
    root = Path(tempfile.mkdtemp(prefix="msviz-bench-open-"))
    try:
        wd = make_model_work_dir(root / "wd", args.records, seed, sidecar=False, tasks=args.tasks)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
               "MSVIZ_CACHE_DIR": str(root / "cache")}
        print(f"stock work dir: {args.records} records of {args.model}'s first {args.tasks} "
              f"tasks, records {os.path.getsize(wd / RECORD_FILE) / 1e6:.0f} MB, logs "
              f"{_size_mb(wd / 'logs'):.0f} MB")
        for n in range(args.repeats):
            got = json.loads(subprocess.run(
                [sys.executable, "-c", _FRESH, str(wd)], env=env, check=True,
                capture_output=True, text=True).stdout.strip().splitlines()[-1])
            assert got["trials"] == args.records and got["tasks"] == args.tasks, got
            print(f"fresh process {n + 1} ({'no cache' if n == 0 else 'open cache'}): "
                  f"msviz.open {got['seconds']:.2f} s, RSS grew {got['rss_mb']:.0f} MB "
                  f"(import msviz {got['import']:.2f} s before it)", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", help="a catalogue model: its stock work dir instead")
    parser.add_argument("--tasks", type=int, help="with --model: its first N tasks only")
    args = parser.parse_args()
    if args.model:
        model_dir(args)
        return
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
