"""``msviz shapes``: cover a shape family from the command line (see :mod:`msviz.workflows.shapes`).

    msviz shapes GMM --dim M --sizes 1,16,64,256 --weights 4,2,1,1 --trials 64 --work-dir gmm
    msviz shapes convnet --sizes 24,32,48,64 --trials 96 --work-dir convnet-shapes

The same concept tuned and drawn: :mod:`msviz.workflows.shapes`, :mod:`msviz.views.shapes`.
"""

from __future__ import annotations

import argparse
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "parse_sizes"]


def parse_sizes(text: str) -> list[Any]:
    """``"1,16,256"`` -> ints; ``"1x3x24x24,1x3x32x32"`` -> input shapes."""
    out: list[Any] = []
    for part in text.split(","):
        part = part.strip()
        try:
            out.append(tuple(int(v) for v in part.split("x")) if "x" in part else int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"sizes are ints or input shapes like 1x3x32x32, separated by commas; "
                f"got {part!r}") from None
    return out


def _weights(text: str) -> list[float]:
    try:
        weights = [float(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"weights are numbers separated by commas, got "
                                         f"{text!r}") from None
    bad = [v for v in weights if not (math.isfinite(v) and v > 0)]
    if bad:
        raise argparse.ArgumentTypeError(f"{text}: each weight must be a number > 0 (how often "
                                         f"its size occurs), not {bad[0]:g}")
    return weights


def _run(args: argparse.Namespace) -> int:
    import msviz  # heavy: TVM (the package imports this module, so not at its top)

    dim = tuple(args.dim.split(",")) if args.dim and "," in args.dim else args.dim
    fam = msviz.shapes(args.program, sizes=args.sizes, weights=args.weights, dim=dim)
    work_dir = Path(args.work_dir) if args.work_dir else Path(
        tempfile.mkdtemp(prefix="msviz-shapes-"))
    try:
        tuning = msviz.tune_shapes(fam, work_dir=work_dir, k=args.k, regret=args.regret,
                                   trials=args.trials, trials_per_batch=args.batch,
                                   seed=args.seed, target=args.target)
    except BaseException:  # refused: the temp folder made for it goes too
        if not args.work_dir:
            shutil.rmtree(work_dir, ignore_errors=True)
        raise

    def say(event: dict) -> None:
        kind = event["kind"]
        if kind == "picked":
            print(f"tuning {event['shape']}: {event['why']}", flush=True)
        elif kind == "tuned":
            print(f"  tuned {event['shape']}: {event['trials']} trials, "
                  f"{event['seconds']:.1f} s", flush=True)
        elif kind == "crossed" and event.get("error"):
            print(f"  {event['source']} -> {event['shape']}: {event['failed']} carries "
                  f"failed ({event['error']})", flush=True)
        elif kind in ("done", "warning"):
            print(f"{event.get('why') or event.get('message')}", flush=True)

    tuning.subscribe(say)
    print(f"{fam} -> {work_dir}")
    tuning.start()
    try:
        tuning.wait()
    except KeyboardInterrupt:
        print("stopping after the current tuning (what was measured is kept) ...", flush=True)
        tuning.stop()
        tuning.wait()
    if tuning.error is not None:
        print(f"msviz shapes: {type(tuning.error).__name__}: {tuning.error}")
        return 1
    cover = tuning.cover
    print(cover.table())
    regret = cover.weighted_regret()
    print("weighted regret: " + ", ".join(f"{k} {v:.3f}" for k, v in regret.items()
                                          if v is not None))
    print(f"{cover.seconds:.1f} s in all ({cover.cross_seconds:.1f} s cross-measuring); "
          f"one stock work dir for every shape: {work_dir / (cover.work_dir or 'dispatch')}")
    return 0 if cover.state == "finished" else 130


def add_parser(sub: Any) -> None:
    """The ``shapes`` subcommand."""
    p = sub.add_parser("shapes", help="tune a few shapes of a family, carry their schedules to "
                                      "every shape, write one dispatch work dir")
    p.add_argument("program", help="a catalogue workload (GMM, C2D-1) or model (convnet)")
    p.add_argument("--sizes", type=parse_sizes, required=True,
                   help="comma-separated sizes (ints; a model's input shapes as 1x3x32x32)")
    p.add_argument("--dim", default=None,
                   help="a workload's sizes that vary, by te_workload's names (M; H,W)")
    p.add_argument("--weights", type=_weights, default=None, help="how often each size occurs")
    p.add_argument("--k", type=int, default=None, help="shapes to tune (default: by --regret)")
    p.add_argument("--regret", type=float, default=1.05,
                   help="stop at this estimated weighted regret (default 1.05)")
    p.add_argument("--trials", type=int, default=64, help="trials per tuned shape")
    p.add_argument("--batch", type=int, default=16, help="trials per batch")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--target", default="llvm")
    p.add_argument("--work-dir", default=None, help="the work root (default: a new temp dir)")
    p.set_defaults(func=_run)
