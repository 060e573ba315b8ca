"""The ``msviz`` command: ``demo``, ``tune``, ``coverage``, ``report``, ``show``, ``compare``,
``bundle``, ``reproduce``, ``migrate``, ``devices``, ``shapes`` and ``build``."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import msviz
from msviz.analysis.restriction import task_proposals
from msviz.archive.bundle import write_bundle
from msviz.archive.export import export as export_trials
from msviz.archive.merge import merge_text
from msviz.archive.migrate import migrate_work_dir, parse_workload_flags
from msviz.cli import deploy as deploy_cli
from msviz.cli import shapes as shapes_cli
from msviz.cli.flags import check_library_paths, force_flag, joined_negative_values, tune_flags
from msviz.cli.flags import count as _count
from msviz.cli.flags import seconds as _seconds
from msviz.cli.flags import target_flag as _target
from msviz.cli.progress import Progress, stage_text, waiting_text
from msviz.compat import describe_target
from msviz.engine import Session
from msviz.engine.arguments import (
    TIME_ONLY_MAX_TRIALS,
    duration_text,
)
from msviz.engine.measure import rpc
from msviz.engine.search.presets import KNOB_LIMITS
from msviz.engine.task_scheduler.kinds import SCHEDULERS
from msviz.engine.task_scheduler.scheduler import format_task_table as table
from msviz.errors import MsvizError, MsvizWarning
from msviz.models import graph_passes
from msviz.records.coverage import coverage_text
from msviz.records.model_profile import recorded_model_profile
from msviz.records.quality import run_started
from msviz.records.shape_cover import COVER_FILE
from msviz.report import write_report, write_shapes_report
from msviz.views import task_table_info
from msviz.views.compare import compare_info, run_names, summary_frame
from msviz.views.devices import devices_info, devices_text
from msviz.views.importance import importance_text
from msviz.views.model_profile import model_profile_info, model_profile_text
from msviz.views.profile import profile_info, profile_table_text
from msviz.workflows.reproduce import reproduce

__all__ = ["Progress", "format_task_table", "main", "stage_text"]


def _cmd_report(args: argparse.Namespace) -> int:
    if (Path(args.work_dir) / COVER_FILE).is_file():  # a shape family's work root
        out = write_shapes_report(args.work_dir, args.output, overwrite=args.force)
    else:
        out = write_report(args.work_dir, args.output, overwrite=args.force)
    print(f"wrote {out}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    run = msviz.open(args.work_dir)
    print(task_table_info(run.tasks).frame.reset_index().to_string(index=False))
    ok = run.trials[run.trials["status"] == "ok"]
    print(f"\n{len(run.trials)} trials, {len(run.trials) - len(ok)} failed. Fastest:")
    print(ok.nsmallest(args.top, "latency_us")[["task", "trial", "latency_us", "gflops"]]
          .to_string(index=False))
    profile = recorded_model_profile(run)
    if profile is not None:
        print("\nKernels in the model vs in tuning:")
        print(model_profile_text(model_profile_info(profile)))
    with warnings.catch_warnings():  # a task without decisions says so in its line
        warnings.simplefilter("ignore", MsvizWarning)
        proposals = task_proposals(run)
    if proposals:
        print("\nWhat mattered (decision importance; the restriction the fastest trials allow):")
        print("\n".join(importance_text(p.importance, p.changes) for p in proposals))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    path = export_trials(msviz.open(args.work_dir), args.output, overwrite=args.force)
    print(f"wrote {path}")
    return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    result = msviz.merge(args.work_dirs, args.output, target=args.target)
    print(merge_text(result))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    runs = [msviz.open(d) for d in args.work_dirs]
    names = run_names([Path(d) for d in args.work_dirs])
    info = compare_info({n: (r.trials, r.tasks) for n, r in zip(names, runs, strict=True)},
                        workloads={n: [r.workload_key(int(w)) for w in r.tasks["workload"]]
                                   for n, r in zip(names, runs, strict=True)},
                        started={n: run_started(r) for n, r in zip(names, runs, strict=True)})
    print(f"{info.label.replace(' (µs)', '')}, the first run as the baseline:")
    print(summary_frame(info).to_string(na_rep="-", float_format=lambda v: f"{v:.4g}"))
    return 0


def _cmd_bundle(args: argparse.Namespace) -> int:
    out = write_bundle(args.work_dir, args.output or f"{Path(args.work_dir).resolve()}.zip",
                       overwrite=args.force)
    print(f"wrote {out}")
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    print(reproduce(args.bundle, retime=not args.no_retime, redraw=not args.no_redraw))
    return 0


def _cmd_migrate(args: argparse.Namespace) -> int:
    print(migrate_work_dir(args.work_dir, args.output,
                           workloads=parse_workload_flags(args.workload)))
    return 0


def format_task_table(rows: list[dict]) -> str:
    """MetaSchedule's task table (``PrintTuningStatistics``) from :meth:`Session.task_table`."""
    return table(rows)


def _tune(args: argparse.Namespace, **knobs: object) -> int:
    evaluator = {"number": 3, "repeat": 1, "min_repeat_ms": args.min_repeat_ms}
    extra = {}
    if getattr(args, "trials_per_task", None) is not None:
        extra["max_trials_per_task"] = args.trials_per_task
    if getattr(args, "task_scheduler", None) is not None:
        extra["task_scheduler"] = args.task_scheduler
    if getattr(args, "time_per_task", None) is not None:
        extra["max_seconds_per_task"] = args.time_per_task
    if getattr(args, "graph", None) is not None:
        extra["graph"] = args.graph
    if getattr(args, "library", None):
        check_library_paths(args.library)
        extra.update(library=args.library, reuse=args.reuse)
    trials = args.trials if args.trials is not None or args.time else args.default_trials
    session = Session(args.workload, target=args.target, work_dir=args.work_dir,
                      max_trials=trials, max_seconds=args.time, trials_per_batch=args.batch,
                      seed=args.seed,
                      strategy=args.strategy, preset=args.preset, resume=args.resume,
                      evaluator_config=evaluator, **extra, **_runner(args), **_builder(args),
                      **knobs)
    if session.model is not None:
        model = session.model
        print(f"msviz: tuning model {model.name} ({model.description}): {len(session.tasks)} "
              f"tasks on {describe_target(session.target)}, {budget_text(session)}, "
              f"work dir {session.work_dir}")
        print(f"msviz: graph: {model.graph_report(session.target).summary()}")
        print(format_task_table(session.task_table()))
    else:
        workload = session.workload
        print(f"msviz: tuning {workload.name} ({workload.description}) on "
              f"{describe_target(session.target)}, {budget_text(session)}, "
              f"work dir {session.work_dir}")
    progress = Progress(session)
    changes: list[str] = []

    measured: list[bool] = []

    def on_event(event: Any) -> None:  # the worker thread: only note it, the main loop prints
        if session.model is not None and event.kind in ("task_done", "measured"):
            changes.append(event.kind)
        if event.kind == "measured" and not measured:
            measured.append(True)

    session.subscribe(on_event)
    start = last_table = time.perf_counter()
    session.start()
    waiting = ""
    try:
        while session.wait(0.5) in ("running", "waiting", "stopping"):
            if waiting != (waiting := waiting_text(session)) and waiting:
                progress.print(waiting)
            # the task table as it goes: when a task finishes, else at most once a minute
            if changes and ("task_done" in changes or time.perf_counter() - last_table > 60):
                changes.clear()
                progress.print(format_task_table(session.task_table()))
                last_table = time.perf_counter()
            progress.update()
    except KeyboardInterrupt:
        session.stop()
        session.wait()
    progress.close()
    if session.state == "failed":
        print(f"msviz: tuning failed: {session.end_reason}", file=sys.stderr)
        if not session.events[-1].get("msviz_error"):  # a bug, not the input: the trace helps
            print(session.events[-1].get("traceback", ""), file=sys.stderr)
        return 1
    if args.resume and not measured and session.end_reason == "reached max_trials":
        held = len(msviz.open(session.work_dir).trials)  # the budget counts them all
        raise MsvizError(
            f"the work dir {session.work_dir} already holds {held} trials, at or over this "
            f"budget of {session.max_trials}, so nothing was measured: resume with a budget "
            f"above {held} (e.g. --trials {held + session.trials_per_batch}) to tune on")
    print(f"{session.state} ({session.end_reason}) in {time.perf_counter() - start:.1f} s\n")
    if session.model is not None:
        print(format_task_table(session.task_table()))
        e2e = session.end_to_end
        if e2e is not None:
            if e2e.get("error"):
                print(f"end to end: {e2e['error']}")
            else:
                print(f"end to end: untuned {e2e['untuned_us']:.1f} us, tuned "
                      f"{e2e['tuned_us']:.1f} us, outputs "
                      f"{'match' if e2e['match'] else 'DIFFER'} (max |diff| "
                      f"{e2e['max_abs_diff']:.2e}); untuned kernels: "
                      f"{', '.join(e2e['fallback']) or 'none'}")
        print()
    _cmd_show(argparse.Namespace(work_dir=session.work_dir, top=5))
    print("\nWhere the time went (MetaSchedule's Profiler names):")
    print(profile_table_text(profile_info(session.profile)))
    if not args.no_report:
        report = write_report(session.work_dir, Path(session.work_dir) / "report.html",
                              end_to_end=session.end_to_end, overwrite=True)  # its own
        print(f"\nreport: {report}")
    return 0


def _runner(args: argparse.Namespace) -> dict:
    if not getattr(args, "rpc", None):
        return {}
    return {"runner": dataclasses.replace(args.rpc, wait_timeout=args.rpc_wait)}


def _builder(args: argparse.Namespace) -> dict:
    """``--ray ADDRESS``: builds on that Ray cluster (``local``: a new local instance)."""
    address = getattr(args, "ray", None)
    if not address:
        return {}
    try:
        builder = msviz.ray_builder(address=address)
    except ValueError as err:  # a malformed address: said like the other usage errors
        raise MsvizError(f"--ray {address}: {err}") from None
    print(f"msviz: building on Ray ({'a local instance' if address == 'local' else address}, "
          f"{builder.max_workers} CPUs)")
    return {"builder": builder}


def _cmd_coverage(args: argparse.Namespace) -> int:
    check_library_paths(args.library)
    cov = msviz.coverage(args.workload, args.library, args.target, untuned=not args.no_untuned)
    print(coverage_text(cov))
    return 0


def _cmd_devices(args: argparse.Namespace) -> int:
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


def budget_text(session: Session) -> str:
    """The session's budgets in words: ``64 trials``, ``20m`` or ``640 trials or 20m``."""
    parts = [] if session.max_trials == TIME_ONLY_MAX_TRIALS else [
        f"{session.max_trials} trials"]
    if session.config.max_seconds is not None:
        parts.append(duration_text(session.config.max_seconds))
    return " or ".join(parts)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``msviz`` command."""
    parser = argparse.ArgumentParser(
        prog="msviz", description="See and steer TVM MetaSchedule tuning."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="tune a built-in workload on the CPU and write a report")
    demo.add_argument("--workload", default="GMM-0", help="catalogue workload (default GMM-0)")
    tune_flags(demo, trials=32, work_dir="msviz-demo")
    demo.set_defaults(func=_cmd_demo)

    tune = sub.add_parser("tune", help="tune a catalogue workload (e.g. GMM-0, C2D-3), a "
                          f"catalogue model ({', '.join(msviz.models.MODELS)}) or an ONNX file")
    tune.add_argument("workload", help="catalogue name with size index (GMM-2), model name "
                      "(mlp) or model.onnx")
    tune_flags(tune, trials=64, work_dir=None)
    tune.add_argument("--trials-per-task", type=_count(1),
                      help="a model's per-task budget (max_trials_per_task; default none)")
    tune.add_argument("--time-per-task", type=_seconds, metavar="DURATION",
                      help="a model's per-task time budget (max_seconds_per_task)")
    tune.add_argument("--task-scheduler", choices=list(SCHEDULERS),
                      help="which task gets the next batch (default forecast; gradient: "
                      "MetaSchedule's)")
    tune.add_argument("--population-size", type=_count(1, KNOB_LIMITS["population_size"]),
                      help="evolutionary population (512)")
    tune.add_argument("--genetic-num-iters", type=_count(0, KNOB_LIMITS["genetic_num_iters"]),
                      help="genetic iterations (4)")
    tune.add_argument("--library", action="append", metavar="PATH",
                      help="a tuning library: a work dir, a bundle or a folder of them, read "
                      "only (repeat for more); exact hits start at its best, siblings measure "
                      "its schedules carried to their shapes first")
    tune.add_argument("--graph", choices=list(graph_passes.GRAPHS), default=None,
                      help="a model's graph: msviz's expert graph (default: batch norms folded "
                      "into the convolutions, convolutions NHWC, epilogues fused, weights "
                      "prepacked and exp/erf/tanh vectorized on CPU), it in the model's own "
                      "layout (expert-nchw), it with libm's exp/erf/tanh (expert-exact) or "
                      "stock MetaSchedule's, for comparisons")
    tune.add_argument("--reuse", choices=["improve", "skip"], default="improve",
                      help="what an exact library hit does: tune on from its best (default) "
                      "or get no trials")
    tune.set_defaults(func=_cmd_tune)

    cover = sub.add_parser("coverage", help="what a tuning library covers of a model, before "
                           "any trial: per task exact hit, anchor-block match, sibling or none")
    cover.add_argument("workload", help="model name (resnet50), model.onnx or a catalogue "
                       "workload (GMM-2)")
    cover.add_argument("--library", action="append", metavar="PATH", required=True,
                       help="a work dir, a bundle or a folder of them (repeat for more)")
    cover.add_argument("--target", default="llvm", type=_target,
                       help="the target whose records are hits (default: this machine's CPU)")
    cover.add_argument("--no-untuned", action="store_true",
                       help="do not time the untuned tasks (no estimate against untuned)")
    cover.set_defaults(func=_cmd_coverage)

    report = sub.add_parser("report", help="write a self-contained HTML report of a work dir "
                            "(or of a shape cover: a work root holding shapes.json)")
    report.add_argument("work_dir")
    report.add_argument("-o", "--output", help="HTML file (default WORK_DIR/report.html; "
                        "for a bundle, BUNDLE-report.html beside it)")
    force_flag(report)
    report.set_defaults(func=_cmd_report)

    show = sub.add_parser("show", help="print the task table and the fastest trials")
    show.add_argument("work_dir")
    show.add_argument("--top", type=_count(1), default=10)
    show.set_defaults(func=_cmd_show)

    compare = sub.add_parser("compare", help="compare work dirs: best latency, speedup over "
                             "the first, trials to get within 5%% of the best, wall time")
    compare.add_argument("work_dirs", nargs="+", metavar="WORK_DIR")
    compare.set_defaults(func=_cmd_compare)

    migrate = sub.add_parser("migrate", help="write a copy of a work dir from a TVM before the "
                             "s_tir rename (GetBlock...) that this TVM's compile_tir accepts")
    migrate.add_argument("work_dir")
    migrate.add_argument("-o", "--output", required=True, help="the new work dir")
    migrate.add_argument("--workload", action="append", metavar="N=WORKLOAD", default=[],
                         help="workload line N (0-based) is this catalogue name or TVMScript "
                         "file (for an old workload without its log)")
    migrate.set_defaults(func=_cmd_migrate)

    bundle = sub.add_parser("bundle", help="pack a work dir (database, logs, sidecar with "
                            "its environment) into one zip that msviz.open reads")
    bundle.add_argument("work_dir")
    bundle.add_argument("-o", "--output", help="the zip (default WORK_DIR.zip)")
    force_flag(bundle)
    bundle.set_defaults(func=_cmd_bundle)

    again = sub.add_parser("reproduce", help="re-time a bundle's best kernels here, re-draw "
                           "its first batch with its seed, and say which environment facts differ")
    again.add_argument("bundle", help="a zip from `msviz bundle` (or an msviz work dir)")
    again.add_argument("--no-retime", action="store_true", help="skip re-timing the kernels")
    again.add_argument("--no-redraw", action="store_true", help="skip re-drawing the first batch")
    again.set_defaults(func=_cmd_reproduce)

    export = sub.add_parser("export", help="write a work dir's trials (typed, tasks joined) as "
                            "Parquet (needs msviz[parquet]) or CSV")
    export.add_argument("work_dir")
    export.add_argument("-o", "--output", help="FILE.parquet or FILE.csv (default "
                        "WORK_DIR/trials.parquet, BUNDLE-trials.parquet beside a bundle; "
                        ".csv when pyarrow is missing)")
    force_flag(export)
    export.set_defaults(func=_cmd_export)

    merge = sub.add_parser("merge", help="merge work dirs into one stock work dir, keeping each "
                           "record's target, dropping exact duplicates")
    merge.add_argument("work_dirs", nargs="+", metavar="WORK_DIR")
    merge.add_argument("-o", "--output", required=True, help="the merged work dir (new)")
    merge.add_argument("--target", help="keep only this target's records (llvm: this machine's "
                       "CPU, or a JSON dict as the records hold it)")
    merge.set_defaults(func=_cmd_merge)

    devices = sub.add_parser("devices", help="print an RPC tracker's servers and queue")
    devices.add_argument("address", metavar="HOST:PORT", help="the tracker, e.g. 127.0.0.1:9190")
    devices.add_argument("--key", help="the device key to report on (default: all)")
    devices.set_defaults(func=_cmd_devices)
    shapes_cli.add_parser(sub)
    deploy_cli.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``msviz`` console script."""
    args = build_parser().parse_args(joined_negative_values(
        sys.argv[1:] if argv is None else list(argv)))
    with warnings.catch_warnings():
        warnings.simplefilter("always", MsvizWarning)
        warnings.formatwarning = lambda m, c, *a, **k: f"warning: {m}\n"  # type: ignore[assignment]
        try:
            return int(args.func(args) or 0)
        except (MsvizError, ValueError, OSError) as err:  # the user's input: no traceback
            if os.environ.get("MSVIZ_TRACEBACK"):
                raise
            print(f"msviz: error: {err} (MSVIZ_TRACEBACK=1 shows where)", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
