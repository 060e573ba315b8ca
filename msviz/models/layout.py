"""The layout the expert graph gives a CPU's convolutions: NHWC, weights OHWI.

MetaSchedule's x86 rules vectorize a convolution's innermost axis. In NCHW that is the image's
width (7 or 14 wide in a ResNet's last stages: a poor fill of a 16-lane AVX-512 vector), in NHWC
the output channels. :func:`to_nhwc` lays every 2-D convolution out NHWC with Relax's
``ConvertLayout``; the ops between convolutions follow where Relax has a layout rule for them,
and a clip (which has none) is first made a ``maximum`` and a ``minimum``, which have.
:mod:`msviz.models.graph_passes` runs it on :data:`~msviz.models.graph_passes.EXPERT` and a CPU.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import tvm

from msviz.errors import WorkloadError

__all__ = ["CPU_CONV_LAYOUT", "const_array", "to_nhwc"]

#: The data and kernel layouts the expert graph gives 2-D convolutions on a CPU.
CPU_CONV_LAYOUT = ("NHWC", "OHWI")


def const_array(expr: Any) -> np.ndarray | None:
    """The value of a Relax constant as a NumPy array (None: ``expr`` is no constant)."""
    if isinstance(expr, tvm.ir.expr.Constant):
        value = getattr(expr, "value", None)
        return value.numpy() if isinstance(value, tvm.runtime.Tensor) else None
    return None


def _conv2d_layouts(mod: tvm.IRModule) -> list[str]:
    """The data layout of every ``relax.nn.conv2d`` call in ``mod``'s Relax functions."""
    found: list[str] = []

    def visit(expr: Any) -> None:
        if isinstance(expr, tvm.relax.Call) and getattr(expr.op, "name", "") == "relax.nn.conv2d":
            found.append(str(expr.attrs.data_layout))

    for _, func in mod.functions_items():
        if isinstance(func, tvm.relax.Function):
            tvm.relax.analysis.post_order_visit(func, visit)
    return found


@tvm.relax.expr_functor.mutator
class _ClipAsMinMax(tvm.relax.PyExprMutator):
    """``clip(x, lo, hi)`` on floats as ``minimum(maximum(x, lo), hi)`` (and ONNX's Clip, TOPI
    kernels, as those Relax ops): Relax's ``clip`` has no layout rule, so ``ConvertLayout``
    would wrap each ReLU6 (and each HardSwish's clip) in two transposes that become tasks of
    their own; the elementwise pair follows the layout and fuses into the convolution as the
    clip did."""

    def __init__(self, mod: Any) -> None:
        super().__init__(mod)
        self.mod = mod
        self.clip = tvm.ir.Op.get("relax.clip")
        self.call_tir = tvm.ir.Op.get("relax.call_tir")

    def visit_call_(self, call: Any) -> Any:
        call = super().visit_call_(call)
        if call.op == self.call_tir:
            return self._bound_kernel(call)
        if call.op != self.clip:
            return call
        dtype = str(getattr(call.args[0].ty, "dtype", ""))
        bounds = list(call.args[1:])  # the bounds as PrimExprs: FloatImm or IntImm when fixed
        if not dtype.startswith(("float", "bfloat")) or \
                not all(type(b).__name__ in ("FloatImm", "IntImm") for b in bounds):
            return call
        lo, hi = (tvm.relax.const(float(b.value), dtype) for b in bounds)
        return tvm.relax.op.minimum(tvm.relax.op.maximum(call.args[0], lo), hi)

    def _bound_kernel(self, call: Any) -> Any:
        """ONNX's importer writes a Clip as TOPI ``maximum`` / ``minimum`` kernels against a
        constant scalar (``emit_te``): those calls as Relax's ``maximum`` / ``minimum``."""
        gvar, args = call.args[0], list(getattr(call.args[1], "fields", []))
        name = str(getattr(gvar, "name_hint", ""))
        kind = re.match(r"(maximum|minimum)\d*$", name)
        bound = const_array(args[1]) if kind is not None and len(args) == 2 else None
        if bound is None or bound.shape != ():
            return call
        blocks = re.findall(r'T\.sblock\("(\w+)"\)', self.mod[gvar].script())
        if [b for b in blocks if b != "root"] != [f"T_{kind.group(1)}"]:
            return call
        op = tvm.relax.op.maximum if kind.group(1) == "maximum" else tvm.relax.op.minimum
        return op(args[0], args[1])


def _clips_as_min_max(mod: tvm.IRModule) -> tvm.IRModule:
    out = tvm.IRModule(dict(mod.functions_items()), attrs=mod.attrs)
    for gvar, func in mod.functions_items():
        if isinstance(func, tvm.relax.Function):
            out[gvar] = _ClipAsMinMax(mod).visit_expr(func)
    return out


def to_nhwc(mod: tvm.IRModule) -> tuple[tvm.IRModule, int]:
    """Every 2-D convolution laid out NHWC with OHWI weights (:data:`CPU_CONV_LAYOUT`,
    Relax's ``ConvertLayout``), the ops between them following where they can (pools, means,
    elementwise ops, concatenations, resizes; a float ``clip`` is made a ``maximum`` and a
    ``minimum`` first, which follow); the weights' transposes folded into the constants.
    Returns the module and how many convolutions changed layout. An ill-formed result is a
    :class:`WorkloadError` (tune on ``graph="expert-nchw"``)."""
    from tvm import relax

    before = _conv2d_layouts(mod)
    todo = sum(layout != CPU_CONV_LAYOUT[0] for layout in before)
    if not todo:
        return mod, 0
    try:
        out = tvm.transform.Sequential([
            relax.transform.CanonicalizeBindings(),
            relax.transform.ConvertLayout({"relax.nn.conv2d": list(CPU_CONV_LAYOUT)}),
            # ConvertLayout transposes a tensor once per use (the input of a residual block
            # twice): one transpose per tensor
            relax.transform.EliminateCommonSubexpr(),
            relax.transform.CanonicalizeBindings(),
            relax.transform.FoldConstant()])(_clips_as_min_max(mod))
        relax.analysis.well_formed(out)
    except Exception as err:  # TVM's own error types
        raise WorkloadError(
            f"msviz could not lay this model's convolutions out NHWC "
            f"({str(err).strip().splitlines()[0][:200]}); tune it on graph=\"expert-nchw\" "
            "(the expert graph in the model's own layout) and report the model") from None
    after = _conv2d_layouts(out)
    return out, todo - sum(layout != CPU_CONV_LAYOUT[0] for layout in after)
