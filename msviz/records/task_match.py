"""Which task of one shape is which task of another: the same blocks (names, loop kinds,
dtypes written) at other extents.

A catalogue model built at two input sizes has the same tasks, but Relax names them by order
of appearance (``matmul1`` at one size may be ``matmul2`` at another), and the batch-norm tasks
have no anchor block to key them by. A task's *form* is its blocks' names with their iteration
kinds and the dtypes it writes; among tasks of the same form the nearest by extents (sum of
``|log2 a - log2 b|``, :func:`distance`) is the match. The library ranks a workload's siblings
(the same operator at other shapes, :meth:`msviz.records.library.Library.siblings`) by the same
distance.
"""

from __future__ import annotations

import math
from typing import Any

from msviz import compat

__all__ = ["distance", "extents", "form", "nearest"]


def _blocks(mod: Any) -> list[Any]:
    """Every SBlock of the module's PrimFuncs, outer first."""
    return [b for _, f in mod.functions_items() if isinstance(f, compat.tir.PrimFunc)
            for b in compat.sblocks(f)]


def form(mod: Any) -> tuple:
    """A task's form: ``(block name, iteration kinds, dtypes written)`` per block (the root
    left out)."""
    return tuple((str(b.name_hint), tuple(int(iv.iter_type) for iv in b.iter_vars),
                  tuple(str(w.source.dtype) for w in b.writes))
                 for b in _blocks(mod) if str(b.name_hint) != "root")


def extents(mod: Any) -> tuple[int, ...]:
    """Every block's iteration extents, in order (1 where one is not constant)."""
    out = []
    for b in _blocks(mod):
        for iv in b.iter_vars:
            out.append(int(getattr(iv.dom.extent, "value", 1)))
    return tuple(out)


def distance(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """Sum of ``|log2 x - log2 y|`` over extents (inf when their counts differ)."""
    if len(a) != len(b):
        return math.inf
    return sum(abs(math.log2(max(x, 1)) - math.log2(max(y, 1))) for x, y in zip(a, b))


def nearest(mod: Any, candidates: list[tuple[Any, Any]]) -> Any | None:
    """The key of the candidate ``(key, mod)`` of the same :func:`form` as ``mod`` with the
    nearest extents (the first on a tie), None when no candidate has its form."""
    want, ext = form(mod), extents(mod)
    best, best_d = None, math.inf
    for key, other in candidates:
        if form(other) != want:
            continue
        d = distance(ext, extents(other))
        if best is None or d < best_d:
            best, best_d = key, d
    return best
