"""A trace as rows: one row per instruction, with MetaSchedule's random-variable names.

Random variables are named as ``Trace.as_python`` names them (``b0`` for a block, ``l3`` for a
loop, ``v7`` for an integer): one counter over all outputs in trace order, prefixed by the kind
of variable. The rows and the Python lines therefore use the same names.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from msviz import compat
from msviz.trace.source import resolve_trace
from msviz.trace.vocabulary import explain

__all__ = [
    "ROW_COLUMNS",
    "decision_value",
    "is_sampling",
    "rv_names",
    "trace_python",
    "trace_rows",
]

#: The columns of :func:`trace_rows`, in order.
ROW_COLUMNS = [
    "index",
    "kind",
    "inputs",
    "attrs",
    "outputs",
    "decision",
    "sampling",
    "postproc",
    "python",
    "explanation",
]


def is_sampling(kind: str) -> bool:
    """Whether an instruction kind samples a random decision (``Sample*``)."""
    return kind.startswith("Sample")


def decision_value(decision: Any) -> Any:
    """A trace decision as plain Python: a tuple of ints for tiles, an int otherwise."""
    if decision is None:
        return None
    value = compat.to_jsonable(decision)
    if isinstance(value, list):
        return tuple(value)
    return value


def _rv_prefix(rv: Any) -> str | None:
    name = type(rv).__name__
    if name == "SBlockRV" or name == "BlockRV":
        return "b"
    if name == "LoopRV":
        return "l"
    if isinstance(rv, compat.tir.Var):
        return "v"
    return None


def rv_names(trace: Any) -> dict[Any, str]:
    """The name ``as_python`` gives each random variable a trace produces.

    Parameters
    ----------
    trace : Trace
        The trace.

    Returns
    -------
    names : dict
        Random variable (a TVM object; TVM objects hash by identity) to its name.
    """
    names: dict[Any, str] = {}
    for inst in trace.insts:
        for out in inst.outputs:
            if out is None:
                continue
            prefix = _rv_prefix(out) or "v"
            names[out] = f"{prefix}{len(names)}"
    return names


def _render_input(value: Any, names: dict[Any, str]) -> Any:
    if value is None:
        return None
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (bool, int, float)):
        return value
    if _rv_prefix(value) is not None:
        return names.get(value, str(value))
    if isinstance(value, (compat.tir.IntImm, compat.tir.FloatImm)):
        return value.value
    if isinstance(value, (list, tuple)) or type(value).__name__ in ("Array", "List"):
        return [_render_input(v, names) for v in value]
    if isinstance(value, compat.IRExpr):  # TVM 0.27: prim expressions derive from it
        return _rename_expr(value, names)
    return str(value)


def _rename_expr(expr: Any, names: dict[Any, str]) -> str:
    """An expression over random variables, written with their trace names."""
    stmt_functor = compat.stmt_functor()
    mapping = {}

    def visit(node: Any) -> None:
        if isinstance(node, compat.tir.Var) and node in names:
            mapping[node] = compat.tir.Var(names[node], node.dtype)

    stmt_functor.post_order_visit(expr, visit)
    return str(stmt_functor.substitute(expr, mapping) if mapping else expr)


def _render_attr(value: Any) -> Any:
    plain = compat.to_jsonable(value)
    if isinstance(plain, (str, int, float, bool, list, dict)) or plain is None:
        return plain
    return str(plain)


def trace_python(obj: Any, *, remove_postproc: bool = False) -> str:
    """The trace as Python, one ``sch.<primitive>(...)`` line per instruction.

    Parameters
    ----------
    obj : Trace | Schedule | Trial | Replay | TuningRecord
        What to read the trace from.
    remove_postproc : bool
        Stop at ``EnterPostproc`` (default False: show the whole trace).

    Returns
    -------
    python : str
        The lines of ``Trace.as_python``, joined by newlines, exactly as MetaSchedule prints them.
    """
    trace = resolve_trace(obj, need_mod=False).trace
    return "\n".join(str(line) for line in trace.as_python(remove_postproc=remove_postproc))


def trace_rows(obj: Any) -> pd.DataFrame:
    """A trace as a table, one row per instruction in order.

    Parameters
    ----------
    obj : Trace | Schedule | Trial | Replay | TuningRecord | MeasureCandidate
        What to read the trace from (a record's, a schedule's, a design space's, a trial's).

    Returns
    -------
    rows : pandas.DataFrame
        Columns :data:`ROW_COLUMNS`: ``index`` (position in the trace), ``kind`` (instruction
        kind), ``inputs`` (random-variable names, quoted strings, numbers), ``attrs``, ``outputs``
        (names of the random variables it defines), ``decision`` (None for an instruction that
        samples nothing), ``sampling``, ``postproc`` (True for ``EnterPostproc`` and everything
        after it: the part that postprocessors added), ``python`` (the line ``as_python`` prints)
        and ``explanation`` (a one-line description of the kind).
    """
    trace = resolve_trace(obj, need_mod=False).trace
    names = rv_names(trace)
    python = [str(line) for line in trace.as_python(remove_postproc=False)]
    rows = []
    in_postproc = False
    for i, inst in enumerate(trace.insts):
        kind = inst.kind.name
        in_postproc = in_postproc or kind == "EnterPostproc"
        rows.append(
            {
                "index": i,
                "kind": kind,
                "inputs": [_render_input(v, names) for v in inst.inputs],
                "attrs": [_render_attr(a) for a in inst.attrs],
                "outputs": [names.get(o, "_") if o is not None else "_" for o in inst.outputs],
                "decision": decision_value(trace.get_decision(inst)),
                "sampling": is_sampling(kind),
                "postproc": in_postproc,
                "python": python[i] if i < len(python) else "",
                "explanation": explain(kind),
            }
        )
    frame = pd.DataFrame(rows, columns=ROW_COLUMNS)
    frame["decision"] = pd.Series([r["decision"] for r in rows], dtype=object)
    return frame
