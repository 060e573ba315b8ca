"""The ``msviz`` command's flags: the tuning flags shared by ``demo`` and ``tune``, and the
argparse types that check a value when it is parsed, so a bad one names its flag."""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path
from typing import Any

from msviz.compat import make_target
from msviz.engine.arguments import MAX_SEED, MAX_TRIALS_PER_BATCH, parse_duration
from msviz.engine.measure.rpc import parse_rpc
from msviz.engine.measure.runner import EVALUATOR_RANGES
from msviz.errors import MsvizError, TargetError

__all__ = ["check_library_paths", "count", "force_flag", "joined_negative_values", "rpc_flag",
           "seconds", "target_flag", "tune_flags", "work_dir_flag"]


def tune_flags(parser: argparse.ArgumentParser, *, trials: int, work_dir: str | None) -> None:
    parser.add_argument("--trials", type=count(1), default=None,
                        help=f"trial budget (default {trials}; none of its own with --time)")
    parser.add_argument("--time", type=seconds, default=None, metavar="DURATION",
                        help="time budget: seconds, or 90s, 20m, 1h30m (max_seconds); with "
                        "--trials too, the first reached ends tuning")
    parser.set_defaults(default_trials=trials)
    parser.add_argument("--batch", type=count(1, MAX_TRIALS_PER_BATCH), default=16,
                        help="trials per batch (default 16)")
    parser.add_argument("--seed", type=count(0, MAX_SEED), default=1)
    parser.add_argument("--work-dir", default=work_dir, type=work_dir_flag,
                        help=f"where records go (default {work_dir or 'a new temp dir'})")
    parser.add_argument("--target", default="llvm", type=target_flag,
                        help="llvm (default: this machine's CPU, its vector units), cuda, a tag, "
                        "or a JSON dict of target attributes")
    parser.add_argument("--strategy", default="evolutionary", choices=["evolutionary", "replay"])
    parser.add_argument("--preset", default="msviz", choices=["msviz", "stock"])
    parser.add_argument("--resume", action="store_true", help="continue what the work dir holds")
    parser.add_argument("--min-repeat-ms", type=count(*EVALUATOR_RANGES["min_repeat_ms"]),
                        default=10,
                        help="runner: minimum time per timing repeat (default 10)")
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report")
    parser.add_argument("--rpc-wait", metavar="SECONDS", type=seconds, default=600.0,
                        help="with --rpc: give up when no server registers within SECONDS "
                        "(default 600)")
    parser.add_argument("--rpc", metavar="HOST:PORT:KEY", type=rpc_flag,
                        help="measure on the RPC servers registered at this tracker under KEY "
                        "(TVM RPC has no authentication: keep it on loopback or a private "
                        "network)")
    parser.add_argument("--ray", metavar="ADDRESS",
                        help="build candidates on this Ray cluster (HOST:PORT of its head, or "
                        "'local' for a new local instance; needs `pip install msviz[ray]`; Ray "
                        "must only be reachable on a private network)")


def count(low: int, high: int | None = None) -> Any:
    """An argparse type: an int within [low, high] (argparse names the flag when it fails)."""
    def checked(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            within = f"from {low} to {high:,}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: must be {within}")
        return value
    checked.__name__ = "count"
    return checked


def seconds(text: str) -> float:
    """A duration flag: seconds (``90``, ``1e9``) or ``90s``, ``20m``, ``1h30m``."""
    try:
        return parse_duration(text)
    except ValueError:
        pass
    try:
        value = float(text)  # a number parse_duration does not spell (1e9, .5e3)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration (seconds, or 90s, 20m, 1h30m)") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be a positive number of seconds (a "
                                         "finite number, or 90s, 20m, 1h30m)")
    return value


def work_dir_flag(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path would tune into the current directory: "
                                         "name a directory (or leave the flag out)")
    return text


def target_flag(text: str) -> Any:
    """``--target``: a name, a tag, or a JSON dict; checked now, so a typo names the flag."""
    value: Any = text
    if text.lstrip().startswith("{"):
        try:
            value = json.loads(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"{text!r} is not a JSON dict ({err})") from None
    try:
        make_target(value)
    except TargetError as err:  # a target TVM knows, lacking what msviz needs
        raise argparse.ArgumentTypeError(str(err)) from None
    except Exception as err:  # TVM's own error types for an unknown kind or attribute
        lines = str(err).strip().splitlines()
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a target TVM knows ({lines[-1] if lines else err!r})") from None
    return value


def rpc_flag(text: str) -> Any:
    try:
        return parse_rpc(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).replace("--rpc wants ", "want ")) from None


def force_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--force", action="store_true",
                        help="replace the output file if it exists")


#: A value that argparse takes for an option because it starts with ``-`` (``-1,2``, ``-0.5``,
#: ``-1e3``): argparse says only "expected one argument".
_NEGATIVE = re.compile(r"-[0-9.][0-9.,eE+x-]*")


def joined_negative_values(argv: list[str]) -> list[str]:
    """``["--weights", "-1,2"]`` as ``["--weights=-1,2"]``: so the flag's own check names the
    value and why it is wrong, not argparse's "expected one argument"."""
    out: list[str] = []
    for token in argv:
        if (out and out[-1].startswith("--") and "=" not in out[-1]
                and _NEGATIVE.fullmatch(token)):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def check_library_paths(paths: list[str] | None, flag: str = "--library") -> None:
    """Refuse a library path that does not exist (a mistyped path would tune cold, without a
    word on the command line).

    Raises
    ------
    MsvizError
        Naming the flag and the path.
    """
    missing = [p for p in paths or [] if not Path(p).exists()]
    if missing:
        raise MsvizError(f"{flag} {', '.join(missing)}: does not exist (a library is a work "
                         "dir, a bundle or a folder of them): check the path, or leave the flag "
                         "out to tune without a library")
