"""msviz's engine against stock MetaSchedule ``tune_tir``: same workload, target, budget, seeds.

Runs three configurations per seed, each in a fresh Python process (so no run inherits another's
warm caches; the one-time ``import tvm.s_tir.tensor_intrin`` is done before timing starts):

* ``stock``        ``tune_tir`` with MetaSchedule's defaults (EvolutionarySearch, XGBModel)
* ``msviz``        ``msviz.Session`` with the default ``preset="msviz"``
* ``msviz-stock``  ``msviz.Session(preset="stock")``: the port with MetaSchedule's exact knobs

All use the same builder (``LocalBuilder`` with msviz's fast build function, since the stock
build function spends 15-30 s per batch importing tensor intrinsics), the stock ``LocalRunner``
with its default timing settings, 64 trials per batch and 2 tuning threads. It prints the best
latency of each, the ratio msviz/stock, wall time, and time spent generating candidates (stock:
the sum of the ``EvoSearch/*`` profiler scopes; msviz: time inside the search stages)::

    python benchmarks/engine_vs_stock.py                        # GMM-2 (512^3), 256 trials, 3 seeds
    python benchmarks/engine_vs_stock.py --trials 64 --seeds 1  # a reduced run
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from profiles import msviz_stages, overhead_lines, side_by_side

CONFIGS = ("stock", "msviz", "msviz-stock")


def _best_curve(work_dir: Path, marks: list[int]) -> dict[str, float]:
    """Best mean latency (us) after the first k trials, for each k in marks."""
    import msviz

    lat = list(msviz.open(work_dir).trials["latency_us"])
    out = {}
    for k in marks:
        ok = [x for x in lat[:k] if x == x]
        out[str(k)] = min(ok) if ok else float("nan")
    return out


def run_one(config: str, workload: str, trials: int, batch: int, seed: int, work_dir: Path,
            threads: int) -> dict[str, Any]:
    """One tuning run in this process; returns its figures."""
    import tvm.s_tir.tensor_intrin  # noqa: F401 - the one-time import, before timing

    from msviz import compat, workloads

    compat.quiet_ipython_printing()
    ms = compat.ms
    wl = workloads.get(workload)
    target = compat.make_target("llvm", num_cores=threads)
    if config == "stock":
        with ms.Profiler() as prof:
            tic = time.perf_counter()
            ms.tir_integration.tune_tir(
                wl.mod, target, str(work_dir), max_trials_global=trials,
                num_trials_per_iter=batch, builder=compat.local_builder(),
                runner=ms.runner.LocalRunner(), seed=seed, num_tuning_cores=threads,
            )
            wall = time.perf_counter() - tic
        timing = {k: float(v) for k, v in prof.get().items()}
        search = sum(v for k, v in timing.items() if k.startswith("EvoSearch/"))
    else:
        from msviz.engine import Session

        tic = time.perf_counter()
        session = Session(wl, target=target, work_dir=work_dir, max_trials=trials,
                          trials_per_batch=batch, seed=seed, num_threads=threads,
                          preset="stock" if config == "msviz-stock" else "msviz")
        session.start()
        state = session.wait()
        wall = time.perf_counter() - tic
        if state != "finished":
            raise RuntimeError(f"{config}: session {state}: {session.end_reason}")
        search = session.events[-1]["timing"]["search"]
        timing = msviz_stages(session)
    marks = sorted({trials // 4, trials // 2, trials})
    curve = _best_curve(work_dir, marks)
    return {"config": config, "seed": seed, "best_us": curve[str(trials)], "curve": curve,
            "wall_s": wall, "search_s": search, "stages": timing}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="GMM-2", help="catalogue workload (GMM-2: 512^3)")
    parser.add_argument("--trials", type=int, default=256)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work-root", default=None, help="keep work dirs here (default: temp)")
    parser.add_argument("--one", nargs=2, metavar=("CONFIG", "SEED"), help=argparse.SUPPRESS)
    parser.add_argument("--work-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.one:  # child process: one run, JSON on the last stdout line
        result = run_one(args.one[0], args.workload, args.trials, args.batch, int(args.one[1]),
                         Path(args.work_dir), args.threads)
        print(json.dumps(result))
        return 0

    root = Path(args.work_root or tempfile.mkdtemp(prefix="msviz-bench-"))
    results: list[dict[str, Any]] = []
    for seed in args.seeds:
        for config in args.configs:
            wd = root / f"{config}-seed{seed}"
            cmd = [sys.executable, __file__, "--one", config, str(seed), "--work-dir", str(wd),
                   "--workload", args.workload, "--trials", str(args.trials),
                   "--batch", str(args.batch), "--threads", str(args.threads)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{config} seed {seed} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
                return 1
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            results.append(res)
            print(f"seed {seed:>3} {config:<12} best {res['best_us']:9.2f} us  "
                  f"curve {res['curve']}  wall {res['wall_s']:7.1f} s  "
                  f"search {res['search_s']:6.1f} s", flush=True)

    def median(config: str, key: str) -> float:
        return statistics.median(r[key] for r in results if r["config"] == config)

    print(f"\n{args.workload}, {args.trials} trials, batch {args.batch}, seeds {args.seeds} "
          f"(medians over seeds; work dirs in {root})")
    print(f"{'config':<12} {'best_us':>9} {'ratio':>7} {'wall_s':>8} {'wall x':>7} "
          f"{'search_s':>9} {'search x':>9}")
    if "stock" not in args.configs:
        return 0
    for config in args.configs:
        ratios = [
            r["best_us"] / s["best_us"]
            for r in results if r["config"] == config
            for s in results if s["config"] == "stock" and s["seed"] == r["seed"]
        ]
        walls = [
            r["wall_s"] / s["wall_s"]
            for r in results if r["config"] == config
            for s in results if s["config"] == "stock" and s["seed"] == r["seed"]
        ]
        searches = [
            r["search_s"] / s["search_s"]
            for r in results if r["config"] == config
            for s in results if s["config"] == "stock" and s["seed"] == r["seed"]
        ]
        print(f"{config:<12} {median(config, 'best_us'):9.2f} {statistics.median(ratios):7.3f} "
              f"{median(config, 'wall_s'):8.1f} {statistics.median(walls):7.3f} "
              f"{median(config, 'search_s'):9.1f} {statistics.median(searches):9.3f}")
    first = args.seeds[0]
    stock_stages = next(r["stages"] for r in results
                        if r["config"] == "stock" and r["seed"] == first)
    for config in args.configs:
        if config == "stock":
            continue
        mine = next(r["stages"] for r in results if r["config"] == config and r["seed"] == first)
        print(f"\nwhere the time went, seed {first}: stock (ms.Profiler) and {config} "
              "(Session.profile)")
        print(side_by_side(stock_stages, mine, names=("stock", config)))
        print(overhead_lines(mine, args.trials))
    print("targets: ratio <= 1.0 (msviz), wall x <= 0.8, search x <= 1.5")
    return 0


if __name__ == "__main__":
    sys.exit(main())
