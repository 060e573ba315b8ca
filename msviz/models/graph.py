"""A small Relax graph builder for the catalogue: layers as Relax ops, seeded random weights.

:class:`Graph` emits the layers the catalogue's networks are made of (dense, convolution with batch
norm, pooling, layer norm) into a ``relax.BlockBuilder``, each weight a random constant drawn from
the seed; :func:`function` wraps a body into the ``main`` function of a module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import tvm

__all__ = ["Graph", "function"]


class Graph:
    """A tiny Relax graph builder with seeded random weights as constants.

    Parameters
    ----------
    seed : int
        Seed of the random weights (drawn in the order the layers are built).
    fold_bn : bool
        Fold each batch norm into its convolution (weights and a per-channel bias), as an
        inference graph has it: the conv then fuses with its bias, residual add and activation
        into one task. Otherwise batch norm is its own op (``relax.op.nn.batch_norm``).
    """

    def __init__(self, seed: int = 0, fold_bn: bool = False) -> None:
        from tvm import relax

        self.fold_bn = fold_bn
        self.relax = relax
        self.op = relax.op
        self.bb = relax.BlockBuilder()
        self.rng = np.random.default_rng(seed)

    def const(self, shape: tuple[int, ...], scale: float = 0.1, offset: float = 0.0) -> Any:
        """A constant of normal values ``offset + scale * N(0, 1)``."""
        data = (offset + scale * self.rng.standard_normal(shape)).astype("float32")
        return self.relax.const(data)

    def scalar(self, value: float) -> Any:
        return self.relax.const(value, "float32")

    def emit(self, expr: Any) -> Any:
        return self.bb.emit(expr)

    def shape(self, x: Any) -> tuple[int, ...]:
        """The static shape of ``x`` (the input or a layer's output) as ints."""
        return tuple(int(d) for d in x.ty.shape.values)

    # -- dense layers ----------------------------------------------------------------------------

    def dense_weights(self, n_in: int, n_out: int, scale: float = 0.1) -> tuple[Any, Any]:
        """The weight ``(n_in, n_out)`` (``scale * N(0, 1)``) and bias ``(n_out,)`` of a dense
        layer."""
        return self.const((n_in, n_out), scale=scale), self.const((n_out,))

    def affine(self, x: Any, weights: tuple[Any, Any]) -> Any:
        """``x @ weight + bias`` with given weights (shared by the layers that pass them)."""
        weight, bias = weights
        return self.emit(self.op.add(self.emit(self.op.matmul(x, weight)), bias))

    def linear(self, x: Any, n_in: int, n_out: int) -> Any:
        """A dense layer with weights of its own: ``x @ W + b``."""
        return self.affine(x, self.dense_weights(n_in, n_out))

    def norm_weights(self, dim: int) -> tuple[Any, Any]:
        """The scale ``gamma`` (about 1) and shift ``beta`` of a layer norm over ``dim``."""
        return self.const((dim,), 0.1, 1.0), self.const((dim,))

    def layer_norm(self, x: Any, weights: tuple[Any, Any]) -> Any:
        """Layer norm over the last axis."""
        gamma, beta = weights
        return self.emit(self.op.nn.layer_norm(x, gamma, beta, axes=[-1]))

    # -- convolutions ----------------------------------------------------------------------------

    def conv_bn(self, x: Any, c_in: int, c_out: int, k: int, stride: int = 1,
                groups: int = 1) -> Any:
        """Convolution ``k x k`` (``padding k // 2``, no bias) then batch norm (inference), or
        with ``fold_bn`` the batch norm folded into the conv: a per-channel bias add.

        ``groups=c_in=c_out`` is a depthwise convolution (weight ``(c_out, 1, k, k)``).
        """
        op = self.op
        fan_in = c_in // groups * k * k
        weight = self.const((c_out, c_in // groups, k, k), scale=(2 / fan_in) ** 0.5)
        y = self.emit(op.nn.conv2d(x, weight, strides=stride, padding=k // 2, groups=groups))
        if self.fold_bn:
            return self.emit(op.add(y, self.const((1, c_out, 1, 1))))
        bn = self.emit(op.nn.batch_norm(
            y, self.const((c_out,), 0.1, 1.0), self.const((c_out,)), self.const((c_out,)),
            self.const((c_out,), 0.0, 1.0), axis=1, training=False))
        return self.emit(self.relax.TupleGetItem(bn, 0))

    def relu(self, x: Any) -> Any:
        return self.emit(self.op.nn.relu(x))

    def relu6(self, x: Any) -> Any:
        """``min(max(x, 0), 6)`` (MobileNet's activation)."""
        return self.emit(self.op.clip(x, 0.0, 6.0))

    def max_pool(self, x: Any, k: int = 3, stride: int = 2) -> Any:
        return self.emit(self.op.nn.max_pool2d(x, k, stride, padding=k // 2))

    def pool_flatten(self, x: Any, channels: int) -> Any:
        """Global average pool of NCHW ``x`` to ``(1, channels)``."""
        return self.emit(self.op.reshape(self.emit(self.op.nn.adaptive_avg_pool2d(x, 1)),
                                         (1, channels)))


def function(shape: tuple[int, ...], body: Callable[[Graph, Any], Any], seed: int = 0,
             fold_bn: bool = False) -> tvm.IRModule:
    """A module whose ``main`` takes a float32 ``x`` of ``shape`` and returns ``body(graph, x)``.

    Parameters
    ----------
    shape : tuple of int
        The input's static shape.
    body : callable
        Builds the network on a :class:`Graph` from the input var; returns the output.
    seed : int
        Seed of the random weights.
    fold_bn : bool
        Batch norm folded into the convolutions (see :class:`Graph`).
    """
    g = Graph(seed, fold_bn)
    x = g.relax.Var("x", g.relax.TensorType(shape, "float32"))
    with g.bb.function("main", [x]):
        with g.bb.dataflow():
            out = g.bb.emit_output(body(g, x))
        g.bb.emit_func_output(out)
    return g.bb.get()

