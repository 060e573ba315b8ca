"""A catalogue model as an ONNX file with the same weights, for other runtimes to run.

:class:`OnnxGraph` is a stand-in builder for :class:`~msviz.models.graph.Graph`: it draws each
weight from the seeded RNG in the same order (it keeps the graph's ``const``,
``dense_weights`` and ``norm_weights``) and emits ONNX nodes (opset 17) where the graph emits
Relax ops, each weight an initializer. :func:`export_onnx` runs a catalogue recipe's body on it,
so ONNX Runtime or PyTorch run exactly the network (and the weights) msviz tunes. Needs the
``onnx`` package (``pip install msviz[onnx]``).
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from msviz.errors import WorkloadError
from msviz.models.graph import Graph
from msviz.models.zoo import recipe

__all__ = ["OPSET", "OnnxGraph", "export_onnx", "onnx_model"]

#: The ONNX opset of the export (LayerNormalization is in opset 17).
OPSET = 17


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise WorkloadError("exporting a model to ONNX needs the onnx package; install the "
                            "extra with `pip install msviz[onnx]`") from None
    return onnx


class OnnxGraph(Graph):
    """:class:`Graph`'s weights, emitted as ONNX nodes and initializers (see the module doc).

    A value is the name of its ONNX tensor. Parameters are :class:`Graph`'s.
    """

    def __init__(self, seed: int = 0, fold_bn: bool = False) -> None:
        self.onnx = _onnx()
        self.fold_bn = fold_bn
        self.rng = np.random.default_rng(seed)
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        nn = SimpleNamespace(softmax=self._softmax, relu=lambda x: self.node("Relu", x),
                             gelu=self._gelu)
        self.op = SimpleNamespace(
            add=lambda a, b: self.node("Add", a, b),
            multiply=lambda a, b: self.node("Mul", a, b),
            matmul=lambda a, b: self.node("MatMul", a, b),
            permute_dims=lambda x, axes: self.node("Transpose", x, perm=list(axes)),
            reshape=lambda x, shape: self.node("Reshape", x, self.array(np.array(shape, "int64"))),
            clip=lambda x, lo, hi: self.node("Clip", x, self.scalar(lo), self.scalar(hi)),
            nn=nn)

    # -- values --------------------------------------------------------------------------------

    def node(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        """Emit one ONNX node; returns the name of its (one) output."""
        out = f"t{len(self.nodes)}"
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def array(self, data: np.ndarray) -> str:
        """An initializer holding ``data``; returns its name."""
        name = f"w{len(self.initializers)}"
        self.initializers.append(self.onnx.numpy_helper.from_array(data, name))
        return name

    def const(self, shape: tuple[int, ...], scale: float = 0.1, offset: float = 0.0) -> Any:
        # the same draw as Graph.const
        return self.array((offset + scale * self.rng.standard_normal(shape)).astype("float32"))

    def scalar(self, value: float) -> Any:
        return self.array(np.array(value, "float32"))

    def emit(self, expr: Any) -> Any:
        return expr

    def shape(self, x: Any) -> tuple[int, ...]:
        if x in self.shapes:
            return self.shapes[x]
        # a layer's output: ONNX's shape inference over the graph so far (the recipes ask only
        # for their input's; this keeps the builder correct if one asks for more)
        graph = self._graph(list(self.shapes), [x])
        inferred = self.onnx.shape_inference.infer_shapes(self._model(graph))
        for info in (*inferred.graph.value_info, *inferred.graph.output):
            if info.name == x:
                return tuple(int(d.dim_value) for d in info.type.tensor_type.shape.dim)
        raise WorkloadError(f"ONNX shape inference gives no shape for {x}")

    # -- layers --------------------------------------------------------------------------------

    def _softmax(self, x: str, axis: int = -1) -> str:
        return self.node("Softmax", x, axis=axis)

    def _gelu(self, x: str) -> str:
        """``0.5 x (1 + erf(x / sqrt 2))``, the exact GELU Relax's ``nn.gelu`` computes."""
        erf = self.node("Erf", self.node("Mul", x, self.scalar(2 ** -0.5)))
        return self.node("Mul", self.node("Mul", x, self.scalar(0.5)),
                         self.node("Add", erf, self.scalar(1.0)))

    def layer_norm(self, x: Any, weights: tuple[Any, Any]) -> Any:
        gamma, beta = weights
        return self.node("LayerNormalization", x, gamma, beta, axis=-1, epsilon=1e-5)

    def conv_bn(self, x: Any, c_in: int, c_out: int, k: int, stride: int = 1,
                groups: int = 1) -> Any:
        fan_in = c_in // groups * k * k
        weight = self.const((c_out, c_in // groups, k, k), scale=(2 / fan_in) ** 0.5)
        pad = k // 2
        y = self.node("Conv", x, weight, kernel_shape=[k, k], strides=[stride, stride],
                      pads=[pad] * 4, group=groups)
        if self.fold_bn:
            return self.node("Add", y, self.const((1, c_out, 1, 1)))
        gamma, beta = self.const((c_out,), 0.1, 1.0), self.const((c_out,))
        mean, var = self.const((c_out,)), self.const((c_out,), 0.0, 1.0)
        return self.node("BatchNormalization", y, gamma, beta, mean, var, epsilon=1e-5)

    def relu(self, x: Any) -> Any:
        return self.node("Relu", x)

    def relu6(self, x: Any) -> Any:
        return self.op.clip(x, 0.0, 6.0)

    def max_pool(self, x: Any, k: int = 3, stride: int = 2) -> Any:
        return self.node("MaxPool", x, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[k // 2] * 4)

    def pool_flatten(self, x: Any, channels: int) -> Any:
        return self.op.reshape(self.node("GlobalAveragePool", x), (1, channels))

    # -- the model -----------------------------------------------------------------------------

    def _graph(self, inputs: list[str], outputs: list[str], name: str = "msviz") -> Any:
        helper, f32 = self.onnx.helper, self.onnx.TensorProto.FLOAT
        return helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(i, f32, list(self.shapes[i])) for i in inputs],
            [helper.make_tensor_value_info(o, f32, None) for o in outputs],
            initializer=self.initializers)

    def _model(self, graph: Any) -> Any:
        helper = self.onnx.helper
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                 producer_name="msviz")


def onnx_model(name: str, *, seed: int = 0, input_shape: tuple[int, ...] | None = None,
               batch_norm: bool = False) -> Any:
    """Catalogue model ``name`` as an in-memory ``onnx.ModelProto``: input ``x``, output ``y``,
    the weights of ``seed`` (those of ``models.build(name, seed=seed)``), checked by
    ``onnx.checker``. ``input_shape`` as in :func:`~msviz.models.zoo.build`. ``batch_norm``:
    every convolution followed by a ``BatchNormalization`` node, as a PyTorch export writes a
    CNN, also where the catalogue folds them (other weights than ``models.build``'s then)."""
    key, found, shape = recipe(name, input_shape)
    g = OnnxGraph(seed, found.fold_bn and not batch_norm)
    g.shapes["x"] = shape
    out = found.body(g, "x")
    g.nodes.append(g.onnx.helper.make_node("Identity", [out], ["y"]))
    model = g._model(g._graph(["x"], ["y"], name=key))
    model = g.onnx.shape_inference.infer_shapes(model)  # the output's shape, for readers
    g.onnx.checker.check_model(model)
    return model


def export_onnx(name: str, path: str | Path, *, seed: int = 0,
                input_shape: tuple[int, ...] | None = None, overwrite: bool = False,
                batch_norm: bool = False) -> Path:
    """Write catalogue model ``name`` to the ONNX file ``path`` with the weights msviz builds.

    Parameters
    ----------
    name : str
        A catalogue model (see :func:`~msviz.models.zoo.catalogue`).
    path : str or Path
        Where to write the ``.onnx`` file.
    seed : int
        Seed of the random weights, as in :func:`~msviz.models.zoo.build`.
    input_shape : tuple of int, optional
        The input size, as in :func:`~msviz.models.zoo.build`.
    overwrite : bool
        Replace ``path`` if it is a file already (else that is refused, naming it).
    batch_norm : bool
        Batch norms as ``BatchNormalization`` nodes (see :func:`onnx_model`).

    Returns
    -------
    path : Path
        The file written: one float32 input ``x``, one output ``y``, opset :data:`OPSET`.

    Examples
    --------
    >>> export_onnx("resnet50", "resnet50.onnx", input_shape=(1, 3, 224, 224))  # doctest: +SKIP
    """
    path = Path(path)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0 (the weights' seed), got {seed!r}")
    if path.is_dir() or path.is_symlink() or (path.exists() and not path.is_file()):
        raise WorkloadError(f"cannot write the ONNX file to {path}: it is a folder, a link or "
                            "not a regular file; name a new .onnx file")
    if path.exists() and not overwrite:
        raise WorkloadError(f"{path} exists: pass overwrite=True to replace it, or name "
                            "another file")
    if not path.parent.is_dir():
        raise WorkloadError(f"cannot write {path}: its folder {path.parent} does not exist")
    model = onnx_model(name, seed=seed, input_shape=input_shape, batch_norm=batch_norm)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:  # whole or not at all: a reader never sees half a model
        _onnx().save(model, str(tmp))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
