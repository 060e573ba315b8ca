"""A block against a tensor intrinsic's description: loop mapping, extents, dtypes and layout.

A tensor intrinsic's *description* is one block, e.g. ``dot_16x4_vnni``'s
``C[vi] += int32(A[vk]) * int32(B[vi, vk])`` with ``vi`` spatial (16) and ``vk`` a reduction (4).
``MultiLevelTilingWithIntrin`` can tile a block for it only when each axis of the description
has a counterpart in the block (same kind, indexing the same operands) whose extent is a
multiple of the description's, and the operands have the description's dtypes. It does not
check the layout: a block whose operand is laid out otherwise still tensorizes, and the
intrinsic's implementation then reads the wrong elements (the int8 dense with an unpacked
weight). This module names every difference, in words with the numbers.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from msviz import compat

__all__ = [
    "Axis",
    "BlockCompute",
    "Difference",
    "block_compute",
    "compare_with_intrinsic",
    "find_block",
    "index_vars",
]

#: ``IterVar.iter_type`` values: data parallel (spatial) and commutative reduction.
_KINDS = {0: "spatial", 2: "reduction"}


class Axis(NamedTuple):
    """One block iterator: its name, kind, extent and which operands it indexes."""

    name: str  # the loop's name (``k`` for the block iterator ``v_k``)
    kind: str  # "spatial" or "reduction" (or the iter type number)
    extent: int
    roles: frozenset  # operand positions it indexes: "out", "in0", "in1", ...


class BlockCompute(NamedTuple):
    """A block's computation ``out[...] (+)= f(in0[...], in1[...], ...)`` as plain data."""

    name: str
    axes: tuple[Axis, ...]
    out: tuple[str, str, tuple]  # (buffer name, dtype, shape)
    ins: tuple[tuple[str, str, tuple], ...]  # (buffer name, dtype, shape) in the order read
    offsets: dict  # (role, axis name) -> elements one step of the axis moves in that operand
    script: str


class Difference(NamedTuple):
    """One way a block differs from an intrinsic's description."""

    aspect: str  # "mapping", "extent", "dtype" or "layout"
    text: str
    blocks: bool  # whether it stops MultiLevelTilingWithIntrin (layout does not)


def find_block(stmt: Any) -> Any:
    """The first non-root SBlock under ``stmt`` whose body is a store (a compute block)."""
    return next((b for b in compat.sblocks(stmt) if b.name_hint != "root"
                 and isinstance(b.body, compat.tir.stmt.BufferStore)), None)

def _loads(expr: Any, out: list) -> list:
    """Every BufferLoad of ``expr``, in the order read."""
    if hasattr(expr, "indices") and _buffer_of(expr) is not None:  # a load (TensorLoad)
        out.append(expr)
        return out
    for name in ("a", "b", "value"):
        sub = getattr(expr, name, None)
        if sub is not None and not isinstance(sub, (int, float, str)):
            _loads(sub, out)
    for arg in getattr(expr, "args", None) or ():
        _loads(arg, out)
    return out


def _buffer_of(load: Any) -> Any:
    """The buffer a load reads (``BufferLoad.buffer``; ``TensorLoad.source`` in TVM 0.27)."""
    buf = getattr(load, "buffer", None)
    return buf if buf is not None else getattr(load, "source", None)


def _eval(expr: Any, env: dict) -> int:
    """An integer index expression at the iterator values ``env`` (unknown variables are 0)."""
    tir = compat.tir
    if isinstance(expr, tir.expr.IntImm):
        return int(expr.value)
    if isinstance(expr, tir.expr.Var):
        return int(env.get(expr.name, 0))
    if isinstance(expr, tir.expr.Cast):
        return _eval(expr.value, env)
    ops = {tir.expr.Add: lambda a, b: a + b, tir.expr.Sub: lambda a, b: a - b,
           tir.expr.Mul: lambda a, b: a * b, tir.expr.FloorDiv: lambda a, b: a // b,
           tir.expr.FloorMod: lambda a, b: a % b}
    for kind, op in ops.items():
        if isinstance(expr, kind):
            return op(_eval(expr.a, env), _eval(expr.b, env))
    raise ValueError(f"index {expr} is not affine")


def _flat(indices: Any, shape: tuple, env: dict) -> int:
    offset = 0
    for index, size in zip(indices, shape):
        offset = offset * size + _eval(index, env)
    return offset


def index_vars(expr: Any, out: set) -> set:
    tir = compat.tir
    if isinstance(expr, tir.expr.Var):
        out.add(expr.name)
    for name in ("a", "b", "value"):
        sub = getattr(expr, name, None)
        if sub is not None and not isinstance(sub, (int, float, str)):
            index_vars(sub, out)
    return out


def block_compute(block: Any) -> BlockCompute:
    """A compute block (an SBlock) as :class:`BlockCompute`."""
    store = block.body
    acc = store.buffer
    loads = [(_buffer_of(ld), ld.indices) for ld in _loads(store.value, [])]
    loads = [(buf, idx) for buf, idx in loads if not buf.same_as(acc)]
    accesses = [("out", acc, store.indices)] + [
        (f"in{n}", buf, idx) for n, (buf, idx) in enumerate(loads)]

    def shape(buf: Any) -> tuple:
        return tuple(int(d) for d in buf.shape)

    axes, offsets = [], {}
    for iv in block.iter_vars:
        var = iv.var.name
        name = var[2:] if var.startswith("v_") else var
        roles = frozenset(role for role, _, idx in accesses
                          if any(var in index_vars(i, set()) for i in idx))
        axes.append(Axis(name, _KINDS.get(int(iv.iter_type), str(int(iv.iter_type))),
                         int(iv.dom.extent), roles))
        for role, buf, idx in accesses:
            if role in roles:
                try:
                    offsets[(role, name)] = (_flat(idx, shape(buf), {var: 1})
                                             - _flat(idx, shape(buf), {}))
                except ValueError:
                    continue
    return BlockCompute(
        str(block.name_hint), tuple(axes), (acc.name, str(acc.dtype), shape(acc)),
        tuple((buf.name, str(buf.dtype), shape(buf)) for buf, _ in loads),
        offsets, block.script())


def _dtypes(c: BlockCompute) -> str:
    return " x ".join(d for _, d, _ in c.ins) + f" -> {c.out[1]}"


def _buffer(c: BlockCompute, role: str) -> str:
    return c.out[0] if role == "out" else c.ins[int(role[2:])][0]


def _match(desc: BlockCompute, block: BlockCompute) -> tuple[dict, list[Difference]]:
    """Desc axis -> block axis (the innermost of the same kind indexing the same operands)."""
    mapping, diffs = {}, []
    for d in desc.axes:
        same = [b for b in block.axes if b.kind == d.kind and b.roles == d.roles]
        if same:
            mapping[d.name] = same[-1]
            continue
        where = ", ".join(_buffer(desc, r) for r in sorted(d.roles))
        diffs.append(Difference(
            "mapping", f"the intrinsic's {d.kind} axis {d.name} (extent {d.extent}, indexing "
            f"{where}) has no counterpart in block {block.name}: no {d.kind} loop of it indexes "
            f"the same operands", True))
    return mapping, diffs


def compare_with_intrinsic(block: BlockCompute, desc: BlockCompute,
                           intrin: str) -> list[Difference]:
    """Every difference between a block and an intrinsic's description, in words.

    Parameters
    ----------
    block, desc : BlockCompute
        The workload's block and the intrinsic's description block.
    intrin : str
        The intrinsic's name, for the text.
    """
    diffs = []
    if len(block.ins) != len(desc.ins):
        diffs.append(Difference(
            "mapping", f"{intrin} multiplies {len(desc.ins)} operands, block {block.name} "
            f"reads {len(block.ins)}", True))
    elif _dtypes(block) != _dtypes(desc):
        diffs.append(Difference(
            "dtype", f"the intrinsic expects {_dtypes(desc)}, block {block.name} computes "
            f"{_dtypes(block)}", True))
    mapping, missing = _match(desc, block)
    diffs += missing
    for d in desc.axes:
        b = mapping.get(d.name)
        if b is None:
            continue
        if b.extent % d.extent:
            q, r = divmod(b.extent, d.extent)
            diffs.append(Difference(
                "extent", f"the {b.kind} loop {b.name} of block {block.name} has extent "
                f"{b.extent}, which is not a multiple of {d.extent} (the intrinsic's "
                f"{d.name}): {b.extent} = {q} x {d.extent} + {r}", True))
        for role in sorted(d.roles & b.roles):
            want, got = desc.offsets.get((role, d.name)), block.offsets.get((role, b.name))
            if want is None or got is None or want == got or len(block.ins) != len(desc.ins):
                continue
            diffs.append(Difference(
                "layout", f"in {_buffer(block, role)}, one step of {b.name} moves {got} "
                f"element(s), but the intrinsic reads its {_buffer(desc, role)} with {d.name} "
                f"{want} element(s) apart: the tensorized kernel would read the wrong "
                f"elements (lay {_buffer(block, role)} out so that each "
                f"{'x'.join(str(a.extent) for a in desc.axes if role in a.roles)} tile is "
                "contiguous)", False))
    return sorted(diffs, key=lambda d: not d.blocks)  # what stops the rule first
