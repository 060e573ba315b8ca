"""The catalogue's networks run forward in numpy (float64): the reference the Relax builds are
checked against.

:class:`NumpyGraph` is a stand-in *builder* for :class:`msviz.models.graph.Graph`: it draws the
same weights in the same order (it keeps the graph's ``const``, ``dense_weights`` and
``norm_weights``, and draws a convolution's in the same order) but computes each layer at once,
written here from the operators' definitions (ONNX's and PyTorch's, which Relax follows): no
TVM code runs in it. ``forward(name, x)`` runs a catalogue recipe's body on it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.special import erf

from msviz.models.graph import Graph
from msviz.models.zoo import MODELS


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def conv2d(x: np.ndarray, w: np.ndarray, stride: int, pad: int, groups: int) -> np.ndarray:
    """NCHW x OIHW, symmetric zero padding, ``groups`` groups (depthwise when ``groups`` is
    the channel count)."""
    n = x.shape[0]
    o, cg, k, _ = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]  # N C H W k k
    h, wd = win.shape[2:4]
    win = win.reshape(n, groups, cg, h, wd, k, k)
    wg = w.reshape(groups, o // groups, cg, k, k)
    out = np.einsum("ngchwij,gocij->ngohw", win, wg, optimize=True)
    return out.reshape(n, o, h, wd)


def max_pool2d(x: np.ndarray, k: int, stride: int, pad: int) -> np.ndarray:
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    return sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride].max((-2, -1))


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5
               ) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def batch_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray,
               var: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Inference batch norm over axis 1 (NCHW)."""
    shape = (1, -1, 1, 1)
    return ((x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * gamma.reshape(shape)
            + beta.reshape(shape))


class NumpyGraph(Graph):
    """:class:`Graph`'s weights, numpy's arithmetic (see the module doc)."""

    def __init__(self, seed: int = 0, fold_bn: bool = False) -> None:
        self.fold_bn = fold_bn
        self.rng = np.random.default_rng(seed)
        nn = SimpleNamespace(softmax=_softmax, relu=lambda x: np.maximum(x, 0.0),
                             gelu=lambda x: 0.5 * x * (1.0 + erf(x / np.sqrt(2.0))))
        self.op = SimpleNamespace(
            add=np.add, multiply=np.multiply, matmul=np.matmul, nn=nn,
            permute_dims=lambda x, axes: np.transpose(x, axes),
            reshape=lambda x, shape: np.reshape(x, shape),
            clip=lambda x, lo, hi: np.clip(x, lo, hi))

    def const(self, shape: tuple[int, ...], scale: float = 0.1, offset: float = 0.0) -> Any:
        # the same draw as Graph.const, rounded to float32 as the Relax constant is
        data = (offset + scale * self.rng.standard_normal(shape)).astype("float32")
        return data.astype(np.float64)

    def scalar(self, value: float) -> Any:
        return np.float64(np.float32(value))

    def emit(self, expr: Any) -> Any:
        return expr

    def shape(self, x: Any) -> tuple[int, ...]:
        return tuple(x.shape)

    def layer_norm(self, x: Any, weights: tuple[Any, Any]) -> Any:
        return layer_norm(x, *weights)

    def conv_bn(self, x: Any, c_in: int, c_out: int, k: int, stride: int = 1,
                groups: int = 1) -> Any:
        fan_in = c_in // groups * k * k
        weight = self.const((c_out, c_in // groups, k, k), scale=(2 / fan_in) ** 0.5)
        y = conv2d(x, weight, stride, k // 2, groups)
        if self.fold_bn:
            return y + self.const((1, c_out, 1, 1))
        gamma, beta = self.const((c_out,), 0.1, 1.0), self.const((c_out,))
        mean, var = self.const((c_out,)), self.const((c_out,), 0.0, 1.0)
        return batch_norm(y, gamma, beta, mean, var)

    def relu(self, x: Any) -> Any:
        return np.maximum(x, 0.0)

    def relu6(self, x: Any) -> Any:
        return np.clip(x, 0.0, 6.0)

    def max_pool(self, x: Any, k: int = 3, stride: int = 2) -> Any:
        return max_pool2d(x, k, stride, k // 2)

    def pool_flatten(self, x: Any, channels: int) -> Any:
        return x.mean(axis=(2, 3)).reshape(1, channels)


def forward(name: str, x: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """Catalogue model ``name`` (weights of ``seed``) run on ``x`` in float64."""
    found = MODELS[name]
    return found.body(NumpyGraph(seed, found.fold_bn), np.asarray(x, dtype=np.float64))
