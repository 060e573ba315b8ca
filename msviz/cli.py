"""The ``msviz`` command: ``demo``, ``report`` and ``show``."""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

__all__ = ["main"]


def _cmd_report(args: argparse.Namespace) -> int:
    from msviz.report import write_report

    out = Path(args.output or Path(args.work_dir) / "report.html")
    write_report(args.work_dir, out)
    print(f"wrote {out}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    import msviz
    from msviz.views import task_table_info

    run = msviz.open(args.work_dir)
    print(task_table_info(run.tasks).frame.to_string())
    ok = run.trials[run.trials["status"] == "ok"]
    print(f"\n{len(run.trials)} trials, {len(run.trials) - len(ok)} failed. Fastest:")
    print(ok.nsmallest(args.top, "latency_us")[["task", "trial", "latency_us", "gflops"]]
          .to_string(index=False))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from msviz import compat, workloads
    from msviz.report import write_report

    workload = workloads.resolve(args.workload)
    work_dir = Path(args.work_dir)
    print(f"msviz demo: tuning {workload.name} ({workload.description}) on the local CPU, "
          f"{args.trials} trials, work dir {work_dir}")
    compat.quiet_ipython_printing()
    ms = compat.ms
    start = time.perf_counter()
    ms.tir_integration.tune_tir(
        workload.mod,
        compat.make_target("llvm"),
        str(work_dir),
        max_trials_global=args.trials,
        num_trials_per_iter=args.batch,
        builder=compat.local_builder(),
        runner=ms.runner.LocalRunner(
            evaluator_config=ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=10)
        ),
        cost_model=ms.cost_model.XGBModel(num_warmup_samples=0, num_tuning_cores=2),
        strategy=ms.search_strategy.EvolutionarySearch(
            population_size=64, init_min_unmeasured=32, genetic_num_iters=2
        ),
        seed=args.seed,
        num_tuning_cores=2,
    )
    print(f"tuned in {time.perf_counter() - start:.1f} s")
    _cmd_show(argparse.Namespace(work_dir=work_dir, top=5))
    report = write_report(work_dir, work_dir / "report.html")
    print(f"\nreport: {report}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``msviz`` command."""
    parser = argparse.ArgumentParser(
        prog="msviz", description="See and steer TVM MetaSchedule tuning."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="tune a built-in workload on the CPU and write a report")
    demo.add_argument("--workload", default="GMM-0", help="catalogue workload (default GMM-0)")
    demo.add_argument("--trials", type=int, default=32, help="trial budget (default 32)")
    demo.add_argument("--batch", type=int, default=16, help="trials per batch (default 16)")
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument("--work-dir", default="msviz-demo", help="where records go (msviz-demo)")
    demo.set_defaults(func=_cmd_demo)

    report = sub.add_parser("report", help="write a self-contained HTML report of a work dir")
    report.add_argument("work_dir")
    report.add_argument("-o", "--output", help="HTML file (default WORK_DIR/report.html)")
    report.set_defaults(func=_cmd_report)

    show = sub.add_parser("show", help="print the task table and the fastest trials")
    show.add_argument("work_dir")
    show.add_argument("--top", type=int, default=10)
    show.set_defaults(func=_cmd_show)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``msviz`` console script."""
    from msviz.errors import MsvizError, MsvizWarning

    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("always", MsvizWarning)
        warnings.formatwarning = lambda m, c, *a, **k: f"warning: {m}\n"  # type: ignore[assignment]
        try:
            return int(args.func(args) or 0)
        except MsvizError as err:
            print(f"msviz: error: {err}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
