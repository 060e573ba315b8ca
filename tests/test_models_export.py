"""Catalogue models at other input sizes, and exported to ONNX with the same weights."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm import relax

from msviz import WorkloadError, compat, models
from msviz.models.onnx_export import export_onnx, onnx_model
from tests.conftest import require
from tests.numpy_models import forward

TARGET = compat.make_target("llvm")


def _run(model: models.Model, x: np.ndarray) -> np.ndarray:
    """The untuned build's output (tvm.compile + the Relax VM)."""
    with TARGET:
        exe = tvm.compile(model.mod, target=TARGET)
    return relax.VirtualMachine(exe, tvm.cpu())["main"](tvm.runtime.tensor(x)).numpy()


def _close(out: np.ndarray, ref: np.ndarray, rtol: float = 1e-5) -> None:
    """Within ``rtol`` of the reference's largest magnitude (float32 through a few layers),
    and the reference not all zero (a network that outputs zeros would match anything)."""
    assert out.shape == ref.shape
    scale = float(np.abs(ref).max())
    assert scale > 1e-3, scale
    np.testing.assert_allclose(out, ref, rtol=0, atol=rtol * scale)


def _conv_shapes(model: models.Model) -> list[tuple[int, ...]]:
    shapes = []

    def visit(expr: object) -> None:
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op) \
                and expr.op.name == "relax.nn.conv2d":
            shapes.append(tuple(int(v) for v in expr.ty.shape.values))

    relax.analysis.post_order_visit(model.mod["main"], visit)
    return shapes


@pytest.mark.parametrize(("name", "shape", "output"), [
    ("mlp", (7, 64), (7, 10)),
    ("resnet-block", (1, 16, 24, 20), (1, 16, 24, 20)),
    ("transformer-block", (8, 32), (8, 32)),
    ("bert-base", (128, 768), (128, 768)),
    ("resnet50", (1, 3, 224, 224), (1, 1000)),
    ("mobilenetv2", (1, 3, 224, 224), (1, 1000)),
])
def test_build_at_another_input_size(name: str, shape: tuple, output: tuple) -> None:
    model = models.build(name, input_shape=shape)
    assert model.inputs == [("x", shape, "float32")]
    assert tuple(int(d) for d in model.mod["main"].ret_ty.shape.values) == output
    entry = models.catalogue()[name]
    assert model.description == f"{entry}; built at input {'x'.join(map(str, shape))}"
    assert models.build(name, input_shape=entry.input_shape).description == str(entry)


def test_convnets_at_224_have_their_real_feature_maps() -> None:
    """ResNet-50's stem gives 112x112 and its last stage 7x7 at 224x224; MobileNetV2's stem
    112x112 and its 1x1 conv to 1280 channels 7x7."""
    resnet = _conv_shapes(models.build("resnet50", input_shape=(1, 3, 224, 224)))
    assert (resnet[0], resnet[-1]) == ((1, 64, 112, 112), (1, 2048, 7, 7))
    mobile = _conv_shapes(models.build("mobilenetv2", input_shape=(1, 3, 224, 224)))
    assert (mobile[0], mobile[-1]) == ((1, 32, 112, 112), (1, 1280, 7, 7))


@pytest.mark.parametrize(("name", "shape"), [("resnet-block", (1, 16, 8, 12)),
                                             ("transformer-block", (8, 32))])
def test_resized_build_equals_numpy(name: str, shape: tuple) -> None:
    """The same recipe and weights at the new size: the build equals the numpy forward pass."""
    x = np.random.default_rng(2).standard_normal(shape).astype("float32")
    _close(_run(models.build(name, input_shape=shape), x), forward(name, x), rtol=1e-4)


def test_bad_input_shape_is_named() -> None:
    cases = [
        ("resnet50", (1, 3, 224), r"input_shape of resnet50 must have 4 axes \(batch, channels, "
                                  r"height, width\), got 3: \(1, 3, 224\)"),
        ("resnet50", (1, 4, 224, 224), r"resnet50 takes channels 3 \(input \(batch, channels, "
                                       r"height, width\); it can change height and width\), got "
                                       r"channels 4 in \(1, 4, 224, 224\)"),
        ("mobilenetv2", (2, 3, 224, 224), r"takes batch 1 .*got batch 2"),
        ("bert-base", (128, 512), r"bert-base takes hidden 768 \(input \(seq, hidden\); it can "
                                  r"change seq\), got hidden 512 in \(128, 512\)"),
        ("bert-base", (0, 768), r"input_shape of bert-base must be positive ints \(seq, hidden\), "
                                r"got \(0, 768\)"),
        ("mlp", (4.0, 64), r"must be positive ints \(batch, features\)"),
        ("mlp", 4, r"input_shape of mlp must be a tuple \(batch, features\), got 4"),
    ]
    for name, shape, message in cases:
        with pytest.raises(WorkloadError, match=message):
            models.build(name, input_shape=shape)
    with pytest.raises(WorkloadError, match=r"unknown model 'vgg'"):
        export_onnx("vgg", "vgg.onnx")


# -- ONNX export ------------------------------------------------------------------------------


def _ort(model: object, x: np.ndarray) -> np.ndarray:
    ort = require("onnxruntime", "msviz[compare]")
    session = ort.InferenceSession(model.SerializeToString(),  # type: ignore[attr-defined]
                                   providers=["CPUExecutionProvider"])
    return session.run(["y"], {"x": x})[0]


@pytest.mark.parametrize(("name", "shape"), [
    ("mlp", None), ("resnet-block", None), ("transformer-block", None), ("resnet18", None),
    ("transformer-block", (8, 32)), ("resnet-block", (1, 16, 8, 12)),
])
def test_onnx_export_run_by_onnxruntime_equals_tvm_and_numpy(name: str, shape: tuple | None
                                                             ) -> None:
    require("onnx", "msviz[onnx]")
    model = models.build(name, input_shape=shape)
    (x,) = model.random_inputs(3)
    out = _ort(onnx_model(name, input_shape=shape), x)
    ref = forward(name, x)
    _close(out, ref, rtol=1e-5)
    _close(out, _run(model, x), rtol=1e-4)


def test_onnx_export_has_the_seeds_weights(tmp_path: Path) -> None:
    """The check above can fail: the export of seed 1 does not match seed 0's network; the
    file holds the layers' operators and initializers."""
    onnx = require("onnx", "msviz[onnx]")
    path = export_onnx("resnet-block", tmp_path / "block.onnx", seed=1)
    proto = onnx.load(str(path))
    x = models.build("resnet-block").random_inputs(0)[0]
    out = _ort(proto, x)
    _close(out, forward("resnet-block", x, seed=1))
    with pytest.raises(AssertionError):
        _close(out, forward("resnet-block", x, seed=0))
    assert [n.op_type for n in proto.graph.node] == [
        "Conv", "BatchNormalization", "Relu", "Conv", "BatchNormalization", "Add", "Relu",
        "Identity"]
    # two convs (16x16x3x3) and two batch norms (4 x 16 each): all the weights the Relax build has
    assert sorted(int(np.prod(t.dims)) for t in proto.graph.initializer) == [16] * 8 + [2304] * 2
    assert [(i.name, [d.dim_value for d in i.type.tensor_type.shape.dim])
            for i in (*proto.graph.input, *proto.graph.output)] == [("x", [1, 16, 16, 16]),
                                                                    ("y", [1, 16, 16, 16])]


def test_onnx_graph_shape_of_a_layer() -> None:
    """The recipes ask for their input's shape; a layer's comes from ONNX shape inference."""
    require("onnx", "msviz[onnx]")
    from msviz.models.onnx_export import OnnxGraph

    g = OnnxGraph(0)
    g.shapes["x"] = (4, 64)
    h = g.op.permute_dims(g.linear("x", 64, 8), [1, 0])
    assert (g.shape("x"), g.shape(h)) == ((4, 64), (8, 4))


def test_onnx_export_without_onnx_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if the extra were not installed
    with pytest.raises(WorkloadError, match=r"pip install msviz\[onnx\]"):
        onnx_model("mlp")
