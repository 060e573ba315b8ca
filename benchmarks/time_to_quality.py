"""Time to quality: msviz's default against stock MetaSchedule ``tune_relax`` on one model.

Both tune the same catalogue model for the same target (this host's CPU), with the same builder
(``LocalBuilder`` with msviz's fast build function) and runner (stock ``LocalRunner``), the same
trials and batch size (``num_trials_per_iter``), each configuration and seed in a fresh Python
process (the tuning itself is :mod:`model_vs_stock`'s). Then, for each work dir:

* **the tuned end-to-end latency at equal trials**, measured: ``compile_relax`` with the work
  dir, a Relax VM, ``time_evaluator``, outputs checked against the untuned build
  (:func:`msviz.check.model.check_model`), in ``--e2e-runs`` fresh processes each (model timings
  on small shared machines are bimodal per process, ~1x or ~2x): the least and the spread
  (largest / least) are printed;
* **the time-to-quality curves**: the estimated model latency (weight x best per task, a task
  not tuned yet at its untuned time) against wall time, msviz's from its session's sidecar, stock's
  rebuilt from its records and task-scheduler log with the untuned times msviz measured for the
  same workloads (:mod:`msviz.views.quality`); and the wall time msviz needs to reach stock's
  final estimate;
* both curves of every seed on one HTML plot (``--html``).

::

    python benchmarks/time_to_quality.py --model resnet-block --trials 160 --batch 16 --seeds 1
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

CONFIGS = ("msviz", "stock")


def tune_one(config: str, model_name: str, trials: int, batch: int, seed: int, work_dir: Path,
             threads: int) -> dict[str, Any]:
    """One tuning run in this process (``model_vs_stock``'s); its wall time and trial split."""
    import tvm.s_tir.tensor_intrin  # noqa: F401 - the one-time import, before timing
    from model_vs_stock import _tune_msviz, _tune_stock, task_split

    from msviz import compat, models

    compat.quiet_ipython_printing()
    target = compat.make_target("llvm", num_cores=threads)
    model = models.build(model_name, seed=0)
    tic = time.perf_counter()
    if config == "msviz":
        _tune_msviz(config, model, target, work_dir, trials, batch, seed, threads, None)
    else:
        _tune_stock(config, model, target, work_dir, trials, batch, seed, None)
    wall = time.perf_counter() - tic
    return {"config": config, "seed": seed, "wall_s": wall,
            "split": task_split(work_dir, model.extract_tasks(target))}


def measure_one(model_name: str, work_dir: Path, threads: int) -> dict[str, Any]:
    """The tuned model's end-to-end latency in this (fresh) process, outputs checked."""
    from msviz import compat, models
    from msviz.check.model import check_model

    target = compat.make_target("llvm", num_cores=threads)
    model = models.build(model_name, seed=0)
    return check_model(model, model.extract_tasks(target), work_dir, target, seed=0)


def _child(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def curves(work_dirs: dict[tuple[str, int], Path]) -> dict[tuple[str, int], Any]:
    """Each run's time-to-quality info; a stock run borrows the untuned times msviz measured
    for the same workloads (the msviz run of its seed)."""
    import msviz
    from msviz.views.quality import borrow_untuned, run_quality_info

    out = {}
    for (config, seed), wd in work_dirs.items():
        runs = [msviz.open(wd)]
        partner = work_dirs.get(("msviz", seed))
        if config != "msviz" and partner is not None:
            runs.append(msviz.open(partner))
        untuned = borrow_untuned(runs)[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[config, seed] = run_quality_info(runs[0], name=f"{config} seed {seed}",
                                                 untuned_us=untuned)
    return out


def _final(info: Any) -> float:
    known = [v for v in info.estimate_us if not math.isnan(v)]
    return known[-1] if known else math.nan


def _fmt(x: Any, spec: str = ".1f") -> str:
    return format(x, spec) if isinstance(x, (int, float)) and math.isfinite(x) else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet-block", help="catalogue model (msviz.models)")
    parser.add_argument("--trials", type=int, default=160, help="trials over all tasks")
    parser.add_argument("--batch", type=int, default=16, help="trials per batch")
    parser.add_argument("--seeds", type=int, default=3, help="how many seeds (1, 2, ...)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--e2e-runs", type=int, default=3,
                        help="fresh processes timing each tuned model")
    parser.add_argument("--work-root", default=None, help="keep work dirs here (default: temp)")
    parser.add_argument("--html", default=None, help="write both curves here (default: "
                        "WORK_ROOT/time_to_quality.html)")
    parser.add_argument("--reuse", action="store_true",
                        help="take a tuning run's figures from WORK_ROOT/CONFIG-seedN.json when "
                             "there (a run tuned before); time its work dir again")
    parser.add_argument("--tune", nargs=2, metavar=("CONFIG", "SEED"), help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.tune:  # child: one tuning run
        print(json.dumps(tune_one(args.tune[0], args.model, args.trials, args.batch,
                                  int(args.tune[1]), Path(args.work_dir), args.threads)))
        return 0
    if args.measure:  # child: one end-to-end timing
        print(json.dumps(measure_one(args.model, Path(args.work_dir), args.threads)))
        return 0

    root = Path(args.work_root or tempfile.mkdtemp(prefix="msviz-ttq-"))
    seeds = list(range(1, args.seeds + 1))
    common = ["--model", args.model, "--trials", str(args.trials), "--batch", str(args.batch),
              "--threads", str(args.threads)]
    runs: dict[tuple[str, int], dict[str, Any]] = {}
    work_dirs: dict[tuple[str, int], Path] = {}
    for seed in seeds:
        for config in CONFIGS:
            wd = root / f"{config}-seed{seed}"
            saved = root / f"{config}-seed{seed}.json"
            if args.reuse and saved.is_file():
                res = json.loads(saved.read_text().strip().splitlines()[-1])
            else:
                res = _child(["--tune", config, str(seed), "--work-dir", str(wd), *common])
                saved.write_text(json.dumps(res))
            e2e = [_child(["--measure", "--work-dir", str(wd), *common])
                   for _ in range(args.e2e_runs)]
            tuned = [e["tuned_us"] for e in e2e if e["tuned_us"] is not None]
            res.update(tuned_runs=tuned, tuned_us=min(tuned) if tuned else None,
                       spread=max(tuned) / min(tuned) if tuned else None,
                       match=[e["match"] for e in e2e], errors=[e["error"] for e in e2e
                                                                if e["error"]],
                       fallback=e2e[0]["fallback"] if e2e else None)
            runs[config, seed], work_dirs[config, seed] = res, wd
            print(f"seed {seed} {config:<6} wall {res['wall_s']:7.1f} s  tuned end-to-end "
                  f"{_fmt(res['tuned_us'])} us (least of {len(tuned)} processes: "
                  f"{', '.join(_fmt(t) for t in tuned)}; spread {_fmt(res['spread'], '.2f')}x)"
                  f"  outputs match {res['match']}  fallback {res['fallback']}"
                  + (f"  errors {res['errors']}" if res["errors"] else ""), flush=True)
            print(f"       trials per task: {res['split']}", flush=True)

    infos = curves(work_dirs)
    from msviz.views.quality import time_to_quality_figure, time_to_reach

    reach: dict[int, float | None] = {}
    print(f"\n{args.model}, {args.trials} trials, batch {args.batch}, {args.threads} threads, "
          f"seeds {seeds}; work dirs in {root}")
    for seed in seeds:
        ms, st = infos["msviz", seed], infos["stock", seed]
        target = _final(st)
        reach[seed] = time_to_reach(ms, target) if math.isfinite(target) else None
        st_end = st.seconds[-1] if st.seconds else math.nan
        print(f"seed {seed}: final estimate msviz {_fmt(_final(ms))} us, stock {_fmt(target)} "
              f"us; msviz reaches stock's final estimate at {_fmt(reach[seed])} s "
              f"(stock's curve ends at {_fmt(st_end)} s: "
              f"{_fmt((reach[seed] or math.nan) / st_end, '.2f')}x)")
        if ms.untuned_us is not None and ms.untuned_us <= target:
            print(f"        note: the untuned model's estimate ({_fmt(ms.untuned_us)} us) is "
                  "already at or below stock's final one: tuned kernels timed slower than "
                  "untuned (noise on a loaded machine?); this wall time says nothing")

    def med(config: str, key: str) -> float:
        vals = [runs[config, s][key] for s in seeds if runs[config, s][key] is not None]
        return statistics.median(vals) if vals else math.nan

    print(f"\n{'medians':<8} {'wall_s':>8} {'tuned_us':>9} {'final est.':>10}")
    for config in CONFIGS:
        finals = [_final(infos[config, s]) for s in seeds]
        print(f"{config:<8} {_fmt(med(config, 'wall_s')):>8} {_fmt(med(config, 'tuned_us')):>9}"
              f" {_fmt(statistics.median(finals)):>10}")
    ratio = med("msviz", "tuned_us") / med("stock", "tuned_us")
    reached = [r for r in reach.values() if r is not None]
    when = _fmt(statistics.median(reached)) if reached else "never"
    print(f"msviz / stock tuned end-to-end: {_fmt(ratio, '.3f')}x (target <= 1.0); msviz "
          f"reaches stock's final estimate in {when}"
          f" s (median of {len(reached)} of {len(seeds)} seeds that reach it), stock's wall "
          f"{_fmt(med('stock', 'wall_s'))} s")
    fig = time_to_quality_figure([infos[c, s] for s in seeds for c in CONFIGS],
                                 title=f"Time to quality: {args.model}, {args.trials} trials")
    html = Path(args.html or root / "time_to_quality.html")
    fig.write_html(str(html), include_plotlyjs=True)
    print(f"curves: {html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
