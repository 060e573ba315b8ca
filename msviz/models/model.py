"""A model as a workload: a Relax program lowered as ``compile_relax`` lowers it, and its tasks.

A model is tuned task by task: MetaSchedule's own extraction (``relax_integration.extract_tasks``)
turns the fused TensorIR functions of the lowered module into tasks, each with a *weight* (how many
times the model calls it). :class:`Model` holds the Relax module (weights bound as constants) and
its inputs; :meth:`Model.extract_tasks` gives the tasks for a target.

Sources: a Relax ``IRModule`` (with its params), a ``tvm.relax.frontend.nn.Module`` with an input
spec, an ``.onnx`` file (needs the ``onnx`` extra), or a name of the catalogue (:func:`catalogue`):
small real models built in Relax, no downloads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import tvm

from msviz import compat
from msviz.errors import WorkloadError
from msviz.workloads import Workload, flop_count

__all__ = [
    "MODELS",
    "Model",
    "ModelTask",
    "build",
    "catalogue",
    "from_nn",
    "from_onnx",
    "from_relax",
    "is_model",
    "load",
]

#: Ops that may stay in a lowered module (calls into TIR, the VM and packed functions).
_LOWERED_OPS = ("relax.call_tir", "relax.call_dps_packed", "relax.call_packed",
                "relax.call_builtin_with_ctx", "relax.null_value", "relax.call_pure_packed",
                "relax.call_tir_with_grad", "relax.call_tir_inplace")


class ModelTask(NamedTuple):
    """One tuning task of a model: a fused TensorIR function and how often the model calls it.

    Parameters
    ----------
    index : int
        Position in MetaSchedule's task list (the task scheduler's ``Task #``).
    name : str
        MetaSchedule's task name (the fused function's name, e.g. ``fused_matmul_add_relu``).
    weight : int
        How many times the model calls it.
    workload : msviz.workloads.Workload
        The task's IRModule (``ExtractedTask.dispatched[0]``, what ``tune_relax`` tunes) and FLOP.
    """

    index: int
    name: str
    weight: int
    workload: Any

    @property
    def flop(self) -> float:
        return self.workload.flop

    @property
    def script(self) -> str:
        """The task as TVMScript."""
        return self.workload.mod.script()


@dataclass
class Model:
    """A Relax model ready to lower, extract and tune.

    Parameters
    ----------
    name : str
        Shown in events and reports.
    mod : tvm.IRModule
        The Relax module, weights bound as constants (as ``compile_relax`` gets it).
    func_name : str
        The entry function (``"main"``, or ``"forward"`` for an ``nn.Module``).
    inputs : list of (name, shape, dtype)
        The entry function's inputs, all static.
    description : str
        One line saying what it is.
    """

    name: str
    mod: tvm.IRModule = field(repr=False)
    func_name: str = "main"
    inputs: list[tuple[str, tuple[int, ...], str]] = field(default_factory=list)
    description: str = ""
    _lowered: dict = field(default_factory=dict, repr=False, compare=False)

    def lower(self, target: Any) -> tvm.IRModule:
        """The fused module ``compile_relax`` builds before it applies the database
        (library dispatch, ``LegalizeOps``, ``AnnotateTIROpPattern``, ``FoldConstant``,
        ``FuseOps``, ``FuseTIR``), so the tasks' database keys match what it looks up."""
        target = compat.make_target(target)
        key = str(target)
        if key not in self._lowered:
            self._lowered[key] = lower(self.mod, target)
        return self._lowered[key]

    def extract_tasks(self, target: Any) -> list[ModelTask]:
        """MetaSchedule's tasks of the lowered model (``relax_integration.extract_tasks``)."""
        target = compat.make_target(target)
        lowered = self.lower(target)
        extracted = compat.ms.relax_integration.extract_tasks(lowered, target)
        tasks = []
        for task in extracted:
            mod = task.dispatched[0]
            tasks.append(ModelTask(len(tasks), str(task.task_name), int(task.weight),
                                   Workload(str(task.task_name), mod, flop_count(mod),
                                            f"task of {self.name}")))
        if not tasks:
            raise WorkloadError(f"model {self.name!r} has no TensorIR task to tune")
        return tasks

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Random inputs of the right shapes and dtypes (normal floats, small ints)."""
        rng = np.random.default_rng(seed)
        out = []
        for _, shape, dtype in self.inputs:
            if dtype.startswith(("int", "uint")):
                out.append(rng.integers(0, 8, size=shape).astype(dtype))
            else:
                out.append(rng.standard_normal(shape).astype(dtype))
        return out


def lower(mod: tvm.IRModule, target: Any) -> tvm.IRModule:
    """Lower a Relax module to fused TensorIR calls; an op with no TIR lowering raises."""
    from tvm import relax
    from tvm.relax import pipeline

    try:
        dispatch = list(pipeline.library_dispatch_passes(target))
    except (ValueError, AttributeError):
        dispatch = []
    seq = tvm.transform.Sequential([
        *dispatch, relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(), relax.transform.FuseOps(), relax.transform.FuseTIR()])
    try:
        with target, tvm.transform.PassContext(opt_level=3):
            lowered = seq(mod)
    except Exception as err:
        raise WorkloadError(f"cannot lower the model: {_first_line(err)}") from None
    left = sorted(_relax_ops(lowered) - set(_LOWERED_OPS))
    if left:
        raise WorkloadError(
            f"cannot lower operator {', '.join(left)}: no TensorIR lowering (LegalizeOps) for "
            "it on this target, so MetaSchedule cannot tune or build it")
    return lowered


def _relax_ops(mod: tvm.IRModule) -> set[str]:
    from tvm import relax

    names: set[str] = set()

    def visit(expr: Any) -> None:
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
            names.add(str(expr.op.name))

    for _, func in mod.functions_items():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return {n for n in names if not n.startswith(("relax.builtin.", "relax.memory.", "relax.vm."))}


def _first_line(err: BaseException) -> str:
    lines = [x for x in str(err).strip().splitlines() if x.strip()]
    return lines[-1] if lines else type(err).__name__


# -- sources ---------------------------------------------------------------------------------


def _entry(mod: tvm.IRModule) -> str:
    from tvm import relax

    names = [gv.name_hint for gv, f in mod.functions_items() if isinstance(f, relax.Function)]
    if "main" in names:
        return "main"
    if len(names) == 1:
        return names[0]
    raise WorkloadError(f"a model needs a Relax function named 'main' (found: {names or 'none'})")


def _inputs(mod: tvm.IRModule, func_name: str) -> list[tuple[str, tuple[int, ...], str]]:
    from tvm import relax

    out = []
    for param in mod[func_name].params:
        name = str(getattr(param, "name", None) or param.name_hint)
        ty = getattr(param, "ty", None)
        shape = getattr(ty, "shape", None)
        if not isinstance(ty, relax.TensorType) or shape is None:
            raise WorkloadError(f"model input {name!r} is not a tensor of known shape ({ty}); "
                                "msviz tunes models with static shapes")
        dims = []
        for dim in shape.values:
            if not isinstance(dim, tvm.tirx.IntImm):
                raise WorkloadError(
                    f"dynamic shapes are not supported: model input {name!r} has shape "
                    f"{[str(d) for d in shape.values]} (dimension {dim} is symbolic); give it "
                    "a fixed size")
            dims.append(int(dim))
        out.append((name, tuple(dims), str(ty.dtype)))
    return out


def from_relax(mod: tvm.IRModule, params: dict | None = None, *, name: str = "model",
               description: str = "Relax IRModule") -> Model:
    """A model from a Relax IRModule and its params (bound to the entry function as constants).

    Parameters
    ----------
    mod : tvm.IRModule
        Relax program; its entry is ``main`` (or its only Relax function).
    params : dict of str to array, optional
        Weights by parameter name (numpy arrays or ``tvm.runtime.Tensor``).
    name : str
        Shown in events and reports.
    """
    from tvm import relax

    if not isinstance(mod, tvm.IRModule):
        raise WorkloadError(f"from_relax needs a tvm.IRModule, not {type(mod).__name__}")
    func_name = _entry(mod)
    if params:
        names = {str(getattr(p, "name", None) or p.name_hint) for p in mod[func_name].params}
        unknown = sorted(set(params) - names)
        if unknown:
            raise WorkloadError(f"params {unknown} are not parameters of {func_name} "
                                f"({sorted(names)})")
        arrays = {k: v if isinstance(v, tvm.runtime.Tensor) else tvm.runtime.tensor(np.asarray(v))
                  for k, v in params.items()}
        mod = relax.transform.BindParams(func_name, arrays)(mod)
    return Model(name, mod, func_name, _inputs(mod, func_name), description)


def from_nn(module: Any, spec: dict, *, name: str | None = None, seed: int = 0) -> Model:
    """A model from a ``tvm.relax.frontend.nn.Module`` and its input spec.

    Parameters
    ----------
    module : tvm.relax.frontend.nn.Module
    spec : dict
        ``{"forward": {"x": nn.spec.Tensor((1, 64), "float32")}}`` (or just the inner dict for
        ``forward``), as ``export_tvm`` takes it.
    seed : int
        Seed of the random weights (an ``nn.Module`` carries no values).
    """
    if spec and all(not isinstance(v, dict) for v in spec.values()):
        spec = {"forward": spec}
    if len(spec) != 1:
        raise WorkloadError(f"give the spec of one method to tune, got {list(spec)}")
    try:
        mod, pspec = module.export_tvm(spec=spec)
    except Exception as err:
        raise WorkloadError(f"cannot export the nn.Module: {_first_line(err)}") from None
    rng = np.random.default_rng(seed)
    params = {}
    for pname, param in pspec:
        shape = [int(s) for s in param.shape]
        params[pname] = (0.1 * rng.standard_normal(shape)).astype(str(param.dtype))
    func_name = next(iter(spec))
    from tvm import relax

    if params:
        mod = relax.transform.BindParams(func_name, {
            k: tvm.runtime.tensor(v) for k, v in params.items()})(mod)
    label = name or type(module).__name__
    return Model(label, mod, func_name, _inputs(mod, func_name), f"nn.Module {label}")


def from_onnx(path: str | Path, *, name: str | None = None) -> Model:
    """A model from an ONNX file (``pip install msviz[onnx]``); initializers become constants."""
    try:
        import onnx
    except ImportError:
        raise WorkloadError(
            f"{path} is an ONNX model: reading it needs the onnx package; install the extra "
            "with `pip install msviz[onnx]`") from None
    from tvm.relax.frontend.onnx import from_onnx as relax_from_onnx

    path = Path(path)
    if not path.is_file():
        raise WorkloadError(f"no ONNX file at {path}")
    try:
        proto = onnx.load(str(path))
    except Exception as err:
        raise WorkloadError(f"cannot read {path} as ONNX: {_first_line(err)}") from None
    for inp in proto.graph.input:
        dims = inp.type.tensor_type.shape.dim
        symbolic = [d.dim_param or "?" for d in dims if not d.HasField("dim_value")]
        if symbolic:
            raise WorkloadError(
                f"dynamic shapes are not supported: ONNX input {inp.name!r} has symbolic "
                f"dimension(s) {symbolic}; export the model with fixed sizes")
    try:
        mod = relax_from_onnx(proto, keep_params_in_input=False)
    except Exception as err:
        raise WorkloadError(f"cannot import {path.name}: {_first_line(err)}") from None
    from tvm import relax

    mod = relax.transform.DecomposeOpsForInference()(mod)
    label = name or path.stem
    return Model(label, mod, _entry(mod), _inputs(mod, _entry(mod)), f"ONNX {path.name}")


# -- the catalogue -----------------------------------------------------------------------------


class _Graph:
    """A tiny Relax graph builder with seeded random weights as constants."""

    def __init__(self, seed: int = 0) -> None:
        from tvm import relax

        self.relax = relax
        self.bb = relax.BlockBuilder()
        self.rng = np.random.default_rng(seed)

    def const(self, shape: tuple[int, ...], scale: float = 0.1, offset: float = 0.0) -> Any:
        data = (offset + scale * self.rng.standard_normal(shape)).astype("float32")
        return self.relax.const(data)

    def emit(self, expr: Any) -> Any:
        return self.bb.emit(expr)

    def linear(self, x: Any, n_in: int, n_out: int) -> Any:
        op = self.relax.op
        return self.emit(op.add(self.emit(op.matmul(x, self.const((n_in, n_out)))),
                                self.const((n_out,))))

    def conv_bn(self, x: Any, c_in: int, c_out: int, k: int, stride: int = 1) -> Any:
        op = self.relax.op
        y = self.emit(op.nn.conv2d(x, self.const((c_out, c_in, k, k), scale=(2 / (c_in * k * k))
                                                 ** 0.5), strides=stride, padding=k // 2))
        bn = self.emit(op.nn.batch_norm(
            y, self.const((c_out,), 0.1, 1.0), self.const((c_out,)), self.const((c_out,)),
            self.const((c_out,), 0.0, 1.0), axis=1, training=False))
        return self.emit(self.relax.TupleGetItem(bn, 0))

    def relu(self, x: Any) -> Any:
        return self.emit(self.relax.op.nn.relu(x))


def _function(name: str, shape: tuple[int, ...], body: Callable[[_Graph, Any], Any],
              seed: int = 0) -> tvm.IRModule:
    g = _Graph(seed)
    x = g.relax.Var("x", g.relax.TensorType(shape, "float32"))
    with g.bb.function("main", [x]):
        with g.bb.dataflow():
            out = g.bb.emit_output(body(g, x))
        g.bb.emit_func_output(out)
    return g.bb.get()


def _mlp(g: _Graph, x: Any) -> Any:
    h = g.relu(g.linear(x, 64, 128))
    h = g.relu(g.linear(h, 128, 128))
    h = g.relu(g.linear(h, 128, 128))  # same shape as the layer before: one task, weight 2
    return g.emit(g.relax.op.nn.softmax(g.linear(h, 128, 10)))


def _basic_block(g: _Graph, x: Any, c_in: int, c_out: int, stride: int) -> Any:
    h = g.relu(g.conv_bn(x, c_in, c_out, 3, stride))
    h = g.conv_bn(h, c_out, c_out, 3)
    skip = x if stride == 1 and c_in == c_out else g.conv_bn(x, c_in, c_out, 1, stride)
    return g.relu(g.emit(g.relax.op.add(h, skip)))


def _resnet_block(g: _Graph, x: Any) -> Any:
    return _basic_block(g, x, 16, 16, 1)


def _resnet18(g: _Graph, x: Any) -> Any:
    op = g.relax.op
    h = g.relu(g.conv_bn(x, 3, 16, 3))
    c_in = 16
    for c_out, stride in ((16, 1), (32, 2), (64, 2), (128, 2)):
        h = _basic_block(g, h, c_in, c_out, stride)
        h = _basic_block(g, h, c_out, c_out, 1)
        c_in = c_out
    h = g.emit(op.reshape(g.emit(op.nn.adaptive_avg_pool2d(h, 1)), (1, 128)))
    return g.linear(h, 128, 10)


def _transformer_block(g: _Graph, x: Any, seq: int = 16, dim: int = 32, heads: int = 2) -> Any:
    op = g.relax.op
    head = dim // heads

    def norm(v: Any) -> Any:
        return g.emit(op.nn.layer_norm(v, g.const((dim,), 0.1, 1.0), g.const((dim,)), axes=[-1]))

    def split(v: Any) -> Any:  # (seq, dim) -> (heads, seq, head)
        return g.emit(op.permute_dims(g.emit(op.reshape(v, (seq, heads, head))), [1, 0, 2]))

    h = norm(x)
    q, k, v = (split(g.linear(h, dim, dim)) for _ in range(3))
    scores = g.emit(op.multiply(g.emit(op.matmul(q, g.emit(op.permute_dims(k, [0, 2, 1])))),
                                g.relax.const(head ** -0.5, "float32")))
    att = g.emit(op.matmul(g.emit(op.nn.softmax(scores, axis=-1)), v))
    att = g.emit(op.reshape(g.emit(op.permute_dims(att, [1, 0, 2])), (seq, dim)))
    x = g.emit(op.add(x, g.linear(att, dim, dim)))
    h = g.emit(op.nn.gelu(g.linear(norm(x), dim, 2 * dim)))
    return g.emit(op.add(x, g.linear(h, 2 * dim, dim)))


#: Catalogue models: name -> (input shape, body, description).
MODELS: dict[str, tuple[tuple[int, ...], Callable[[_Graph, Any], Any], str]] = {
    "mlp": ((4, 64), _mlp, "MLP 64-128-128-128-10 with softmax, batch 4"),
    "resnet-block": ((1, 16, 16, 16), _resnet_block,
                     "ResNet basic block: conv-bn-relu, conv-bn, residual add, relu "
                     "(16 ch, 16x16)"),
    "transformer-block": ((16, 32), _transformer_block,
                          "transformer block: layer norm, 2-head attention, MLP (seq 16, dim 32)"),
    "resnet18": ((1, 3, 32, 32), _resnet18,
                 "ResNet-18-shaped network (8 basic blocks, 16-128 ch) at 32x32 input"),
}


def catalogue() -> dict[str, str]:
    """Names of the catalogue models with what each one is."""
    return {name: desc for name, (_, _, desc) in MODELS.items()}


def build(name: str, *, seed: int = 0) -> Model:
    """A catalogue model by name (see :func:`catalogue`); weights random with ``seed``."""
    key = name.strip().lower() if isinstance(name, str) else name
    if key not in MODELS:
        raise WorkloadError(f"unknown model {name!r}; catalogue models: {', '.join(MODELS)}")
    shape, body, desc = MODELS[key]
    mod = _function(key, shape, body, seed)
    return Model(key, mod, "main", _inputs(mod, "main"), desc)


def is_model(obj: Any) -> bool:
    """True for what :func:`load` reads as a model (not a single-PrimFunc workload)."""
    from tvm import relax

    if isinstance(obj, Model):
        return True
    if isinstance(obj, (str, Path)):
        text = str(obj).strip()
        return text.lower() in MODELS or text.lower().endswith(".onnx")
    if isinstance(obj, tvm.IRModule):
        return any(isinstance(f, relax.Function) for _, f in obj.functions_items())
    if isinstance(obj, tuple) and obj:
        return is_model(obj[0])
    return type(obj).__module__.startswith("tvm.relax.frontend.nn") or _is_nn_module(obj)


def _is_nn_module(obj: Any) -> bool:
    try:
        from tvm.relax.frontend import nn
    except ImportError:  # pragma: no cover
        return False
    return isinstance(obj, nn.Module)


def load(obj: Any, *, params: dict | None = None, spec: dict | None = None,
         name: str | None = None) -> Model:
    """Turn anything a user may call a model into a :class:`Model`.

    Parameters
    ----------
    obj : Model | str | Path | tvm.IRModule | nn.Module | tuple
        A catalogue name, an ``.onnx`` path, a Relax IRModule (``params`` alongside, or as
        ``(mod, params)``), or an ``nn.Module`` (``spec`` alongside, or ``(module, spec)``).
    """
    if isinstance(obj, Model):
        return obj
    if isinstance(obj, tuple) and len(obj) == 2:
        first, second = obj
        if isinstance(first, tvm.IRModule):
            return from_relax(first, second, name=name or "model")
        return from_nn(first, second, name=name)
    if isinstance(obj, (str, Path)):
        text = str(obj).strip()
        if text.lower().endswith(".onnx"):
            return from_onnx(text, name=name)
        return build(text)
    if isinstance(obj, tvm.IRModule):
        return from_relax(obj, params, name=name or "model")
    if _is_nn_module(obj):
        if spec is None:
            raise WorkloadError("an nn.Module needs its input spec: pass (module, spec), e.g. "
                                "(net, {'x': nn.spec.Tensor((1, 64), 'float32')})")
        return from_nn(obj, spec, name=name)
    raise WorkloadError(f"cannot read a model from {type(obj).__name__}")
