"""``msviz build``: a tuned model exported to deploy (see :mod:`msviz.workflows.deploy`; built
and exported by :mod:`msviz.bench.deploy` under the measuring lock).

    msviz build resnet18-wd -o resnet18-deploy
    msviz build stock-wd -o out --model resnet18 --overwrite
"""

from __future__ import annotations

import argparse
from typing import Any

from msviz.workflows.deploy import LIBRARY_FILE, LOADER_FILE, SPEC_FILE, build

__all__ = ["add_parser"]


def _cmd_build(args: argparse.Namespace) -> int:
    tuned = build(args.work_dir, model=args.model, target=args.target)
    out = tuned.export(args.output, overwrite=args.overwrite)
    print(f"wrote {out}/: {LIBRARY_FILE} (code and weights), {SPEC_FILE} (inputs, entry, "
          f"target), {LOADER_FILE} (runs it with TVM alone)")
    print(f"{tuned.name} on the {tuned.graph} graph: {len(tuned.tasks) - len(tuned.fallback)} "
          f"of {len(tuned.tasks)} tasks tuned; fallback (untuned schedule): "
          f"{', '.join(tuned.fallback) or 'none'}")
    return 0


def add_parser(sub: Any) -> None:
    """The ``build`` subcommand."""
    p = sub.add_parser("build", help="build the model a work dir tuned with its best records "
                                     "and export it (model.so, model.json, load.py) for TVM's "
                                     "runtime alone")
    p.add_argument("work_dir", help="the work dir of a tuned model")
    p.add_argument("-o", "--output", required=True, help="the directory to write (new, or empty)")
    p.add_argument("--model", help="the model (catalogue name or model.onnx; default: the one "
                                   "the work dir names)")
    p.add_argument("--target", help="what to build for (default: the records' target)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the output directory if it holds files")
    p.set_defaults(func=_cmd_build)
