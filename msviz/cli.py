"""The ``msviz`` command: ``demo``, ``tune``, ``report``, ``show`` and ``devices``."""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from msviz.engine import Session

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


def _progress(session: Session, start: float) -> str:
    from msviz.records.row import gflops

    best_us = session.best_secs * 1e6
    best_text = "-" if best_us == float("inf") else (
        f"{best_us:.2f} us ({gflops(session.workload.flop, best_us):.1f} GFLOPS)")
    stage = next((e.kind for e in reversed(session.events.snapshot()) if e.kind != "log"), "")
    return (f"\r[{time.perf_counter() - start:6.1f} s] {session.state:<8} {stage:<18} "
            f"trials {session.trials_done}/{session.max_trials}  best {best_text}   ")


def _tune(args: argparse.Namespace, **knobs: object) -> int:
    from msviz.engine import Session
    from msviz.report import write_report

    evaluator = {"number": 3, "repeat": 1, "min_repeat_ms": args.min_repeat_ms}
    session = Session(args.workload, target=args.target, work_dir=args.work_dir,
                      max_trials=args.trials, trials_per_batch=args.batch, seed=args.seed,
                      strategy=args.strategy, preset=args.preset, resume=args.resume,
                      evaluator_config=evaluator, **_runner(args), **knobs)
    workload = session.workload
    from msviz.compat import describe_target

    print(f"msviz: tuning {workload.name} ({workload.description}) on "
          f"{describe_target(session.target)}, {args.trials} trials, work dir {session.work_dir}")
    start = time.perf_counter()
    session.start()
    try:
        while session.wait(0.5) in ("running", "waiting", "stopping"):
            print(_progress(session, start), end="", flush=True)
    except KeyboardInterrupt:
        session.stop()
        session.wait()
    print(_progress(session, start))
    if session.state == "failed":
        print(f"msviz: tuning failed: {session.end_reason}", file=sys.stderr)
        print(session.events[-1].get("traceback", ""), file=sys.stderr)
        return 1
    print(f"{session.state} ({session.end_reason}) in {time.perf_counter() - start:.1f} s\n")
    _cmd_show(argparse.Namespace(work_dir=session.work_dir, top=5))
    if not args.no_report:
        report = write_report(session.work_dir, Path(session.work_dir) / "report.html")
        print(f"\nreport: {report}")
    return 0


def _runner(args: argparse.Namespace) -> dict:
    from msviz.engine.rpc import parse_rpc

    return {"runner": parse_rpc(args.rpc)} if getattr(args, "rpc", None) else {}


def _cmd_devices(args: argparse.Namespace) -> int:
    from msviz.engine import rpc
    from msviz.views.devices import devices_info, devices_text

    spec = rpc.rpc(args.address, key=args.key or "-")
    try:
        status = rpc.status_event(rpc.tracker_status(spec.tracker, spec.key), spec)
    except rpc.TrackerError as err:
        print(f"msviz: error: {err}", file=sys.stderr)
        return 2
    if not args.key:
        status["key"] = None
    print(devices_text(devices_info(status)))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    # Small search knobs so the demo finishes in about a minute on 2 cores.
    return _tune(args, population_size=64, init_min_unmeasured=32, genetic_num_iters=2)


def _cmd_tune(args: argparse.Namespace) -> int:
    knobs = {k: getattr(args, k) for k in ("population_size", "genetic_num_iters")
             if getattr(args, k) is not None}
    return _tune(args, **knobs)


def _tune_flags(parser: argparse.ArgumentParser, *, trials: int, work_dir: str | None) -> None:
    parser.add_argument("--trials", type=int, default=trials, help=f"trial budget ({trials})")
    parser.add_argument("--batch", type=int, default=16, help="trials per batch (default 16)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work-dir", default=work_dir,
                        help=f"where records go (default {work_dir or 'a new temp dir'})")
    parser.add_argument("--target", default="llvm",
                        help="llvm (default: this machine's CPU, its vector units), cuda, a tag, "
                        "or a JSON dict of target attributes")
    parser.add_argument("--strategy", default="evolutionary", choices=["evolutionary", "replay"])
    parser.add_argument("--preset", default="msviz", choices=["msviz", "stock"])
    parser.add_argument("--resume", action="store_true", help="continue what the work dir holds")
    parser.add_argument("--min-repeat-ms", type=int, default=10,
                        help="runner: minimum time per timing repeat (default 10)")
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report")
    parser.add_argument("--rpc", metavar="HOST:PORT:KEY",
                        help="measure on the RPC servers registered at this tracker under KEY "
                        "(TVM RPC has no authentication: keep it on loopback or a private "
                        "network)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``msviz`` command."""
    parser = argparse.ArgumentParser(
        prog="msviz", description="See and steer TVM MetaSchedule tuning."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="tune a built-in workload on the CPU and write a report")
    demo.add_argument("--workload", default="GMM-0", help="catalogue workload (default GMM-0)")
    _tune_flags(demo, trials=32, work_dir="msviz-demo")
    demo.set_defaults(func=_cmd_demo)

    tune = sub.add_parser("tune", help="tune a catalogue workload (e.g. GMM-0, C2D-3)")
    tune.add_argument("workload", help="catalogue name with size index, e.g. GMM-2")
    _tune_flags(tune, trials=64, work_dir=None)
    tune.add_argument("--population-size", type=int, help="evolutionary population (512)")
    tune.add_argument("--genetic-num-iters", type=int, help="genetic iterations (4)")
    tune.set_defaults(func=_cmd_tune)

    report = sub.add_parser("report", help="write a self-contained HTML report of a work dir")
    report.add_argument("work_dir")
    report.add_argument("-o", "--output", help="HTML file (default WORK_DIR/report.html)")
    report.set_defaults(func=_cmd_report)

    show = sub.add_parser("show", help="print the task table and the fastest trials")
    show.add_argument("work_dir")
    show.add_argument("--top", type=int, default=10)
    show.set_defaults(func=_cmd_show)

    devices = sub.add_parser("devices", help="print an RPC tracker's servers and queue")
    devices.add_argument("address", metavar="HOST:PORT", help="the tracker, e.g. 127.0.0.1:9190")
    devices.add_argument("--key", help="the device key to report on (default: all)")
    devices.set_defaults(func=_cmd_devices)
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
