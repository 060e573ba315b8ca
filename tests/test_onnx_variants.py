"""ONNX CNNs written the ways users' exporters write them, through msviz's expert graph: the
untuned build's output against ONNX Runtime's, and which batch norms were folded.

Each graph is small (32x32, a few convolutions) and built here with ``onnx.helper``: a conv
with a bias then a batch norm, a MobileNet block (depthwise, Clip as ReLU6, the batch norm as
the model's output), a pre-activation block (the batch norm before a conv: nothing to fold), a
multiply that broadcasts along the width (not per channel: never folded), a SiLU head with
pooling and a Gemm, a conv output shared with a residual add, and two branches concatenated.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm import relax

from msviz import compat, models
from tests.conftest import require

TARGET = compat.make_target("llvm")
SIZE = 32


class _Graph:
    """An ONNX graph under construction (nodes and initializers), random weights."""

    def __init__(self, seed: int = 0) -> None:
        self.onnx = require("onnx", "msviz[onnx]")
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []

    def init(self, name: str, value: np.ndarray) -> str:
        self.inits.append(self.onnx.numpy_helper.from_array(np.asarray(value, "float32"), name))
        return name

    def op(self, kind: str, inputs: list[str], name: str, **attrs: object) -> str:
        self.nodes.append(self.onnx.helper.make_node(kind, inputs, [name], name=name, **attrs))
        return name

    def conv(self, x: str, c_in: int, c_out: int, k: int, name: str, bias: bool = True,
             group: int = 1, stride: int = 1) -> str:
        fan_in = c_in // group * k * k
        inputs = [x, self.init(f"{name}_w", self.rng.standard_normal(
            (c_out, c_in // group, k, k)) * (2.0 / fan_in) ** 0.5)]
        if bias:
            inputs.append(self.init(f"{name}_b", 0.1 * self.rng.standard_normal(c_out)))
        return self.op("Conv", inputs, name, kernel_shape=[k, k], pads=[k // 2] * 4,
                       strides=[stride] * 2, group=group)

    def bn(self, x: str, c: int, name: str) -> str:
        stats = {"g": 1 + 0.1 * self.rng.standard_normal(c), "b": 0.1 * self.rng.standard_normal(c),
                 "m": 0.1 * self.rng.standard_normal(c), "v": 0.5 + self.rng.random(c)}
        return self.op("BatchNormalization",
                       [x] + [self.init(f"{name}_{s}", v) for s, v in stats.items()], name,
                       epsilon=1e-5)

    def save(self, out: str, path: Path) -> Path:
        helper = self.onnx.helper
        graph = helper.make_graph(
            self.nodes, path.stem,
            [helper.make_tensor_value_info("x", self.onnx.TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
            [helper.make_tensor_value_info(out, self.onnx.TensorProto.FLOAT, None)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        self.onnx.save(self.onnx.shape_inference.infer_shapes(model), str(path))
        return path


def _conv_bias_bn_relu(g: _Graph) -> str:
    y = g.op("Relu", [g.bn(g.conv("x", 3, 16, 3, "c1"), 16, "b1")], "r1")
    return g.op("Relu", [g.bn(g.conv(y, 16, 16, 3, "c2"), 16, "b2")], "r2")


def _mobilenet_block(g: _Graph) -> str:
    lo, hi = g.init("lo", np.array(0.0)), g.init("hi", np.array(6.0))
    y = g.op("Clip", [g.bn(g.conv("x", 3, 16, 3, "c1", bias=False), 16, "b1"), lo, hi], "r1")
    y = g.conv(y, 16, 16, 3, "dw", bias=False, group=16)
    y = g.op("Clip", [g.bn(y, 16, "b2"), lo, hi], "r2")
    return g.bn(g.conv(y, 16, 24, 1, "pw", bias=False), 24, "b3")  # the model's output


def _preact(g: _Graph) -> str:
    y = g.conv("x", 3, 16, 3, "c1")
    z = g.conv(g.op("Relu", [g.bn(y, 16, "b1")], "r1"), 16, 16, 3, "c2")
    return g.op("Add", [y, z], "add")


def _width_mul(g: _Graph) -> str:
    y = g.op("Mul", [g.conv("x", 3, 16, 3, "c1"), g.init("wm", 1 + g.rng.random((1, 1, 1, SIZE)))],
             "m")
    return g.op("Relu", [g.op("Mul", [y, g.init("cm", 1 + g.rng.random((1, 16, 1, 1)))], "m2")],
                "r")


def _silu_head(g: _Graph) -> str:
    y = g.bn(g.conv("x", 3, 16, 3, "c1", bias=False, stride=2), 16, "b1")
    y = g.op("Mul", [y, g.op("Sigmoid", [y], "sg")], "silu")
    y = g.op("MaxPool", [y], "mp", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    y = g.op("Flatten", [g.op("GlobalAveragePool", [y], "gap")], "fl", axis=1)
    return g.op("Gemm", [y, g.init("fw", 0.3 * g.rng.standard_normal((10, 16))),
                         g.init("fb", g.rng.standard_normal(10))], "fc", transB=1)


def _shared_conv(g: _Graph) -> str:
    y = g.conv("x", 3, 16, 3, "c1")
    return g.op("Add", [y, g.op("Relu", [g.bn(y, 16, "b1")], "r1")], "add")


def _concat(g: _Graph) -> str:
    a = g.op("Relu", [g.bn(g.conv("x", 3, 8, 1, "ca", bias=False), 8, "ba")], "ra")
    b = g.op("Relu", [g.bn(g.conv("x", 3, 8, 3, "cb", bias=False), 8, "bb")], "rb")
    return g.op("AveragePool", [g.op("Concat", [a, b], "cat", axis=1)], "ap",
                kernel_shape=[2, 2], strides=[2, 2])


# variant -> (the graph, how many convolutions took a batch norm: counted by hand)
VARIANTS = {
    "conv-bias-bn-relu": (_conv_bias_bn_relu, 2),
    "mobilenet-block": (_mobilenet_block, 3),
    "pre-activation": (_preact, 0),
    "width-multiply": (_width_mul, 0),
    "silu-pool-gemm": (_silu_head, 1),
    "shared-conv-output": (_shared_conv, 0),
    "concat-branches": (_concat, 2),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_an_exported_cnn_on_the_expert_graph_gives_onnx_runtimes_output(
        variant: str, tmp_path: Path) -> None:
    ort = require("onnxruntime", "msviz[compare]")
    make, folded = VARIANTS[variant]
    g = _Graph(seed=len(variant))
    path = g.save(make(g), tmp_path / f"{variant}.onnx")
    x = np.random.default_rng(1).standard_normal((1, 3, SIZE, SIZE)).astype("float32")
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]

    model = models.load(str(path))
    report = model.graph_report(TARGET)
    assert report.folded_convs == folded
    # the fold never adds a task (on the expert graph in the model's own layout)
    nchw = model.on_graph("expert-nchw").graph_report(TARGET)
    assert nchw.tasks and nchw.tasks <= nchw.stock_tasks
    # on the expert graph every convolution is NHWC, and the layout costs at most a transpose
    # at each end (a clip or a pool in between follows the layout, never gets transposes)
    convs = sum(node.op_type == "Conv" for node in g.nodes)
    assert report.nhwc_convs == convs > 0
    names = [t.name for t in model.extract_tasks(TARGET)]
    transposes = [n for n in names if re.match(r"(fused_)?transpose", n)]
    assert len(transposes) <= 2 and report.tasks - len(transposes) <= nchw.tasks
    exe = model.compile(compat.ms.database.MemoryDatabase(), TARGET)  # untuned: no record
    out = relax.VirtualMachine(exe, tvm.cpu())["main"](tvm.runtime.tensor(x)).numpy()
    assert out.shape == ref.shape
    assert np.abs(ref).max() > 0.1
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5 * np.abs(ref).max())
