"""Engine overhead as the run grows: a session resumed on a work dir of 1,000 records against one
of 20,000 records of the same task (target: per-batch overhead at 20,000 within 1.5x of at
1,000).

Overhead is every stage of the session's profile (``Session.profile``) but ``SendToBuilder`` and
``SendToRunner``: the search, database, cost model, events and what no timer covered, per batch.
Each work dir replays real GMM-0 traces (benchmarks/workdirs.py, with msviz's sidecar); each
session runs in a fresh process and tunes ``--batches`` batches of 8. Two configurations:

* ``msviz``: the default preset. On resume it trains the XGBoost model on every stored record
  (``skip_db_measured``; ``_learn_from_database``), and MetaSchedule's ``XGBModel.update``
  retrains on all the samples it holds after each batch: at 20,000 records, 20,000 samples.
* ``no-db-training``: ``skip_db_measured=False``: the model learns only this session's trials,
  which isolates what the database itself costs as it grows.

Also printed: the resume's set-up (reading the work dir, training on it) and the seconds from
the constructor to the first batch's pick (target at 20,000: <= 10 s), the cost-model update per
batch, and the memory (RSS growth and peak over the process's start, target <= 500 MB; per
trial: the event log and the live trials table).

    .venv/bin/python benchmarks/engine_scale.py [--sizes 1000 20000] [--batches 6] [--quick]
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from workdirs import SEED_KNOBS, make_work_dir, seed_work_dir  # noqa: E402

SEEDS = Path(tempfile.gettempdir()) / "msviz-bench-seeds"
MEASURE = ("SendToBuilder", "SendToRunner")
CONFIGS = {"msviz": {}, "no-db-training": {"skip_db_measured": False}}


def one(work_dir: Path, size: int, batches: int, config: str) -> dict:
    """Resume a session on ``work_dir`` (``size`` records) and tune ``batches`` batches."""
    import resource

    import psutil

    import msviz

    process = psutil.Process()
    rss0 = process.memory_info().rss
    knobs = {**SEED_KNOBS, "trials_per_batch": 8, **CONFIGS[config]}
    tic, t0 = time.perf_counter(), time.time()
    session = msviz.Session("GMM-0", work_dir=work_dir, resume=True,
                            max_trials=size + 8 * batches, **knobs)
    session.start()
    state = session.wait(3600)
    wall = time.perf_counter() - tic
    assert state == "finished", (state, session.end_reason)
    rss1 = process.memory_info().rss
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: kB
    picked = session.events.of_kind("picked")
    profile = session.profile
    per_batch = profile[profile["batch"].notna()]
    stages = per_batch.pivot_table(index="batch", columns="stage", values="seconds",
                                   aggfunc="sum", fill_value=0.0)
    overhead = stages.drop(columns=[c for c in MEASURE if c in stages.columns]).sum(axis=1)
    setup = profile[profile["batch"].isna()].groupby("stage")["seconds"].sum()
    trials = session.trials
    new = len(trials) - size
    events = session.events.snapshot()
    return {
        "overhead": overhead.tolist(),
        "measure": stages[[c for c in MEASURE if c in stages.columns]].sum(axis=1).tolist(),
        "stages": {str(k): float(v) for k, v in stages.median().items()},
        "setup": {str(k): float(v) for k, v in setup.items()},
        "wall": wall, "new_trials": new, "trials": len(trials),
        "rss_mb": (rss1 - rss0) / 1e6, "peak_extra_mb": (peak - rss0) / 1e6,
        # from the constructor to the first batch's candidates picked (the resume's set-up)
        "first_batch_s": picked[0].time - t0 if picked else None,
        "events": len(events),
        "event_bytes": len(pickle.dumps(events)),
        "table_bytes_per_row": float(trials.memory_usage(deep=True).sum()) / max(1, len(trials)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[1000, 20_000])
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--quick", action="store_true", help="200 and 2,000 records, 3 batches")
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)  # work dir, size, batches, cfg
    args = parser.parse_args()
    if args.one:
        wd, size, batches, config = args.one
        print(json.dumps(one(Path(wd), int(size), int(batches), config)))
        return
    sizes = (200, 2000) if args.quick else tuple(args.sizes)
    batches = 3 if args.quick else args.batches
    seeds = {"GMM-0": seed_work_dir("GMM-0", SEEDS)}
    root = Path(tempfile.mkdtemp(prefix="msviz-bench-engine-scale-"))
    results: dict[tuple[str, int], dict] = {}
    for config in args.configs.split(","):
        for size in sizes:
            wd = make_work_dir(root / f"{config}-{size}", size, seeds)
            out = subprocess.run([sys.executable, __file__, "--one", str(wd), str(size),
                                  str(batches), config], capture_output=True, text=True,
                                 check=False)
            if out.returncode:
                raise RuntimeError(out.stderr[-3000:])
            got = results[config, size] = json.loads(out.stdout.strip().splitlines()[-1])
            top = sorted(got["stages"].items(), key=lambda kv: -kv[1])[:6]
            print(f"{config}, resumed on {size} records, {got['new_trials']} new trials in "
                  f"{batches} batches: overhead per batch "
                  f"{', '.join(f'{s:.2f}' for s in got['overhead'])} s (median "
                  f"{statistics.median(got['overhead']):.2f} s; measuring "
                  f"{statistics.median(got['measure']):.2f} s a batch); median stages: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in top)
                  + "; set-up before the first batch: "
                  + ", ".join(f"{k} {v:.2f} s" for k, v in
                              sorted(got["setup"].items(), key=lambda kv: -kv[1])[:3])
                  + f"; first batch picked {got['first_batch_s']:.1f} s after the constructor"
                  + f"; memory: RSS +{got['rss_mb']:.0f} MB over the session "
                  f"(peak +{got['peak_extra_mb']:.0f} MB) "
                  f"({got['rss_mb'] * 1e3 / max(1, got['new_trials']):.0f} kB per new trial), "
                  f"{got['events']} events ({got['event_bytes'] / max(1, got['new_trials']):.0f}"
                  f" bytes pickled per new trial), live table "
                  f"{got['table_bytes_per_row']:.0f} bytes per row", flush=True)
        small, big = (results[config, s] for s in sizes)
        ratio = statistics.median(big["overhead"]) / statistics.median(small["overhead"])
        xgb = [r["stages"].get("MeasureCallback/UpdateCostModel", 0.0) for r in (small, big)]
        print(f"{config}: per-batch overhead at {sizes[1]} records / at {sizes[0]}: "
              f"{ratio:.2f}x (target <= 1.5x); of it the cost-model update (XGBoost retrained "
              f"on every sample it holds) {xgb[0]:.2f} s -> {xgb[1]:.2f} s a batch", flush=True)


if __name__ == "__main__":
    main()
