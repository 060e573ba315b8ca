"""A tuning library's worth: a model tuned cold and with the records of another run.

Four configurations tune the same catalogue model (this host's CPU, the same builder, runner,
trials and batch size), each in a fresh Python process:

* ``stock-cold``: stock ``tune_relax`` in an empty work dir;
* ``stock-lib``: stock ``tune_relax`` in a work dir that holds the library's records first
  (:func:`msviz.merge` of the library, the target's records only): stock's evolutionary search
  seeds its population with them where a workload matches exactly;
* ``msviz-cold``: msviz's default session;
* ``msviz-lib``: msviz's default session with ``library=`` (exact hits start at the library's
  best, anchor-block and sibling tasks measure carried schedules first, the cost model starts
  trained on the library).

Then it prints, per configuration: the wall, the tuned model's in-place latency at equal trials
(each msviz configuration against each stock one in paired rounds in one process,
:func:`msviz.compare_models`; ratio and spread), the time each reaches cold stock's final
estimate (and stock-lib's), the library's coverage of the model (counts per match kind) and the
carries tried / replayed / measured; and, for sibling tasks, the best of their first batch with
the library against cold (median ratio over those tasks).

Pairs (``--model`` and its ``--input-shape`` against the library's)::

    # shared workloads: a library from resnet18, then resnet50
    python benchmarks/library.py --library /path/to/resnet18-workdir --model resnet50 --trials 640
    # siblings only: the same model at another input size
    python benchmarks/library.py --library /path/to/resnet18-workdir --model resnet18 \\
        --input-shape 1,3,64,64 --trials 640
    # no library yet: tune one first (msviz default, --library-trials)
    python benchmarks/library.py --library-model resnet18 --library-trials 640 --model resnet50

The CPU, its peak and the comparison kernel: see ``benchmarks/kernels.py``; this script prints
the CPU model it ran on.
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

CONFIGS = ("stock-cold", "stock-lib", "msviz-cold", "msviz-lib")


def _shape(text: str | None) -> tuple[int, ...] | None:
    return tuple(int(x) for x in text.split(",")) if text else None


def _model(name: str, shape: tuple[int, ...] | None) -> Any:
    from msviz import models

    return models.build(name, seed=0, input_shape=shape)


def tune_one(config: str, args: Any, work_dir: Path) -> dict[str, Any]:
    """One tuning run in this process: wall, trials per task, and what the library gave."""
    import tvm.s_tir.tensor_intrin  # noqa: F401 - the one-time import, before timing
    from model_vs_stock import _tune_stock, task_split

    import msviz
    from msviz import compat

    compat.quiet_ipython_printing()
    target = compat.make_target("llvm", num_cores=args.threads)
    model = _model(args.model, _shape(args.input_shape))
    library = args.library or []
    reuse: dict[str, Any] | None = None
    if config == "stock-lib":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            msviz.merge(library, work_dir, target=target)
    tic = time.perf_counter()
    if config.startswith("msviz"):
        session = msviz.Session(model, target=target, work_dir=work_dir, max_trials=args.trials,
                                trials_per_batch=args.batch, seed=args.seed,
                                num_threads=args.threads, end_to_end_check=False,
                                library=library if config == "msviz-lib" else None)
        session.start()
        if session.wait() != "finished":
            raise RuntimeError(f"msviz session {session.state}: {session.end_reason}")
        found = [e.data for e in session.events.snapshot() if e.kind == "library_reuse"]
        reuse = found[-1] if found else None
    else:
        _tune_stock("stock", model, target, work_dir, args.trials, args.batch, args.seed, None)
    wall = time.perf_counter() - tic
    return {"config": config, "wall_s": wall, "reuse": reuse,
            "split": task_split(work_dir, model.extract_tasks(target))}


def tune_library(args: Any, work_dir: Path) -> dict[str, Any]:
    """The library itself: msviz's default session on ``--library-model``."""
    import msviz
    from msviz import compat

    compat.quiet_ipython_printing()
    target = compat.make_target("llvm", num_cores=args.threads)
    model = _model(args.library_model, _shape(args.library_input_shape))
    tic = time.perf_counter()
    session = msviz.Session(model, target=target, work_dir=work_dir,
                            max_trials=args.library_trials, trials_per_batch=args.batch,
                            seed=args.seed, num_threads=args.threads, end_to_end_check=False)
    session.start()
    session.wait()
    return {"wall_s": time.perf_counter() - tic, "state": session.state}


def _child(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def first_batches(work_dir: Path) -> dict[str, float]:
    """Each task's best latency (µs) in its first batch of this run (library records committed
    without measuring left out)."""
    import msviz

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trials = msviz.open(work_dir).trials
    if "batch" not in trials or trials.empty:
        return {}
    ran = trials[trials["batch"].notna() & trials["latency_us"].notna()]
    out = {}
    for task, rows in ran.groupby("task"):
        first = rows["batch"].min()
        out[str(task)] = float(rows[rows["batch"] == first]["latency_us"].min())
    return out


def _fmt(x: Any, spec: str = ".1f") -> str:
    return format(x, spec) if isinstance(x, (int, float)) and math.isfinite(x) else "-"


def _final(info: Any) -> float:
    known = [v for v in info.estimate_us if not math.isnan(v)]
    return known[-1] if known else math.nan


def report(args: Any, root: Path, runs: dict[str, dict], work_dirs: dict[str, Path]) -> None:
    """Print every figure (see the module's docstring)."""
    import msviz
    from msviz import compat
    from msviz.views.quality import run_quality_info, time_to_reach

    target = compat.make_target("llvm", num_cores=args.threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cov = msviz.coverage(_model(args.model, _shape(args.input_shape)), args.library,
                             target, untuned=False)
    print(f"\ncoverage of {args.model} by the library: {cov.counts()} "
          f"({len(cov.tasks)} tasks)")
    untuned_run = msviz.open(work_dirs["msviz-cold"])
    from msviz.views.quality import borrow_untuned

    untuned = borrow_untuned([untuned_run])[0]
    infos = {}
    for config, wd in work_dirs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            infos[config] = run_quality_info(msviz.open(wd), name=config, untuned_us=untuned)
    cold_final, lib_final = _final(infos["stock-cold"]), _final(infos["stock-lib"])
    cold_wall, lib_wall = runs["stock-cold"]["wall_s"], runs["stock-lib"]["wall_s"]
    print(f"\n{'config':<11} {'wall s':>7} {'final est. us':>13} {'reaches stock-cold':>19} "
          f"{'reaches stock-lib':>18}  carries tried/replayed/measured, committed, pretrained")
    for config in CONFIGS:
        info, res = infos[config], runs[config]
        a = time_to_reach(info, cold_final) if math.isfinite(cold_final) else None
        b = time_to_reach(info, lib_final) if math.isfinite(lib_final) else None
        reuse = res.get("reuse") or {}
        carries = (f"{reuse.get('tried', '-')}/{reuse.get('replayed', '-')}/"
                   f"{reuse.get('measured', '-')}, {reuse.get('committed', '-')}, "
                   f"{reuse.get('pretrained', '-')}") if reuse else ""
        print(f"{config:<11} {res['wall_s']:7.1f} {_fmt(_final(info)):>13} "
              f"{_fmt(a):>8} s ({_fmt((a or math.nan) / cold_wall, '.2f')}x) "
              f"{_fmt(b):>7} s ({_fmt((b or math.nan) / lib_wall, '.2f')}x)  {carries}")
    print(f"(ratios: of stock-cold's wall {cold_wall:.1f} s and of stock-lib's {lib_wall:.1f} s)")
    from msviz.views.quality import time_to_quality_figure

    fig = time_to_quality_figure(list(infos.values()),
                                 title=f"Time to quality: {args.model}, cold and with a library")
    fig.write_html(str(root / "library.html"), include_plotlyjs=True)
    print(f"curves: {root / 'library.html'}")

    cold, warm = first_batches(work_dirs["msviz-cold"]), first_batches(work_dirs["msviz-lib"])
    siblings = {t.name for t in cov.tasks if t.match == "sibling"}
    ratios = [cold[t] / warm[t] for t in siblings if t in cold and t in warm and warm[t] > 0]
    if ratios:
        print(f"\nsibling tasks' first batch: best cold / best with the library, median over "
              f"{len(ratios)} tasks: {statistics.median(ratios):.2f}x "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
    if args.paired_rounds > 0:
        print(f"\npaired rounds ({args.paired_rounds} per process, {args.paired_draws} "
              "processes; whole model in place, time_evaluator number 10 repeat 3 "
              "min_repeat_ms 30):")
        model = _model(args.model, _shape(args.input_shape))
        for a, b in (("stock-cold", "msviz-lib"), ("stock-lib", "msviz-lib"),
                     ("msviz-cold", "msviz-lib"), ("stock-cold", "msviz-cold")):
            got = msviz.compare_models(work_dirs[a], work_dirs[b], model=model, target=target,
                                       names=(a, b), rounds=args.paired_rounds,
                                       draws=args.paired_draws)
            print(f"  {got}")
    print(f"\nwork dirs in {root}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", action="append", help="library path (repeat for more)")
    parser.add_argument("--library-model", help="tune this catalogue model first as the library")
    parser.add_argument("--library-input-shape", help="its input shape, e.g. 1,3,32,32")
    parser.add_argument("--library-trials", type=int, default=640)
    parser.add_argument("--model", default="resnet50", help="catalogue model to tune")
    parser.add_argument("--input-shape", help="its input shape, e.g. 1,3,64,64")
    parser.add_argument("--trials", type=int, default=640, help="trials over all tasks")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--work-root", default=None)
    parser.add_argument("--reuse-runs", action="store_true",
                        help="take a configuration's figures from WORK_ROOT/CONFIG.json if there")
    parser.add_argument("--paired-rounds", type=int, default=6)
    parser.add_argument("--paired-draws", type=int, default=2)
    parser.add_argument("--tune", help=argparse.SUPPRESS)
    parser.add_argument("--work-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.tune == "library":
        print(json.dumps(tune_library(args, Path(args.work_dir))))
        return 0
    if args.tune:
        print(json.dumps(tune_one(args.tune, args, Path(args.work_dir))))
        return 0

    import platform

    print(f"host: {platform.processor() or platform.machine()}, "
          f"{open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0]}"
          f" ({args.threads} threads)", flush=True)
    root = Path(args.work_root or tempfile.mkdtemp(prefix="msviz-library-"))
    root.mkdir(parents=True, exist_ok=True)
    passed = [a for a in (argv if argv is not None else sys.argv[1:])
              if a not in ("--reuse-runs",)]
    if not args.library:
        if not args.library_model:
            parser.error("give --library PATH or --library-model NAME")
        lib = root / "library"
        res = _child(["--tune", "library", "--work-dir", str(lib), *passed])
        print(f"library: {args.library_model} tuned in {res['wall_s']:.1f} s ({res['state']})")
        args.library = [str(lib)]
        passed += ["--library", str(lib)]
    runs, work_dirs = {}, {}
    for config in [c.strip() for c in args.configs.split(",") if c.strip()]:
        wd, saved = root / config, root / f"{config}.json"
        if args.reuse_runs and saved.is_file():
            res = json.loads(saved.read_text())
        else:
            res = _child(["--tune", config, "--work-dir", str(wd), *passed])
            saved.write_text(json.dumps(res))
        runs[config], work_dirs[config] = res, wd
        print(f"{config:<11} wall {res['wall_s']:7.1f} s; trials per task {res['split']}",
              flush=True)
    if set(CONFIGS) <= set(runs):
        report(args, root, runs, work_dirs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
