"""Time to quality: msviz's default against stock MetaSchedule ``tune_relax`` on one model.

Both tune the same catalogue model for the same target (this host's CPU), with the same builder
(``LocalBuilder`` with msviz's fast build function) and runner (stock ``LocalRunner``), the same
trials and batch size (``num_trials_per_iter``), each configuration and seed in a fresh Python
process (the tuning itself is :mod:`model_vs_stock`'s). Then, for each work dir:

* **the tuned end-to-end latency at equal trials**, measured: ``compile_relax`` with the work
  dir, a Relax VM, ``time_evaluator``, outputs checked against the untuned build
  (:func:`msviz.bench.model_check.check_model`), in ``--e2e-runs`` fresh processes each (model
  timings
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
#: What each configuration passes to msviz's Session beyond the default ("stock": tune_relax).
SESSIONS = {"msviz": {}, "forecast": {"task_scheduler": "forecast"},
            "gradient": {"task_scheduler": "gradient"}}


def tune_one(config: str, model_name: str, trials: int, batch: int, seed: int, work_dir: Path,
             threads: int, max_seconds: float | None = None) -> dict[str, Any]:
    """One tuning run in this process (``model_vs_stock``'s for stock); its wall time, trial
    split and why it ended."""
    import tvm.s_tir.tensor_intrin  # noqa: F401 - the one-time import, before timing
    from model_vs_stock import _tune_stock, task_split

    import msviz
    from msviz import compat, models

    compat.quiet_ipython_printing()
    target = compat.make_target("llvm", num_cores=threads)
    model = models.build(model_name, seed=0)
    tic = time.perf_counter()
    reason = None
    if config in SESSIONS:
        session = msviz.Session(model, target=target, work_dir=work_dir, max_trials=trials,
                                trials_per_batch=batch, seed=seed, num_threads=threads,
                                end_to_end_check=False, max_seconds=max_seconds,
                                **SESSIONS[config])
        session.start()
        if session.wait() != "finished":
            raise RuntimeError(f"msviz session {session.state}: {session.end_reason}")
        reason = session.end_reason
        held = [e for e in session.events.snapshot() if e.kind == "forecast"]
        if held:  # how well the forecasts held: outcomes inside their 80% band
            reason += (f"; forecasts held: {held[-1].data['inside']} of "
                       f"{held[-1].data['total']} outcomes inside the 80% band")
    else:
        _tune_stock(config, model, target, work_dir, trials, batch, seed, None)
    wall = time.perf_counter() - tic
    return {"config": config, "seed": seed, "wall_s": wall, "end_reason": reason,
            "split": task_split(work_dir, model.extract_tasks(target))}


def measure_one(model_name: str, work_dir: Path, threads: int) -> dict[str, Any]:
    """The tuned model's end-to-end latency in this (fresh) process, outputs checked."""
    from msviz import compat, models
    from msviz.bench.model_check import check_model

    target = compat.make_target("llvm", num_cores=threads)
    model = models.build(model_name, seed=0)
    return check_model(model, model.extract_tasks(target), work_dir, target, seed=0)


def _child(args: list[str], timeout: float | None = None) -> dict[str, Any] | None:
    """A child's JSON result; None when it ran past ``timeout`` (killed: a stock run stopped
    at the same wall time as msviz's budget)."""
    try:
        proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
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
        partner = next((wd for (c, sd), wd in work_dirs.items() if sd == seed and c in SESSIONS),
                       None)
        if config not in SESSIONS and partner is not None:
            runs.append(msviz.open(partner))
        untuned = borrow_untuned(runs)[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[config, seed] = run_quality_info(runs[0], name=f"{config} seed {seed}",
                                                 untuned_us=untuned)
    return out


def stopped_run(config: str, seed: int, work_dir: Path, model_name: str, threads: int,
                wall: float) -> dict[str, Any]:
    """A stock run killed at the time budget: its records up to then (a torn last line cut)."""
    from model_vs_stock import task_split

    from msviz import compat, models

    for name in ("database_tuning_record.json", "database_workload.json"):
        path = work_dir / name
        if path.is_file():
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):
                path.write_bytes(data[:data.rfind(b"\n") + 1])
    target = compat.make_target("llvm", num_cores=threads)
    model = models.build(model_name, seed=0)
    return {"config": config, "seed": seed, "wall_s": wall,
            "end_reason": f"stopped at the time budget ({wall:.0f} s)",
            "split": task_split(work_dir, model.extract_tasks(target))}


def paired_rounds(args: Any, configs: list[str], seeds: list[int],
                  work_dirs: dict[tuple[str, int], Path]) -> list[str]:
    """Each msviz configuration's tuned model against stock's of the same seed, whole, in
    paired rounds (:func:`msviz.compare_models`): lines to print."""
    if args.paired_rounds <= 0 or "stock" not in configs:
        return []
    import msviz
    from msviz import compat

    target = compat.make_target("llvm", num_cores=args.threads)
    lines = ["", f"paired rounds ({args.paired_rounds} per process, {args.paired_draws} "
             "processes; ratio = msviz config / stock, whole model, time_evaluator number 10 "
             "repeat 3 min_repeat_ms 30):"]
    for seed in seeds:
        for config in configs:
            if config == "stock":
                continue
            got = msviz.compare_models(work_dirs["stock", seed], work_dirs[config, seed],
                                       model=args.model, target=target,
                                       names=("stock", config), rounds=args.paired_rounds,
                                       draws=args.paired_draws)
            lines.append(f"  seed {seed}: {got}")
    return lines


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
    parser.add_argument("--configs", default="msviz,stock",
                        help="comma-separated: msviz (default session), forecast (msviz with "
                        "task_scheduler='forecast'), gradient, stock (tune_relax)")
    parser.add_argument("--time", type=float, default=None,
                        help="a time budget (s): msviz configurations get max_seconds, stock is "
                        "stopped at the same wall time")
    parser.add_argument("--paired-rounds", type=int, default=6,
                        help="rounds per process comparing each msviz build with stock's "
                        "(0: none)")
    parser.add_argument("--paired-draws", type=int, default=2, help="processes for those rounds")
    parser.add_argument("--tune", nargs=2, metavar=("CONFIG", "SEED"), help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.tune:  # child: one tuning run
        print(json.dumps(tune_one(args.tune[0], args.model, args.trials, args.batch,
                                  int(args.tune[1]), Path(args.work_dir), args.threads,
                                  args.time)))
        return 0
    if args.measure:  # child: one end-to-end timing
        print(json.dumps(measure_one(args.model, Path(args.work_dir), args.threads)))
        return 0

    root = Path(args.work_root or tempfile.mkdtemp(prefix="msviz-ttq-"))
    seeds = list(range(1, args.seeds + 1))
    common = ["--model", args.model, "--trials", str(args.trials), "--batch", str(args.batch),
              "--threads", str(args.threads)] + (["--time", str(args.time)] if args.time else [])
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    runs: dict[tuple[str, int], dict[str, Any]] = {}
    work_dirs: dict[tuple[str, int], Path] = {}
    for seed in seeds:
        for config in configs:
            wd = root / f"{config}-seed{seed}"
            saved = root / f"{config}-seed{seed}.json"
            if args.reuse and saved.is_file():
                res = json.loads(saved.read_text().strip().splitlines()[-1])
            else:
                stop = args.time if config not in SESSIONS and args.time else None
                tic = time.perf_counter()
                res = _child(["--tune", config, str(seed), "--work-dir", str(wd), *common],
                             timeout=stop)
                if res is None:  # stock stopped at the budget: what its database holds
                    res = stopped_run(config, seed, wd, args.model, args.threads,
                                      time.perf_counter() - tic)
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
            print(f"       trials per task: {res['split']}; ended: "
                  f"{res.get('end_reason') or 'its trials'}", flush=True)
    paired = paired_rounds(args, configs, seeds, work_dirs)

    infos = curves(work_dirs)
    from msviz.views.quality import time_to_quality_figure, time_to_reach

    reach: dict[int, float | None] = {}
    print(f"\n{args.model}, {args.trials} trials, batch {args.batch}, {args.threads} threads, "
          f"seeds {seeds}; work dirs in {root}")
    first = next(c for c in configs if c in SESSIONS)
    for seed in seeds:
        ms, st = infos[first, seed], infos["stock", seed]
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

    for line in paired:
        print(line)

    def med(config: str, key: str) -> float:
        vals = [runs[config, s][key] for s in seeds if runs[config, s][key] is not None]
        return statistics.median(vals) if vals else math.nan

    print(f"\n{'medians':<8} {'wall_s':>8} {'tuned_us':>9} {'final est.':>10}")
    for config in configs:
        finals = [_final(infos[config, s]) for s in seeds]
        print(f"{config:<8} {_fmt(med(config, 'wall_s')):>8} {_fmt(med(config, 'tuned_us')):>9}"
              f" {_fmt(statistics.median(finals)):>10}")
    ratio = med(first, "tuned_us") / med("stock", "tuned_us")
    reached = [r for r in reach.values() if r is not None]
    when = _fmt(statistics.median(reached)) if reached else "never"
    print(f"{first} / stock tuned end-to-end (least of fresh processes): {_fmt(ratio, '.3f')}x;"
          f" {first} "
          f"reaches stock's final estimate in {when}"
          f" s (median of {len(reached)} of {len(seeds)} seeds that reach it), stock's wall "
          f"{_fmt(med('stock', 'wall_s'))} s")
    fig = time_to_quality_figure([infos[c, s] for s in seeds for c in configs],
                                 title=f"Time to quality: {args.model}, {args.trials} trials")
    html = Path(args.html or root / "time_to_quality.html")
    fig.write_html(str(html), include_plotlyjs=True)
    print(f"curves: {html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
