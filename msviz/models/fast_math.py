"""Transcendental functions as vector code on a CPU: the expert graph's ``exp``, ``erf`` and
``tanh``.

TVM lowers ``exp``, ``erf`` and ``tanh`` on LLVM targets to LLVM's intrinsics or libm calls,
which LLVM turns into one scalar call per element: a vectorized loop still calls ``expf``
sixteen times. On a 2-core Emerald Rapids, 128x3072 float32 values took 2.8 ms for ``erf``,
0.95 ms for ``exp`` and 2.1 ms for ``tanh``, against 0.03 ms for a copy; TOPI's polynomial
versions (``topi.fast_erf``, ``fast_exp``, ``fast_tanh``) took 0.06-0.08 ms, within 4e-7 of
float64's values (relative). In BERT-base this was the GELU after the first FFN matmul: its
task ran 1.9x ONNX Runtime's Gemm, every other matmul task within 1.05x.

:func:`legalize_map` is the ``customize_legalize_map`` of ``LegalizeOps`` that lowers the
float32 ``exp``, ``erf``, ``tanh``, ``sigmoid``, ``silu``, ``gelu``, ``gelu_tanh`` and
``softmax`` with those versions (the function names TVM's own lowering gives, so the task names
do not change); other dtypes keep TVM's lowering. ONNX Runtime and OpenVINO evaluate these
functions with polynomial approximations too.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import tvm
from tvm import te, tirx, topi

__all__ = ["FAST_OPS", "count_fast_ops", "legalize_map"]

#: The ops lowered with polynomial exp/erf/tanh (float32 only).
FAST_OPS = ("relax.exp", "relax.erf", "relax.tanh", "relax.sigmoid", "relax.nn.silu",
            "relax.nn.gelu", "relax.nn.gelu_tanh", "relax.nn.softmax")


def _float32(call: Any) -> bool:
    found = getattr(call.args[0], "ty", None)  # the argument's TensorType
    return str(getattr(found, "dtype", "")) == "float32"


def _te_functions() -> dict[str, tuple[str, Callable[..., Any]]]:
    """Per op: the function name (TVM's own lowering's) and the TE computation on the op's
    first argument."""

    def sigmoid(x: te.Tensor) -> te.Tensor:
        return topi.divide(tirx.const(1.0, "float32"),
                           topi.add(tirx.const(1.0, "float32"), topi.fast_exp(topi.negative(x))))

    def gelu(x: te.Tensor) -> te.Tensor:
        half = tirx.const(0.5, "float32")
        erf = topi.fast_erf(topi.multiply(x, tirx.const(0.5 ** 0.5, "float32")))
        return topi.multiply(x, topi.add(half, topi.multiply(erf, half)))

    def gelu_tanh(x: te.Tensor) -> te.Tensor:
        cube = topi.multiply(tirx.const(0.044715, "float32"),
                             topi.multiply(x, topi.multiply(x, x)))
        inner = topi.multiply(tirx.const(math.sqrt(2.0 / math.pi), "float32"), topi.add(x, cube))
        return topi.multiply(topi.multiply(tirx.const(0.5, "float32"), x),
                             topi.add(tirx.const(1.0, "float32"), topi.fast_tanh(inner)))

    return {"relax.exp": ("tir_exp", topi.fast_exp), "relax.erf": ("erf", topi.fast_erf),
            "relax.tanh": ("tir_tanh", topi.fast_tanh), "relax.sigmoid": ("tir_sigmoid", sigmoid),
            "relax.nn.silu": ("silu", lambda x: topi.multiply(x, sigmoid(x))),
            "relax.nn.gelu": ("gelu", gelu), "relax.nn.gelu_tanh": ("gelu_tanh", gelu_tanh)}


def legalize_map() -> dict[str, Callable[[Any, Any], Any]]:
    """``LegalizeOps(customize_legalize_map=...)``: each op of :data:`FAST_OPS` on float32
    lowered with TOPI's polynomial exp/erf/tanh, any other dtype with TVM's own lowering."""
    functions = _te_functions()

    def make(op_name: str) -> Callable[[Any, Any], Any]:
        default = tvm.ir.Op.get(op_name).get_attr("FLegalize")

        def legalize(bb: Any, call: Any) -> Any:
            if not _float32(call):
                return default(bb, call)
            if op_name == "relax.nn.softmax":
                return bb.call_te(topi.nn.fast_softmax, call.args[0], int(call.attrs.axis),
                                  primfunc_name_hint="softmax")
            name, compute = functions[op_name]
            return bb.call_te(compute, call.args[0], primfunc_name_hint=name)

        return legalize

    return {op: make(op) for op in FAST_OPS}


def count_fast_ops(mod: tvm.IRModule) -> int:
    """Calls in ``mod``'s Relax functions that :func:`legalize_map` lowers with the polynomial
    versions (float32 calls of :data:`FAST_OPS`)."""
    found = [0]

    def visit(expr: Any) -> None:
        if isinstance(expr, tvm.relax.Call) and getattr(expr.op, "name", "") in FAST_OPS \
                and _float32(expr):
            found[0] += 1

    for _, func in mod.functions_items():
        if isinstance(func, tvm.relax.Function):
            tvm.relax.analysis.post_order_visit(func, visit)
    return found[0]
