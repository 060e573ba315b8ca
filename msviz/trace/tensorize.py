"""Where a trace tensorizes: the ``blockize`` / ``tensorize`` instructions, the
``meta_schedule.auto_tensorize`` annotations, and the tensor intrinsics they name.

A tensor intrinsic has two PrimFuncs: its *description* (the computation a block must match,
e.g. ``C[16] += A[4] * B[16, 4]``) and its *implementation* (what replaces the block, e.g. one
``vpdpbusd``). ``MultiLevelTilingWithIntrin`` blockizes the matching inner loops and annotates
the block with the intrinsic's name; the ``RewriteTensorize`` postproc then calls ``tensorize``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from msviz import compat
from msviz.trace.source import resolve_trace

__all__ = ["IntrinsicInfo", "TensorizeInfo", "TensorizeStep", "intrinsic_info", "tensorize_info"]

#: The annotation the tiling rule leaves for the postproc.
AUTO_TENSORIZE = "meta_schedule.auto_tensorize"


class TensorizeStep(NamedTuple):
    """One instruction of a trace that takes part in tensorization."""

    index: int  # position in the trace
    kind: str  # "Blockize", "Tensorize", "Annotate" or "Unannotate"
    intrin: str | None  # the intrinsic it names (None for blockize / an empty annotation)
    postproc: bool  # added by a postproc (after EnterPostproc)


class IntrinsicInfo(NamedTuple):
    """A registered tensor intrinsic, as TVMScript."""

    name: str
    description: str  # the PrimFunc a block must match
    implementation: str  # the PrimFunc that replaces it
    instructions: tuple[str, ...]  # the special instructions it compiles to (for the code view)


class TensorizeInfo(NamedTuple):
    """The tensorization in one trace."""

    steps: tuple[TensorizeStep, ...]
    intrinsics: tuple[IntrinsicInfo, ...]  # those the trace tensorizes with, in order

    @property
    def indices(self) -> frozenset[int]:
        """Trace positions of the steps (to mark rows)."""
        return frozenset(s.index for s in self.steps)


def intrinsic_info(name: str) -> IntrinsicInfo:
    """A registered tensor intrinsic's description and implementation as TVMScript.

    Raises
    ------
    KeyError
        Naming the intrinsic when none is registered under ``name``.
    """
    scripts = compat.tensor_intrin_scripts(name)
    if scripts is None:
        raise KeyError(f"no tensor intrinsic {name!r} is registered with TVM")
    return IntrinsicInfo(name, scripts[0], scripts[1], compat.INTRIN_INSTRUCTIONS.get(name, ()))


def _text(value: Any) -> str | None:
    plain = compat.to_jsonable(value)
    return plain if isinstance(plain, str) else None


def tensorize_info(obj: Any, *, with_intrinsics: bool = True) -> TensorizeInfo:
    """The tensorizing instructions of a trace and the intrinsics they use.

    Parameters
    ----------
    obj : Trace | Schedule | Trial | Replay | TuningRecord
        What to read the trace from.
    with_intrinsics : bool
        Also read each intrinsic's description and implementation (registers TVM's tensor
        intrinsics the first time: 15-30 s).
    """
    trace = resolve_trace(obj, need_mod=False).trace
    steps, names = [], []
    postproc = False
    for i, inst in enumerate(trace.insts):
        kind = str(inst.kind.name)
        postproc = postproc or kind == "EnterPostproc"
        intrin: str | None = None
        if kind == "Tensorize":
            intrin = _text(inst.attrs[0])
        elif kind in ("Annotate", "Unannotate"):
            if _text(inst.attrs[0]) != AUTO_TENSORIZE:
                continue
            intrin = _text(inst.inputs[1]) if kind == "Annotate" else None
            intrin = intrin or None
        elif kind != "Blockize":
            continue
        steps.append(TensorizeStep(i, kind, intrin, postproc))
        if intrin and intrin not in names:
            names.append(intrin)
    intrinsics = tuple(intrinsic_info(n) for n in names) if with_intrinsics else ()
    return TensorizeInfo(tuple(steps), intrinsics)
