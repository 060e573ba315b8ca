"""The graph an expert gives MetaSchedule, and the passes that make it.

A model exported the way PyTorch exports it (Conv, BatchNormalization, Relu, Add) reaches TVM with
each batch norm as four elementwise ops after its convolution (ONNX's frontend decomposes it), so
stock lowering makes a task ``fused_conv2d_subtract_divide_multiply_add`` per convolution and
leaves every ReLU after a batch norm a task of its own: one more pass over memory per layer.
ONNX Runtime and OpenVINO fold the batch norms into the convolutions' weights and fuse the
activations. :data:`EXPERT` does the same before MetaSchedule sees the model:

* :func:`fold_scale_shift` folds every per-channel scale and shift after a convolution with
  constant weights (a batch norm, decomposed or not, a bias) into its weights and one bias add;
* on a CPU the 2-D convolutions are laid out NHWC, weights OHWI (``ConvertLayout``; the
  weights' transposes fold into the constants): the output channels are then the innermost
  axis, which MetaSchedule's x86 rules vectorize at full width, where NCHW gives them only
  the image's width (a 7x7 or 14x14 map fills a 16-lane vector badly). One transpose task at
  each end of the model (and around any op that keeps NCHW) is what it costs;
  :data:`EXPERT_NCHW` leaves the layout alone;
* constants are folded, and ``FuseOps`` then fuses the bias, residual add and activation into
  the convolution's task;
* on a CPU, ``exp``, ``erf``, ``tanh`` and what uses them (GELU, softmax, sigmoid, SiLU) on
  float32 are lowered with polynomial versions that vectorize (:mod:`msviz.models.fast_math`):
  TVM's own lowering calls libm once per element (GELU over 128x3072 values: 2.8 ms, the
  polynomial 0.06 ms); :data:`EXPERT_EXACT` keeps TVM's;
* on a CPU the weights are prepacked: the tasks' weights are marked layout-free
  (:func:`mark_layout_free`), so MetaSchedule's ``RewriteLayout`` postproc tunes the
  weight layout with each kernel, and the build folds the layout change into the constants
  (``SplitLayoutRewritePreproc`` then ``FoldConstant``): it happens once, at build time.

:data:`STOCK` is stock MetaSchedule's graph (``compile_relax``'s own lowering), for comparisons.
:func:`lower` and :func:`finish` are the two halves around ``MetaScheduleApplyDatabase``; the
tasks are extracted from what :func:`lower` returns, so the database keys match the build's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import tvm

from msviz.errors import WorkloadError
from msviz.models import fast_math
from msviz.models.layout import CPU_CONV_LAYOUT, to_nhwc
from msviz.models.layout import const_array as _const_array

__all__ = ["CPU_CONV_LAYOUT", "EXPERT", "EXPERT_EXACT", "EXPERT_NCHW", "GRAPHS", "STOCK",
           "GraphReport", "check_graph", "finish", "fold_scale_shift", "lower",
           "mark_layout_free", "prepacks", "to_nhwc"]

EXPERT = "expert"
#: The expert graph without the NHWC layout (what ``"expert"`` was before it had it: work dirs
#: tuned then are opened and built on it); it keeps TVM's own exp/erf/tanh, as "expert" did then.
EXPERT_NCHW = "expert-nchw"
#: The expert graph with TVM's own exp/erf/tanh (libm's) instead of the polynomial ones (what
#: ``"expert"`` was before it had them: work dirs tuned then are opened and built on it).
EXPERT_EXACT = "expert-exact"
STOCK = "stock"
#: The graphs a model can be tuned on: msviz's default, it without the layout change, it with
#: libm's exp/erf/tanh, and stock MetaSchedule's.
GRAPHS = (EXPERT, EXPERT_NCHW, EXPERT_EXACT, STOCK)

#: Ops that scale or shift a convolution's output per channel, when the other side is constant.
_SCALE_SHIFT = ("relax.add", "relax.subtract", "relax.multiply", "relax.divide")


def check_graph(graph: Any) -> str:
    """``graph`` if it is one of :data:`GRAPHS`, else a ``ValueError`` naming them."""
    if graph not in GRAPHS:
        raise ValueError(f"graph must be one of {', '.join(map(repr, GRAPHS))} (msviz's expert "
                         f"graph, it without the NHWC layout, it with libm's exp/erf/tanh, or "
                         f"stock MetaSchedule's), got {graph!r}")
    return graph


@dataclass(frozen=True)
class GraphReport:
    """What the graph passes did to a model (no pass on :data:`STOCK`).

    Parameters
    ----------
    graph : str
        One of :data:`GRAPHS`.
    folded_convs : int
        Convolutions whose per-channel scale and shift (a batch norm) went into their weights.
    folded_ops : int
        The elementwise ops those folds removed.
    nhwc_convs : int
        2-D convolutions the graph laid out NHWC (:data:`CPU_CONV_LAYOUT`; 0 off CPU and on
        :data:`EXPERT_NCHW`).
    prepacked_tasks : int
        Tasks whose weights the tuned schedule lays out at build time (0 off CPU).
    fast_math_ops : int
        Ops lowered with the polynomial exp/erf/tanh (:mod:`msviz.models.fast_math`; 0 off
        CPU, on :data:`EXPERT_NCHW` and on :data:`EXPERT_EXACT`).
    tasks, calls : int or None
        Tuning tasks on this graph, and the kernel calls a run makes (the tasks' weights).
    stock_tasks, stock_calls : int or None
        The same on stock MetaSchedule's graph.
    """

    graph: str
    folded_convs: int = 0
    folded_ops: int = 0
    nhwc_convs: int = 0
    prepacked_tasks: int = 0
    fast_math_ops: int = 0
    tasks: int | None = None
    calls: int | None = None
    stock_tasks: int | None = None
    stock_calls: int | None = None

    def summary(self) -> str:
        """One line a user reads in the task table and the report, e.g. "batch norm folded
        into 20 convolutions; 20 convolutions laid out NHWC; 22 tasks on stock's graph -> 19,
        40 kernel calls a run -> 24; weights prepacked for 16 tasks"."""
        if self.graph == STOCK:
            return "stock MetaSchedule's graph (graph='stock'): no graph pass of msviz's"
        parts = [f"batch norm folded into {_n(self.folded_convs, 'convolution')}"
                 if self.folded_convs else "no batch norm to fold"]
        if self.nhwc_convs:
            parts.append(f"{_n(self.nhwc_convs, 'convolution')} laid out NHWC")
        if None not in (self.tasks, self.calls, self.stock_tasks, self.stock_calls):
            parts.append(f"{_n(self.stock_tasks, 'task')} on stock's graph -> {self.tasks}, "
                         f"{_n(self.stock_calls, 'kernel call')} a run -> {self.calls}")
        parts.append(f"weights prepacked for {_n(self.prepacked_tasks, 'task')}"
                     if self.prepacked_tasks else "weights not prepacked")
        if self.fast_math_ops:
            parts.append(f"exp/erf/tanh vectorized in {_n(self.fast_math_ops, 'op')}")
        return "; ".join(parts)

    def info(self) -> dict[str, Any]:
        """The report as plain values (the sidecar's ``graph`` line, the views)."""
        return {"graph": self.graph, "folded_convs": self.folded_convs,
                "folded_ops": self.folded_ops, "nhwc_convs": self.nhwc_convs,
                "prepacked_tasks": self.prepacked_tasks, "fast_math_ops": self.fast_math_ops,
                "tasks": self.tasks, "calls": self.calls, "stock_tasks": self.stock_tasks,
                "stock_calls": self.stock_calls, "summary": self.summary()}


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


def _per_channel(value: np.ndarray, channels: int) -> np.ndarray | None:
    """``value`` as a length-``channels`` vector if it broadcasts per output channel of an NCHW
    tensor (a scalar, ``(C,)`` is not: it would broadcast along the width), else None."""
    if value.ndim == 0 or value.size == 1:
        return np.full(channels, value.reshape(()).item(), dtype=value.dtype)
    if value.ndim == 4 and value.shape[0] == 1 and value.shape[2:] == (1, 1) and \
            value.shape[1] == channels:
        return value.reshape(channels)
    if value.ndim == 3 and value.shape == (channels, 1, 1):
        return value.reshape(channels)
    return None


def _shape(expr: Any) -> tuple[int, ...] | None:
    try:
        return tuple(int(d) for d in expr.ty.shape.values)
    except (AttributeError, TypeError, ValueError):
        return None


def _conv_with_const_weight(call: Any) -> bool:
    if not isinstance(call, tvm.relax.Call) or getattr(call.op, "name", "") != "relax.nn.conv2d":
        return False
    attrs = call.attrs
    return (_const_array(call.args[1]) is not None and str(attrs.data_layout) == "NCHW"
            and str(attrs.kernel_layout) == "OIHW" and str(attrs.out_layout) == "NCHW"
            and str(call.args[1].value.dtype) == "float32")


class _Chain:
    """A convolution and the per-channel scale and shift after it: ``scale * conv + shift``."""

    def __init__(self, conv: Any) -> None:
        self.conv = conv
        self.weight = _const_array(conv.args[1]).astype("float64")
        channels = self.weight.shape[0]
        self.scale = np.ones(channels)
        self.shift = np.zeros(channels)
        self.ops = 0
        self.scaled = False  # a multiply or divide: a batch norm, not a bias alone

    def apply(self, op: str, value: np.ndarray, conv_first: bool) -> bool:
        vec = _per_channel(value, self.weight.shape[0])
        if vec is None:
            return False
        vec = vec.astype("float64")
        if op == "relax.add":
            self.shift = self.shift + vec
        elif op == "relax.subtract":
            if not conv_first:  # c - y: scale and shift change sign
                self.scale, self.shift = -self.scale, vec - self.shift
            else:
                self.shift = self.shift - vec
        elif op == "relax.multiply":
            self.scale, self.shift = self.scale * vec, self.shift * vec
            self.scaled = True
        elif op == "relax.divide":
            if not conv_first or not np.all(vec != 0):
                return False
            self.scale, self.shift = self.scale / vec, self.shift / vec
            self.scaled = True
        else:
            return False
        self.ops += 1
        return True


def _users(block: Any) -> dict[Any, int]:
    counts: dict[Any, int] = {}

    def count(expr: Any) -> None:
        if isinstance(expr, tvm.relax.Var):
            counts[expr] = counts.get(expr, 0) + 1

    for binding in block.bindings:
        tvm.relax.analysis.post_order_visit(binding.value, count)
    return counts


def _plan(block: Any, outputs: set) -> tuple[dict, set]:
    """Chains of one dataflow block with a scale (a batch norm): ``{end var: chain}`` and the
    vars folded away (the convolution's and the ops' before the end). A bias alone stays as
    it is: it fuses as an epilogue already."""
    users = _users(block)
    open_chain: dict[Any, _Chain] = {}  # var -> the chain it ends now
    members: dict[int, list] = {}  # id(chain) -> its vars, in order
    for binding in block.bindings:
        var, value = binding.var, binding.value
        if _conv_with_const_weight(value):
            open_chain[var] = chain = _Chain(value)
            members[id(chain)] = [var]
            continue
        if not isinstance(value, tvm.relax.Call) or getattr(value.op, "name", "") \
                not in _SCALE_SHIFT or len(value.args) != 2:
            continue
        lhs, rhs = value.args
        for source, other, first in ((lhs, rhs, True), (rhs, lhs, False)):
            chain = open_chain.get(source)
            const = _const_array(other)
            if chain is None or const is None or users.get(source, 0) != 1 or \
                    source in outputs or _shape(value) is None or _shape(value) != _shape(source):
                continue
            if chain.apply(value.op.name, const, first):
                del open_chain[source]
                open_chain[var] = chain
                members[id(chain)].append(var)
                break
    chains, dropped = {}, set()
    for end, chain in open_chain.items():
        if chain.scaled:
            chains[end] = chain
            dropped.update(members[id(chain)][:-1])
    return chains, dropped


@tvm.relax.expr_functor.mutator
class _Folder(tvm.relax.PyExprMutator):
    """Rewrites each planned chain's end as ``conv2d(x, scale * W) + shift``."""

    def __init__(self, mod: Any) -> None:
        super().__init__(mod)
        self.chains: dict = {}
        self.dropped: set = set()
        self.folded = 0
        self.ops = 0

    def visit_dataflow_block_(self, block: Any) -> Any:
        outputs = {b.var for b in block.bindings if not isinstance(b.var, tvm.relax.DataflowVar)}
        chains, dropped = _plan(block, outputs)
        self.chains.update(chains)
        self.dropped |= dropped
        return super().visit_dataflow_block_(block)

    def visit_var_binding_(self, binding: Any) -> None:
        var = binding.var
        if var in self.dropped:
            return
        chain = self.chains.get(var)
        if chain is None:
            super().visit_var_binding_(binding)
            return
        relax = tvm.relax
        weight = (chain.weight * chain.scale.reshape(-1, 1, 1, 1)).astype("float32")
        conv = chain.conv
        data = self.visit_expr(conv.args[0])
        new_conv = self.builder_.emit(relax.Call(conv.op, [data, relax.const(weight)],
                                                 conv.attrs))
        shift = relax.const(chain.shift.astype("float32").reshape(1, -1, 1, 1))
        add = relax.op.add(new_conv, shift)
        # a chain that ends at an output of its dataflow block stays an output of it
        out = self.builder_.emit(add) if isinstance(var, relax.DataflowVar) else \
            self.builder_.emit_output(add)
        self.set_var_remap(var, out)
        self.folded += 1
        self.ops += chain.ops


def fold_scale_shift(mod: tvm.IRModule) -> tuple[tvm.IRModule, int, int]:
    """Fold each convolution's per-channel scale and shift into its weights and a bias.

    A convolution (NCHW, OIHW, float32 weights bound as a constant) followed by adds,
    subtracts, multiplies and divides by per-channel constants, each intermediate used once,
    becomes ``conv2d(x, W * scale) + shift``. Run ``FoldConstant`` first, so a batch norm's
    ``sqrt(var + eps)`` is a constant.

    Returns
    -------
    mod, convs, ops : IRModule, int, int
        The module, how many convolutions took a fold, how many ops went.
    """
    folder = _Folder(mod)
    out = tvm.IRModule(dict(mod.functions_items()), attrs=mod.attrs)
    for gvar, func in mod.functions_items():
        if isinstance(func, tvm.relax.Function):
            out[gvar] = folder.visit_expr(func)
    if folder.folded:
        try:
            tvm.relax.analysis.well_formed(out)  # raises on the first violation
        except Exception as err:
            raise WorkloadError(
                f"msviz's batch-norm fold made an ill-formed module ({folder.folded} "
                f"convolutions folded: {str(err).splitlines()[0][:200]}); tune this model on "
                "stock's graph (graph=\"stock\") and report the model") from None
    return out, folder.folded, folder.ops


def _is_cpu(target: Any) -> bool:
    return target.kind.name in ("llvm", "c")


def lower(mod: tvm.IRModule, target: Any, graph: str = EXPERT) -> tuple[tvm.IRModule,
                                                                          GraphReport]:
    """The fused module MetaSchedule tunes and the build applies its database to.

    :data:`STOCK`: ``compile_relax``'s own lowering (library dispatch, ``LegalizeOps``,
    ``AnnotateTIROpPattern``, ``FoldConstant``, ``FuseOps``, ``FuseTIR``). :data:`EXPERT`:
    ``DecomposeOpsForInference`` and ``FoldConstant`` first, :func:`fold_scale_shift`, on a CPU
    :func:`to_nhwc`, then the same lowering (on a CPU with the polynomial exp/erf/tanh of
    :mod:`msviz.models.fast_math`), and on a CPU :func:`mark_layout_free` (see the module doc).
    :data:`EXPERT_NCHW`: the same without :func:`to_nhwc` and the polynomials;
    :data:`EXPERT_EXACT`: without the polynomials.
    """
    from tvm import relax
    from tvm.relax import pipeline

    check_graph(graph)
    try:
        dispatch = list(pipeline.library_dispatch_passes(target))
    except (ValueError, AttributeError):
        dispatch = []
    report = GraphReport(graph)
    expert = graph in (EXPERT, EXPERT_NCHW, EXPERT_EXACT)
    fast = graph == EXPERT and _is_cpu(target)
    with target, tvm.transform.PassContext(opt_level=3):
        if expert:
            mod = tvm.transform.Sequential([
                relax.transform.DecomposeOpsForInference(),
                relax.transform.CanonicalizeBindings(),
                relax.transform.FoldConstant()])(mod)
            mod, convs, ops = fold_scale_shift(mod)
            nhwc = 0
            if graph in (EXPERT, EXPERT_EXACT) and _is_cpu(target):
                mod, nhwc = to_nhwc(mod)
        fast_ops = fast_math.count_fast_ops(mod) if fast else 0
        legalize = relax.transform.LegalizeOps(
            customize_legalize_map=fast_math.legalize_map() if fast else None)
        mod = tvm.transform.Sequential([
            *dispatch, legalize, relax.transform.AnnotateTIROpPattern(),
            relax.transform.FoldConstant(), relax.transform.FuseOps(),
            relax.transform.FuseTIR()])(mod)
        if expert:
            # a reshape is a view in the build (RewriteDataflowReshape): no kernel to tune
            mod = relax.transform.RewriteDataflowReshape()(mod)
            prepack = _is_cpu(target)
            if prepack:
                mod = mark_layout_free(mod)
            report = GraphReport(graph, convs, ops, nhwc, prepacks(mod) if prepack else 0,
                                 fast_ops)
    return mod, report


def mark_layout_free(mod: tvm.IRModule) -> tvm.IRModule:
    """Mark the weights of each TIR function layout-free (``layout_free_buffers``): the
    arguments that are constants at every call. As ``AttachAttrLayoutFreeBuffers`` does, but in
    place: that pass renames the functions it copies (``softmax`` -> ``softmax1``), and the
    task names are what users read."""
    const_args: dict[Any, set[int]] = {}

    def visit(expr: Any) -> None:
        if not isinstance(expr, tvm.relax.Call) or \
                getattr(expr.op, "name", "") != "relax.call_tir":
            return
        callee, args = expr.args[0], expr.args[1]
        fields = list(getattr(args, "fields", []))
        consts = {i for i, arg in enumerate(fields) if _const_array(arg) is not None}
        const_args[callee] = const_args.get(callee, consts) & consts

    for _, func in mod.functions_items():
        if isinstance(func, tvm.relax.Function):
            tvm.relax.analysis.post_order_visit(func, visit)
    out = tvm.IRModule(dict(mod.functions_items()), attrs=mod.attrs)
    for gvar, consts in const_args.items():
        func = mod[gvar]
        if consts and type(func).__name__ == "PrimFunc":
            out[gvar] = func.with_attr("layout_free_buffers", sorted(consts))
    return out


def prepacks(mod: tvm.IRModule) -> int:
    """How many TIR functions of ``mod`` have weights marked layout-free."""
    count = 0
    for _, func in mod.functions_items():
        attrs = getattr(func, "attrs", None)
        if type(func).__name__ == "PrimFunc" and attrs is not None and \
                "layout_free_buffers" in attrs and len(attrs["layout_free_buffers"]):
            count += 1
    return count


def finish(mod: tvm.IRModule, target: Any, graph: str = EXPERT) -> tvm.IRModule:
    """After ``MetaScheduleApplyDatabase``: on the expert graphs and a CPU, split each tuned
    kernel's weight layout change into its own function and fold it into the constants
    (``SplitLayoutRewritePreproc``, ``FoldConstant``), so the weights are laid out once, when
    the model is built. Weights passed as parameters (not bound) are lifted into a
    ``<func>_transform_params`` function (``LiftTransformParams``)."""
    from tvm import relax

    if graph not in (EXPERT, EXPERT_NCHW, EXPERT_EXACT) or not _is_cpu(target):
        return mod
    try:
        with target, tvm.transform.PassContext(opt_level=3):
            return tvm.transform.Sequential([
                relax.transform.SplitLayoutRewritePreproc(),
                relax.transform.LiftTransformParams(),
                relax.transform.FoldConstant()])(mod)
    except Exception as err:  # TVM's own error types
        raise WorkloadError(f"cannot prepack the tuned weights: {str(err).strip()[:200]}") \
            from None
