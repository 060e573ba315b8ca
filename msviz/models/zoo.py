"""The model catalogue: small real networks built in Relax with random weights, no downloads.

Each entry of :data:`MODELS` is a body that builds the network on a
:class:`~msviz.models.graph.Graph`; :func:`build` makes it a :class:`~msviz.models.model.Model`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msviz.errors import WorkloadError
from msviz.models.graph import Graph, function
from msviz.models.model import Model, inputs_of

__all__ = ["MODELS", "build", "catalogue"]


def _mlp(g: Graph, x: Any) -> Any:
    h = g.relu(g.linear(x, 64, 128))
    h = g.relu(g.linear(h, 128, 128))
    h = g.relu(g.linear(h, 128, 128))  # same shape as the layer before: one task, weight 2
    return g.emit(g.relax.op.nn.softmax(g.linear(h, 128, 10)))


def _basic_block(g: Graph, x: Any, c_in: int, c_out: int, stride: int) -> Any:
    h = g.relu(g.conv_bn(x, c_in, c_out, 3, stride))
    h = g.conv_bn(h, c_out, c_out, 3)
    skip = x if stride == 1 and c_in == c_out else g.conv_bn(x, c_in, c_out, 1, stride)
    return g.relu(g.emit(g.relax.op.add(h, skip)))


def _resnet_block(g: Graph, x: Any) -> Any:
    return _basic_block(g, x, 16, 16, 1)


def _resnet18(g: Graph, x: Any) -> Any:
    op = g.relax.op
    h = g.relu(g.conv_bn(x, 3, 16, 3))
    c_in = 16
    for c_out, stride in ((16, 1), (32, 2), (64, 2), (128, 2)):
        h = _basic_block(g, h, c_in, c_out, stride)
        h = _basic_block(g, h, c_out, c_out, 1)
        c_in = c_out
    h = g.emit(op.reshape(g.emit(op.nn.adaptive_avg_pool2d(h, 1)), (1, 128)))
    return g.linear(h, 128, 10)


def _transformer_block(g: Graph, x: Any, seq: int = 16, dim: int = 32, heads: int = 2) -> Any:
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
MODELS: dict[str, tuple[tuple[int, ...], Callable[[Graph, Any], Any], str]] = {
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
    mod = function(shape, body, seed)
    return Model(key, mod, "main", inputs_of(mod, "main"), desc)
