"""A model tuned by msviz and by stock MetaSchedule ``tune_relax``: same trials, target, builder.

Configurations (each run in a fresh Python process, so none inherits another's warm caches; the
one-time ``import tvm.s_tir.tensor_intrin`` happens before timing starts):

* ``msviz``        ``msviz.Session(model)``: msviz's engine (its task scheduler, preset "msviz")
* ``stock``        ``tune_relax`` with MetaSchedule's defaults (GradientBased, EvolutionarySearch,
                   XGBModel)
* ``stock+msviz``  ``tune_relax`` with msviz's search as its ``PySearchStrategy``
                   (``strategy=msviz.search_strategy()``), everything else stock
* ``msviz-warmup100``  ``msviz.Session(model, cost_model_warmup=100)``: msviz with stock's
                   100-sample cost-model warm-up (random scores until then), to tell the time
                   the engine takes from the time the earlier model scoring takes
* ``msviz-task16``  ``msviz.Session(model, cost_model_task_warmup=16)``: a task's warm-up lasts
                   until the model has trained on 16 of its samples (two batches of 8)
* ``msviz-ranked`` / ``msviz-unranked``  ``task_warmup_ranked=True`` / ``False``: a task's warm-up
                   batch picked by the shared cost model's scores, or at random
* ``msviz-nocarry``  ``sibling_carry=0``: no task's first batch measures the schedules of its
                   siblings tuned earlier in the run (the default carries up to 8)

All use the same target (this host's CPU, ``msviz.compat.make_target("llvm")``), the same builder
(``LocalBuilder`` with msviz's fast build function) and the stock ``LocalRunner``; ``tune_relax``
tunes on the physical core count (it has no thread option), so pass ``--threads`` equal to it.
The end-to-end latency of each is measured the same way: ``compile_relax`` with the run's work
dir, a Relax VM, ``time_evaluator`` (median of ``repeat`` x ``number`` runs), outputs checked
against the untuned build on the same random inputs (``msviz.bench.model_check.check_model``).

It also prints what a stock user's *default* ``LocalBuilder`` would have cost on the stock run: one
batch of the run's schedules is built with it and with the fast builder, and the difference is
multiplied by the run's number of batches (an extrapolation, printed as such: the default build
function imports the tensor intrinsics in every fresh worker, and the builder starts new workers
for every batch)::

    python benchmarks/model_vs_stock.py                                  # resnet-block, 3 seeds
    python benchmarks/model_vs_stock.py --seeds 1 --trials 32 --batch 8  # a quick run
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
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from profiles import msviz_stages, overhead_lines, side_by_side

CONFIGS = ("msviz", "stock", "stock+msviz", "msviz-warmup100", "msviz-task16", "msviz-ranked",
           "msviz-unranked", "msviz-nocarry")
#: Knobs of each msviz Session configuration.
SESSION_KNOBS = {"msviz": {}, "msviz-warmup100": {"cost_model_warmup": 100},
                 "msviz-task16": {"cost_model_task_warmup": 16},
                 "msviz-ranked": {"task_warmup_ranked": True},
                 "msviz-unranked": {"task_warmup_ranked": False},
                 "msviz-nocarry": {"sibling_carry": 0}}


def task_split(work_dir: Path, tasks: list) -> dict[str, int]:
    """Trials per task name in a work dir's database (records matched to tasks by workload)."""
    from msviz import compat

    db = compat.JSONDatabase(work_dir=str(work_dir))
    by_hash = {int(compat.structural_hash(t.workload.mod)): t.name for t in tasks}
    split: Counter[str] = Counter({t.name: 0 for t in tasks})
    for rec in db.get_all_tuning_records():
        split[by_hash.get(int(compat.structural_hash(rec.workload.mod)), "(other)")] += 1
    return dict(split)


def best_per_task(work_dir: Path) -> dict[str, float]:
    """Each task's best mean latency (us) in tuning (what the database ranks by)."""
    import msviz

    trials = msviz.open(work_dir).trials
    best = trials.groupby("task")["latency_us"].min()
    return {str(k): round(float(v), 2) for k, v in best.items()}


def _tune_stock(config: str, model: Any, target: Any, work_dir: Path, trials: int, batch: int,
                seed: int, population: int | None) -> dict[str, float]:
    import msviz
    from msviz import compat

    ms = compat.ms
    if config == "stock+msviz":
        knobs = {} if population is None else {"population_size": population}
        strategy = msviz.search_strategy(**knobs)
    else:
        strategy = ms.search_strategy.EvolutionarySearch(
            **({} if population is None else {"population_size": population}))
    with ms.Profiler() as prof:
        ms.relax_integration.tune_relax(
            model.lower(target), None, target, str(work_dir), max_trials_global=trials,
            num_trials_per_iter=batch, builder=compat.local_builder(),
            runner=ms.runner.LocalRunner(), strategy=strategy, seed=seed)
    return {k: float(v) for k, v in prof.get().items()}


def _tune_msviz(config: str, model: Any, target: Any, work_dir: Path, trials: int, batch: int,
                seed: int, threads: int, population: int | None) -> dict[str, float]:
    import msviz

    knobs = {**SESSION_KNOBS[config],
             **({} if population is None else {"population_size": population})}
    session = msviz.Session(model, target=target, work_dir=work_dir, max_trials=trials,
                            trials_per_batch=batch, seed=seed, num_threads=threads,
                            end_to_end_check=False, **knobs)
    session.start()
    state = session.wait()
    if state != "finished":
        raise RuntimeError(f"msviz session {state}: {session.end_reason}")
    return msviz_stages(session)


def default_builder_cost(work_dir: Path, target: Any, batch: int) -> dict[str, float]:
    """Seconds to build one batch of the run's schedules with the default and the fast builder."""
    from msviz import compat

    ms = compat.ms
    db = compat.JSONDatabase(work_dir=str(work_dir))
    mods = [rec.as_measure_candidate().sch.mod for rec in db.get_all_tuning_records()[:batch]]
    out = {}
    for name, builder in (("default", ms.builder.LocalBuilder()),
                          ("fast", compat.local_builder())):
        tic = time.perf_counter()
        results = builder.build([ms.builder.BuilderInput(m, target) for m in mods])
        out[name] = time.perf_counter() - tic
        out[f"{name}_errors"] = sum(r.error_msg is not None for r in results)
    return out


def run_one(config: str, model_name: str, trials: int, batch: int, seed: int, work_dir: Path,
            threads: int, population: int | None, builder_probe: bool,
            cold: bool = False) -> dict[str, Any]:
    """One tuning run in this process; returns its figures."""
    if not cold:
        import tvm.s_tir.tensor_intrin  # noqa: F401 - the one-time import, before timing

    from msviz import compat, models
    from msviz.bench.model_check import check_model

    compat.quiet_ipython_printing()
    target = compat.make_target("llvm", num_cores=threads)
    model = models.build(model_name, seed=0)
    tic = time.perf_counter()
    if config in SESSION_KNOBS:
        stages = _tune_msviz(config, model, target, work_dir, trials, batch, seed, threads,
                             population)
    else:
        stages = _tune_stock(config, model, target, work_dir, trials, batch, seed, population)
    wall = time.perf_counter() - tic
    tasks = model.extract_tasks(target)
    e2e = check_model(model, tasks, work_dir, target, seed=0)
    split = task_split(work_dir, tasks)
    out = {"config": config, "seed": seed, "wall_s": wall, "split": split, "stages": stages,
           "best_us": best_per_task(work_dir),
           **e2e}
    if builder_probe:
        # Batches the run measured: each task's trials in batches of at most `batch`.
        batches = sum(math.ceil(n / batch) for n in split.values())
        cost = default_builder_cost(work_dir, target, batch)
        out["builder"] = {**cost, "batches": batches,
                          "extra_s": batches * (cost["default"] - cost["fast"])}
    return out


def _fmt(x: float | None, spec: str = "9.1f") -> str:
    return format(x, spec) if isinstance(x, (int, float)) and math.isfinite(x) else "-".rjust(9)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet-block", help="catalogue model (msviz.models)")
    parser.add_argument("--trials", type=int, default=128, help="trials over all tasks")
    parser.add_argument("--batch", type=int, default=16, help="trials per batch")
    parser.add_argument("--seeds", type=int, default=3, help="how many seeds (1, 2, ...)")
    parser.add_argument("--first-seed", type=int, default=1, help="the first seed")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cold", action="store_true",
                        help="as a new user meets it: no import of the tensor intrinsics before "
                             "timing (the first TuneContext of each run pays it)")
    parser.add_argument("--population", type=int, default=None,
                        help="population_size of every search (default: MetaSchedule's 512)")
    parser.add_argument("--work-root", default=None, help="keep work dirs here (default: temp)")
    parser.add_argument("--one", nargs=2, metavar=("CONFIG", "SEED"), help=argparse.SUPPRESS)
    parser.add_argument("--work-dir", help=argparse.SUPPRESS)
    parser.add_argument("--builder-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.one:  # child process: one run, JSON on the last stdout line
        result = run_one(args.one[0], args.model, args.trials, args.batch, int(args.one[1]),
                         Path(args.work_dir), args.threads, args.population, args.builder_probe,
                         args.cold)
        print(json.dumps(result))
        return 0

    if args.seeds < 1 or args.first_seed < 1:
        parser.error(f"--seeds {args.seeds} --first-seed {args.first_seed}: both must be >= 1")
    root = Path(args.work_root or tempfile.mkdtemp(prefix="msviz-model-bench-"))
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    results: list[dict[str, Any]] = []
    for seed in seeds:
        for config in args.configs:
            wd = root / f"{config}-seed{seed}"
            cmd = [sys.executable, __file__, "--one", config, str(seed), "--work-dir", str(wd),
                   "--model", args.model, "--trials", str(args.trials),
                   "--batch", str(args.batch), "--threads", str(args.threads)]
            if args.population is not None:
                cmd += ["--population", str(args.population)]
            if args.cold:
                cmd.append("--cold")
            if config == "stock" and seed == seeds[0]:
                cmd.append("--builder-probe")
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{config} seed {seed} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
                return 1
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            results.append(res)
            print(f"seed {seed} {config:<12} wall {res['wall_s']:7.1f} s  "
                  f"tuned {_fmt(res['tuned_us'], '.1f')} us  untuned "
                  f"{_fmt(res['untuned_us'], '.1f')} us  match {res['match']}  "
                  f"fallback {res['fallback']}  error {res['error']}", flush=True)
            print(f"       best latency per task in tuning (us): {res['best_us']}", flush=True)
            print(f"       trials per task ({sum(res['split'].values())} in all): "
                  f"{res['split']}", flush=True)
            if "builder" in res:
                b = res["builder"]
                print(f"       default LocalBuilder: one batch {b['default']:.1f} s "
                      f"({b['default_errors']:.0f} failed) vs fast {b['fast']:.1f} s "
                      f"({b['fast_errors']:.0f} failed); x {b['batches']} batches = about "
                      f"{b['extra_s']:.0f} s more wall time (extrapolated from one batch)",
                      flush=True)

    def median(config: str, key: str) -> float:
        vals = [r[key] for r in results if r["config"] == config and r[key] is not None]
        return statistics.median(vals) if vals else float("nan")

    print(f"\n{args.model}, {args.trials} trials, batch {args.batch}, seeds {seeds} "
          f"(medians over seeds; work dirs in {root})")
    print(f"{'config':<12} {'wall_s':>9} {'tuned_us':>9} {'untuned_us':>10}")
    for config in args.configs:
        print(f"{config:<12} {_fmt(median(config, 'wall_s'))} {_fmt(median(config, 'tuned_us'))} "
              f"{_fmt(median(config, 'untuned_us'), '10.1f')}")
    probe = next((r["builder"] for r in results if "builder" in r), None)
    if probe is not None:
        stock_wall = median("stock", "wall_s")
        print(f"stock with the default LocalBuilder: about {stock_wall + probe['extra_s']:.0f} s "
              f"wall (extrapolated: {probe['batches']} batches x "
              f"{probe['default'] - probe['fast']:.1f} s more per batch)")
        if probe["default_errors"]:
            print(f"  ... and {probe['default_errors']:.0f} of the probe batch's builds failed "
                  "with it (its 30 s timeout includes importing the tensor intrinsics): on this "
                  "machine the stock default could not have measured those trials at all")
    first = seeds[0]
    by = {(r["config"], r["seed"]): r for r in results}
    if ("stock", first) in by:
        for config in args.configs:
            if config == "stock" or (config, first) not in by:
                continue
            print(f"\nwhere the time went, seed {first}: stock (ms.Profiler) and {config}")
            print(side_by_side(by["stock", first]["stages"], by[config, first]["stages"],
                               names=("stock", config)))
            if config in SESSION_KNOBS:
                print(overhead_lines(by[config, first]["stages"], args.trials))
    print("targets: msviz tuned_us <= stock tuned_us, msviz wall_s <= 0.8 x stock wall_s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
