"""A shape cover's settings checked before anything is written: its numbers (``k``,
``max_k``, ``regret``, trials) and its root folder, which must be new, or a folder of an
unfinished cover of the same family (:class:`~msviz.workflows.shapes.cover.ShapeTuning`)."""

from __future__ import annotations

import math
from pathlib import Path

from msviz.errors import MsvizError
from msviz.records.database import RECORD_FILE, WORKLOAD_FILE
from msviz.records.sidecar import SIDECAR_FILE

__all__ = ["check_cover_numbers", "check_root", "default_max_k"]


def default_max_k(n: int) -> int:
    """Shapes tuned at most when ``k`` is not given: 3/8 of the family, at least 1."""
    return max(1, (3 * n) // 8)


def check_root(root: Path, labels: list[str], dispatch_dir: str) -> None:
    """Refuse a cover root that is a file, or a folder holding another run (a work dir in it,
    or one of its folders not named after one of the family's shapes): the cover would write
    its shapes' records and its dispatch work dir beside (or into) that run's."""
    if root.exists() and not root.is_dir():
        raise MsvizError(f"work_dir {root} is a file, not a folder: give a new folder (or one "
                         "of an unfinished cover of this family) as the cover's root")
    if not root.is_dir():
        return
    marks = (WORKLOAD_FILE, RECORD_FILE, SIDECAR_FILE)
    own = {*labels, dispatch_dir}
    if any((root / n).exists() for n in marks):
        theirs = [root.name]
    else:
        theirs = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name not in own and
                        any((p / n).exists() for n in marks))
    if theirs:
        raise MsvizError(f"work_dir {root} holds another run ({', '.join(theirs)}: a work dir "
                         "not of this family's shapes): the cover would write into it; give a "
                         "new folder")


def check_cover_numbers(n: int, *, k: int | None, max_k: int | None, regret: float,
                        trials: int, carry_top: int, trials_per_batch: int) -> None:
    """Each number of a cover of ``n`` shapes in its range, or a ``ValueError`` naming it."""
    for name, value, low in (("trials", trials, 1), ("carry_top", carry_top, 1),
                             ("trials_per_batch", trials_per_batch, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n):
        raise ValueError(f"k must be an int in 1..{n} (the family's shapes), got {k!r}")
    if max_k is not None and (isinstance(max_k, bool) or not isinstance(max_k, int)
                              or not 1 <= max_k <= n):
        raise ValueError(f"max_k must be an int in 1..{n}, got {max_k!r}")
    if not isinstance(regret, (int, float)) or not math.isfinite(regret) or regret < 1:
        raise ValueError(f"regret must be a number >= 1 (1.05: 5% slower than each "
                         f"shape's own best), got {regret!r}")
