"""Diffs: the TVMScript (or any generated text) of two schedules, and two traces side by side.

Text diffs use :mod:`difflib`: a unified diff, or an HTML side-by-side table. A trace diff aligns
the instructions of two traces by what they do (kind, inputs, attrs; not their decisions), so two
traces of the same design space line up one to one and the rows show which decisions differ.
"""

from __future__ import annotations

import difflib
from typing import Any

import pandas as pd

from msviz.trace.code import generated_source, lowered_tir, tvmscript
from msviz.trace.rows import trace_rows

__all__ = ["TRACE_DIFF_COLUMNS", "script_diff", "side_by_side_html", "text_of", "trace_diff"]

#: The columns of :func:`trace_diff`, in order.
TRACE_DIFF_COLUMNS = [
    "status",
    "index_a",
    "index_b",
    "kind",
    "decision_a",
    "decision_b",
    "python_a",
    "python_b",
]


def text_of(obj: Any, what: str = "script", target: Any = None) -> str:
    """The text of one side of a diff.

    Parameters
    ----------
    obj : str | Schedule | Replay | Trial | IRModule | PrimFunc
        A str is used as it is.
    what : str
        ``"script"`` (TVMScript), ``"lowered"`` (lowered TIR) or ``"source"`` (generated code
        for ``target``).
    target : str | dict | Target
        For ``"lowered"`` and ``"source"``.
    """
    if isinstance(obj, str):
        return obj
    if what == "script":
        return tvmscript(obj)
    if what == "lowered":
        return lowered_tir(obj, target)
    if what == "source":
        return generated_source(obj, target)
    raise ValueError(f"what must be 'script', 'lowered' or 'source', not {what!r}")


def script_diff(
    a: Any,
    b: Any,
    *,
    what: str = "script",
    target: Any = None,
    context: int = 3,
    names: tuple[str, str] = ("a", "b"),
) -> str:
    """A unified diff of two schedules' TVMScript (or lowered TIR, or generated source).

    Parameters
    ----------
    a, b : str | Schedule | Replay | Trial | IRModule | PrimFunc
        The two sides.
    what, target
        As for :func:`text_of`.
    context : int
        Lines of context around each change.
    names : tuple of str
        Labels of the two sides in the header.

    Returns
    -------
    diff : str
        Empty when the texts are equal.
    """
    lines_a = text_of(a, what, target).splitlines(keepends=True)
    lines_b = text_of(b, what, target).splitlines(keepends=True)
    return "".join(
        difflib.unified_diff(lines_a, lines_b, fromfile=names[0], tofile=names[1], n=context)
    )


def side_by_side_html(
    a: Any,
    b: Any,
    *,
    what: str = "script",
    target: Any = None,
    context: int | None = 3,
    names: tuple[str, str] = ("a", "b"),
    full_page: bool = False,
) -> str:
    """A side-by-side HTML diff (``difflib.HtmlDiff``) of two schedules' text.

    Parameters
    ----------
    a, b, what, target, names
        As for :func:`script_diff`.
    context : int | None
        Lines of context around changes; None shows both texts in full.
    full_page : bool
        A complete HTML page with its legend and styles (default: only the table).

    Returns
    -------
    html : str
    """
    lines_a = text_of(a, what, target).splitlines()
    lines_b = text_of(b, what, target).splitlines()
    differ = difflib.HtmlDiff(tabsize=4, wrapcolumn=100)
    make = differ.make_file if full_page else differ.make_table
    return make(
        lines_a,
        lines_b,
        fromdesc=names[0],
        todesc=names[1],
        context=context is not None,
        numlines=context or 0,
    )


def _signature(row: pd.Series) -> str:
    """What an instruction does, leaving out its decision."""
    return f"{row['kind']}|{row['inputs']}|{row['attrs']}|{len(row['outputs'])}"


def trace_diff(a: Any, b: Any) -> pd.DataFrame:
    """Two traces aligned instruction by instruction.

    Parameters
    ----------
    a, b : Trace | Schedule | Trial | Replay | TuningRecord
        The two traces.

    Returns
    -------
    rows : pandas.DataFrame
        Columns :data:`TRACE_DIFF_COLUMNS`. ``status`` is ``"same"`` (same instruction and
        decision), ``"decision"`` (same instruction, different decision), ``"changed"``
        (instructions paired at the same place but different), ``"only_a"`` or ``"only_b"``;
        the index of a side is None where it has no instruction.
    """
    ra, rb = trace_rows(a), trace_rows(b)
    sig_a = [_signature(r) for _, r in ra.iterrows()]
    sig_b = [_signature(r) for _, r in rb.iterrows()]
    out: list[dict] = []

    def row(status: str, i: int | None, j: int | None) -> dict:
        left = ra.iloc[i] if i is not None else None
        right = rb.iloc[j] if j is not None else None
        return {
            "status": status,
            "index_a": i,
            "index_b": j,
            "kind": (left if left is not None else right)["kind"],
            "decision_a": left["decision"] if left is not None else None,
            "decision_b": right["decision"] if right is not None else None,
            "python_a": left["python"] if left is not None else "",
            "python_b": right["python"] if right is not None else "",
        }

    matcher = difflib.SequenceMatcher(a=sig_a, b=sig_b, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(a0, a1), range(b0, b1)):
                same = ra.iloc[i]["decision"] == rb.iloc[j]["decision"]
                out.append(row("same" if same else "decision", i, j))
            continue
        paired = min(a1 - a0, b1 - b0) if op == "replace" else 0
        for k in range(paired):
            out.append(row("changed", a0 + k, b0 + k))
        out.extend(row("only_a", i, None) for i in range(a0 + paired, a1))
        out.extend(row("only_b", None, j) for j in range(b0 + paired, b1))
    frame = pd.DataFrame(out, columns=TRACE_DIFF_COLUMNS)
    for col in ("index_a", "index_b"):
        frame[col] = frame[col].astype("Int64")
    for col in ("decision_a", "decision_b"):
        frame[col] = pd.Series([r[col] for r in out], dtype=object)
    return frame
