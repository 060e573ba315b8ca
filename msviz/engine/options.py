"""Checks of a Session's arguments, done in its constructor so a bad one fails before tuning.

Each error names the argument and what was wrong with it. Pure functions: no TVM here.
"""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any

from msviz.errors import WorkDirError

__all__ = ["check_seed", "check_work_dir"]


def check_seed(seed: Any) -> int | None:
    """``seed`` as an int (None stays None).

    Only integers are seeds (numpy's too): ``1.7`` or ``True`` would silently become 1.

    Raises
    ------
    TypeError
        For a bool, float, str or any other non-integer.
    """
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(
            f"seed must be an int (or None for a random seed), not {type(seed).__name__} "
            f"{seed!r}")
    return int(seed)


def check_work_dir(work_dir: Any, resume: Any) -> None:
    """Refuse a ``work_dir`` that cannot be used, and a ``resume`` with nothing to resume.

    Raises
    ------
    WorkDirError
        ``work_dir`` is an existing file; or ``resume=True`` and ``work_dir`` is None or does
        not exist (a mistyped path would silently start a new run).
    """
    if work_dir is not None and Path(work_dir).exists() and not Path(work_dir).is_dir():
        raise WorkDirError(
            f"work_dir {str(work_dir)!r} is a file, not a directory: pass a new directory or "
            "one that holds a MetaSchedule work dir")
    if resume:
        if work_dir is None:
            raise WorkDirError(
                "resume=True needs the work_dir of the run to continue; pass work_dir=..., or "
                "resume=False to start a new run")
        if not Path(work_dir).exists():
            raise WorkDirError(
                f"resume=True but work_dir {str(work_dir)!r} does not exist (nothing to resume; "
                "a mistyped path?): check the path, or pass resume=False to start a new run "
                "there")
