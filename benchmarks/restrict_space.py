"""Does the proposed space restriction tune faster? A first run, then a run with the restriction.

For each workload: tune N trials with the target's default rules (seed S, a fresh work dir),
propose a restriction from that run (``msviz.propose_restriction``: PED-ANOVA importance, the
rule edits that keep every winner's decisions), tune N trials again with the restricted rules
(``Restriction.rerun``: same seed, same knobs, a fresh work dir), and print for both runs the
trials taken to reach the first run's best, and to get within 5% of it, and both bests.

Trial counts, not seconds, are the comparison (the machine may be shared). Workloads: GMM-2
(1x512x512x512 batch matmul) and the largest conv2d task of the catalogue's ``resnet-block``
model, tuned as one PrimFunc::

    python benchmarks/restrict_space.py                  # 128 trials per run
    python benchmarks/restrict_space.py --quick          # 64 trials per run
    python benchmarks/restrict_space.py --trials 256 --workloads GMM-2
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import msviz
from msviz import compat, models, workloads


def model_task(model: str) -> Any:
    """The model's task with the most FLOPs (its heaviest kernel), as a workload."""
    tasks = models.load(model).extract_tasks(compat.make_target("llvm"))
    task = max(tasks, key=lambda t: t.workload.flop * t.weight)
    return workloads.resolve(task.workload.mod, name=f"{model}:{task.name}")


def trials_to(latency: np.ndarray, goal: float) -> int | None:
    """Trials until the best so far is at most ``goal`` (None: never)."""
    best = np.fmin.accumulate(np.where(np.isnan(latency), np.inf, latency))
    hits = np.flatnonzero(best <= goal)
    return int(hits[0]) + 1 if hits.size else None


def tune(workload: Any, work_dir: Path, args: argparse.Namespace, rules: Any = None) -> Any:
    session = msviz.Session(workload, work_dir=work_dir, max_trials=args.trials,
                            trials_per_batch=args.batch, seed=args.seed, rules=rules,
                            evaluator_config={"number": 3, "repeat": 1, "min_repeat_ms": 20})
    session.start()
    state = session.wait()
    if state != "finished":
        raise RuntimeError(f"{workload.name}: the session ended {state}: {session.end_reason}")
    return session


def bench(name: str, workload: Any, root: Path, args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    first = tune(workload, root / f"{name}-first", args)
    first_s = time.perf_counter() - start
    restriction = msviz.propose_restriction(first)
    print(restriction, flush=True)
    top = restriction.importance.sites[:4]
    print("  importance: " + ", ".join(f"{s.site} {s.importance:.2f}" for s in top))
    start = time.perf_counter()
    second = restriction.rerun(work_dir=root / f"{name}-restricted", max_trials=args.trials,
                               seed=args.seed)
    if second.wait() != "finished":
        raise RuntimeError(f"{name}: the restricted run ended {second.state}")
    second_s = time.perf_counter() - start
    runs = {"first": first.open().trials, "restricted": second.open().trials}
    goal = float(np.nanmin(runs["first"]["latency_us"]))
    out = {"changes": len(restriction.changes)}
    for label, trials in runs.items():
        lat = trials["latency_us"].to_numpy(dtype=float)
        out[label] = (float(np.nanmin(lat)), trials_to(lat, goal), trials_to(lat, goal * 1.05),
                      len(trials))
    print(f"\n{name}: {args.trials} trials per run, seed {args.seed}, "
          f"{len(restriction.changes)} rule change(s); tuning took {first_s:.0f} s + "
          f"{second_s:.0f} s")
    print(f"  {'run':<12}{'best (us)':>12}{'trials to first best':>23}"
          f"{'trials to within 5%':>22}{'trials':>8}")
    for label in ("first", "restricted"):
        best, reach, within, count = out[label]
        print(f"  {label:<12}{best:>12.4g}{_n(reach):>23}{_n(within):>22}{count:>8}")
    return out


def _n(value: int | None) -> str:
    return "never" if value is None else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=None, help="trials per run (default 128)")
    parser.add_argument("--batch", type=int, default=16, help="trials per batch")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="64 trials per run")
    parser.add_argument("--workloads", nargs="+", default=["GMM-2", "resnet-block"],
                        help="catalogue workloads, or catalogue models (their heaviest task)")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="where the runs go (default: a temp dir)")
    args = parser.parse_args()
    if args.trials is None:
        args.trials = 64 if args.quick else 128
    root = args.work_dir or Path(tempfile.mkdtemp(prefix="restrict-space-"))
    print(f"work dirs under {root}; {compat.host_cores()} cores", flush=True)
    results = {}
    for name in args.workloads:
        workload = model_task(name) if name in models.catalogue() else workloads.get(name)
        results[name] = bench(name, workload, root, args)
    print("\nsummary (trials to reach the first run's best: first -> restricted)")
    for name, out in results.items():
        f, r = out["first"], out["restricted"]
        better = (r[1] or math.inf) < (f[1] or math.inf)
        print(f"  {name}: {_n(f[1])} -> {_n(r[1])} "
              f"({'fewer' if better else 'not fewer'}); best {f[0]:.4g} -> {r[0]:.4g} us")


if __name__ == "__main__":
    main()
