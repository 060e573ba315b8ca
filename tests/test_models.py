"""Models as workloads: the catalogue, task extraction, Relax, nn.Module and ONNX sources."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm import relax

from msviz import WorkloadError, compat, models
from tests.conftest import require
from tests.numpy_models import forward

TARGET = compat.make_target("llvm")


def _run(model: models.Model, *inputs: np.ndarray) -> np.ndarray:
    """The untuned build's output (tvm.compile + the Relax VM)."""
    with TARGET:
        exe = tvm.compile(model.mod, target=TARGET)
    vm = relax.VirtualMachine(exe, tvm.cpu())
    return vm[model.func_name](*[tvm.runtime.tensor(x) for x in inputs]).numpy()


def _assert_close_to_numpy(out: np.ndarray, ref: np.ndarray) -> None:
    """The untuned build's float32 output against the float64 numpy forward pass: within
    1e-4 of the output's scale (float32 over a few dozen layers), and not all zero."""
    assert out.shape == ref.shape
    scale = float(np.abs(ref).max())
    assert scale > 1e-3, scale  # a network that outputs zeros would match anything
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-4 * scale)


def test_numpy_reference_is_sensitive_to_the_weights() -> None:
    """The check above can fail: the reference with other weights (seed 1), or with batch norm
    folded (other layers), does not match the build of seed 0."""
    model = models.build("resnet-block")
    (x,) = model.random_inputs(0)
    out = _run(model, x)
    _assert_close_to_numpy(out, forward("resnet-block", x))
    with pytest.raises(AssertionError):
        _assert_close_to_numpy(out, forward("resnet-block", x, seed=1))
    from tests.numpy_models import NumpyGraph

    folded = models.MODELS["resnet-block"].body(NumpyGraph(0, fold_bn=True), x.astype(float))
    with pytest.raises(AssertionError):
        _assert_close_to_numpy(out, folded)


def test_model_catalogue_names() -> None:
    assert list(models.catalogue()) == ["mlp", "resnet-block", "transformer-block", "convnet",
                                        "resnet18", "resnet50", "mobilenetv2", "bert-base"]
    entry = models.catalogue()["resnet50"]
    assert isinstance(entry, models.CatalogueEntry)
    assert str(entry) == f"{entry}" == models.build("resnet50").description
    assert entry.gflop == entry.flop / 1e9


@pytest.mark.parametrize("name", list(models.MODELS))
def test_catalogue_entry_is_the_extraction(name: str) -> None:
    """The stored task count, weights and FLOP are what MetaSchedule's extraction gives."""
    entry = models.catalogue()[name]
    model = models.build(name)
    assert model.inputs == [("x", entry.input_shape, "float32")]
    tasks = model.extract_tasks(TARGET)
    assert (entry.tasks, entry.weights, entry.flop) == (
        len(tasks), sum(t.weight for t in tasks), round(sum(t.weight * t.flop for t in tasks)))


def test_mlp_tasks_by_hand() -> None:
    model = models.build("mlp")
    assert model.inputs == [("x", (4, 64), "float32")]
    tasks = model.extract_tasks(TARGET)
    # matmul 2*M*N*K plus one FLOP per output element for the bias add and one for relu;
    # softmax over (4, 10): per element one max, one subtract, one add (the sum) and one divide,
    # and on the expert graph its exp is TOPI's polynomial, whose arithmetic TVM's estimate
    # counts (libm's exp call on "expert-exact" it does not)
    from tvm import te, topi

    from msviz.workloads.te_catalogue import flop_count

    one = te.placeholder((1,), "float32")
    exp_flop = flop_count(tvm.IRModule({"main": te.create_prim_func([one, topi.fast_exp(one)])}))
    assert exp_flop > 10
    assert [(t.index, t.name, t.weight, t.flop) for t in tasks] == [
        (0, "softmax", 1, 4 * 10 * 4 + 4 * 10 * exp_flop),
        (1, "fused_matmul2_add1", 1, 2 * 4 * 128 * 10 + 4 * 10),
        (2, "fused_matmul1_add_relu", 2, 2 * 4 * 128 * 128 + 2 * 4 * 128),
        (3, "fused_matmul_add_relu", 1, 2 * 4 * 64 * 128 + 2 * 4 * 128),
    ]
    exact = model.on_graph("expert-exact").extract_tasks(TARGET)
    assert {t.name: t.flop for t in exact} == {**{t.name: t.flop for t in tasks},
                                               "softmax": 4 * 10 * 4}
    # the pinned TVM prints schedulable blocks as T.sblock (it cannot print T.block)
    assert "T.sblock(" in tasks[2].script and "T.block(" not in tasks[2].script
    assert tasks[2].workload.name == "fused_matmul1_add_relu"


@pytest.mark.parametrize(("name", "min_tasks", "repeats"), [
    ("resnet-block", 2, False),  # its two convs differ (one adds the residual): weight 1 each
    ("transformer-block", 8, True), ("resnet18", 17, True)])
def test_catalogue_models_extract(name: str, min_tasks: int, repeats: bool) -> None:
    model = models.build(name)
    tasks = model.extract_tasks(TARGET)
    assert len(tasks) >= min_tasks
    assert len({t.name for t in tasks}) == len(tasks)
    assert any(t.weight >= 2 for t in tasks) == repeats
    (x,) = model.random_inputs(0)
    _assert_close_to_numpy(_run(model, x), forward(name, x))


def test_convnet_is_three_conv_tasks_by_hand() -> None:
    """Three fused conv-bias-relu tasks of their own shapes: per output element 2 x c_in x 9
    FLOP (multiply-add), one bias add and one relu."""
    model = models.build("convnet")
    convs = sorted((t.name, t.weight, t.flop) for t in model.extract_tasks(TARGET)
                   if "conv2d" in t.name)
    assert convs == [
        ("fused_conv2d1_add1_relu1", 1, 32 * 16 * 16 * (2 * 16 * 9 + 2)),
        ("fused_conv2d2_add2_relu2", 1, 64 * 8 * 8 * (2 * 32 * 9 + 2)),
        ("fused_conv2d_add_relu", 1, 16 * 32 * 32 * (2 * 3 * 9 + 2)),
    ]
    (x,) = model.random_inputs(0)
    _assert_close_to_numpy(_run(model, x), forward("convnet", x))


def _calls(model: models.Model) -> list[relax.Call]:
    """The operator calls of the model's Relax function."""
    calls: list[relax.Call] = []

    def visit(expr: object) -> None:
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
            calls.append(expr)

    relax.analysis.post_order_visit(model.mod[model.func_name], visit)
    return calls


#: The real models: their layers (operator calls), least tasks and least top weight.
REAL = {
    # 1 stem + 16 bottlenecks x 3 + 4 projections; stage 3's five identity blocks share tasks
    "resnet50": ({"nn.conv2d": 53, "nn.max_pool2d": 1, "matmul": 1}, 20, 3),
    # 1 stem + 2 (the t=1 block) + 16 x 3 + the 1x1 to 1280; 17 depthwise convs
    "mobilenetv2": ({"nn.conv2d": 52, "clip": 35, "matmul": 1}, 20, 3),
    # 12 layers x (q, k, v, out, ffn up, ffn down + 2 attention matmuls)
    "bert-base": ({"matmul": 96, "nn.layer_norm": 24, "nn.gelu": 12, "nn.softmax": 12}, 8, 24),
}


@pytest.mark.parametrize("name", list(REAL))
def test_real_models_extract_and_run(name: str) -> None:
    layers, min_tasks, min_weight = REAL[name]
    model = models.build(name)
    counts = Counter(str(call.op.name).removeprefix("relax.") for call in _calls(model))
    assert {op: counts[op] for op in layers} == layers
    tasks = model.extract_tasks(TARGET)
    assert len(tasks) >= min_tasks
    assert len({t.name for t in tasks}) == len(tasks)
    assert max(t.weight for t in tasks) >= min_weight
    (x,) = model.random_inputs(0)
    out = _run(model, x)
    assert out.shape == ((1, 1000) if name != "bert-base" else (32, 768))
    _assert_close_to_numpy(out, forward(name, x))


def test_mobilenetv2_has_a_depthwise_conv_per_block() -> None:
    """One depthwise 3x3 per inverted residual block, as wide as the block's expansion."""
    groups = [int(c.attrs.groups) for c in _calls(models.build("mobilenetv2"))
              if c.op.name == "relax.nn.conv2d"]
    assert [g for g in groups if g > 1] == [32, 96, 144, 144, 192, 192, 192, 384, 384, 384, 384,
                                            576, 576, 576, 960, 960, 960]


def test_relax_module_with_params_equals_numpy() -> None:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 8), "float32"))
    w = relax.Var("w", relax.TensorType((8, 4), "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.nn.relu(bb.emit(relax.op.matmul(x, w)))))
        bb.emit_func_output(out)
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((8, 4)).astype("float32")
    model = models.load((bb.get(), {"w": weight}), name="tiny")
    assert (model.name, model.inputs) == ("tiny", [("x", (2, 8), "float32")])
    assert [t.name for t in model.extract_tasks(TARGET)] == ["fused_matmul_relu"]
    data = rng.standard_normal((2, 8)).astype("float32")
    np.testing.assert_allclose(_run(model, data), np.maximum(data @ weight, 0), rtol=1e-5)
    with pytest.raises(WorkloadError, match=r"params \['v'\] are not parameters of main"):
        models.from_relax(bb.get(), {"v": weight})


def test_nn_module_with_spec() -> None:
    from tvm.relax.frontend import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            self.a = nn.Linear(16, 16)
            self.b = nn.Linear(16, 16)

        def forward(self, x: nn.Tensor) -> nn.Tensor:
            return self.b(nn.op.relu(self.a(x)))

    model = models.load((Net(), {"x": nn.spec.Tensor((2, 16), "float32")}))
    assert (model.name, model.func_name, model.inputs) == ("Net", "forward",
                                                           [("x", (2, 16), "float32")])
    tasks = model.extract_tasks(TARGET)
    assert sorted(t.weight for t in tasks) == [1, 1]
    assert models.is_model(Net()) and not models.is_model("GMM-0")
    with pytest.raises(WorkloadError, match="needs its input spec"):
        models.load(Net())


def _onnx_file(path: Path, *, dynamic: bool = False, op: str = "Relu") -> tuple[Path, dict]:
    onnx = require("onnx", "msviz[onnx]")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    w = rng.standard_normal((8, 6)).astype("float32")
    b = rng.standard_normal((6,)).astype("float32")
    batch = "N" if dynamic else 3
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["a"]),
         helper.make_node(op, ["a"], ["y"])],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 6])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path, {"w": w, "b": b}


def test_onnx_model_equals_numpy(tmp_path: Path) -> None:
    path, weights = _onnx_file(tmp_path / "tiny.onnx")
    assert models.is_model(str(path))
    model = models.load(path)
    assert (model.name, model.inputs) == ("tiny", [("x", (3, 8), "float32")])
    assert len(model.extract_tasks(TARGET)) >= 1
    data = np.random.default_rng(1).standard_normal((3, 8)).astype("float32")
    expected = np.maximum(data @ weights["w"] + weights["b"], 0)
    np.testing.assert_allclose(_run(model, data), expected, rtol=1e-5, atol=1e-6)


def test_onnx_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dynamic, _ = _onnx_file(tmp_path / "dyn.onnx", dynamic=True)
    with pytest.raises(WorkloadError, match=r"dynamic shapes.*'x'.*\['N'\]"):
        models.load(dynamic)
    odd, _ = _onnx_file(tmp_path / "odd.onnx", op="NoSuchOperator")
    with pytest.raises(WorkloadError, match="NoSuchOperator"):
        models.load(odd)
    with pytest.raises(WorkloadError, match="no ONNX file"):
        models.load(tmp_path / "missing.onnx")
    monkeypatch.setitem(sys.modules, "onnx", None)  # as if the extra were not installed
    with pytest.raises(WorkloadError, match=r"pip install msviz\[onnx\]"):
        models.load(dynamic)


def test_relax_bad_input() -> None:
    def module(shape: tuple, body: str) -> tvm.IRModule:
        bb = relax.BlockBuilder()
        x = relax.Var("x", relax.TensorType(shape, "float32"))
        with bb.function("main", [x]):
            with bb.dataflow():
                y = bb.emit(relax.op.add(x, x))
                if body == "fma":  # an op with no TensorIR lowering
                    y = bb.emit(relax.op.ewise_fma(y, x, x))
                out = bb.emit_output(y)
            bb.emit_func_output(out)
        return bb.get()

    n = tvm.tirx.Var("n", "int64")
    with pytest.raises(WorkloadError, match=r"dynamic shapes.*input 'x'.*n is symbolic"):
        models.from_relax(module((n, 8), "add"))
    model = models.from_relax(module((4, 8), "fma"))
    with pytest.raises(WorkloadError, match=r"cannot lower operator relax\.ewise_fma"):
        model.extract_tasks(TARGET)
    with pytest.raises(WorkloadError, match=r"unknown model 'vgg'.*mlp, resnet-block"):
        models.build("vgg")


def test_weight_bytes_are_the_parameters_by_hand() -> None:
    """ResNet-50's weights: its convolutions (batch norms folded: a bias per channel) and the
    classifier, counted from the architecture; BERT's 12 layers share one weight set."""
    from msviz.models.model import weight_bytes

    def conv(c_in: int, c_out: int, k: int) -> int:
        return c_in * c_out * k * k + c_out  # + the folded batch norm's bias

    params = conv(3, 64, 7)
    c_in = 64
    for width, blocks in ((64, 3), (128, 4), (256, 6), (512, 3)):
        for b in range(blocks):
            params += conv(c_in, width, 1) + conv(width, width, 3) + conv(width, 4 * width, 1)
            if b == 0:
                params += conv(c_in, 4 * width, 1)  # the projection shortcut
            c_in = 4 * width
    params += 2048 * 1000 + 1000
    assert weight_bytes(models.build("resnet50").mod) == 4 * params
    dim, ffn = 768, 3072
    layer = 4 * (dim * dim + dim) + (dim * ffn + ffn) + (ffn * dim + dim) + 2 * 2 * dim
    scales = 12  # each layer's 1 / sqrt(head size), a scalar constant of its own
    assert weight_bytes(models.build("bert-base").mod) == 4 * (layer + scales)


def test_a_model_too_big_for_the_memory_is_refused(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from msviz.models import model as model_mod

    model = models.build("resnet50")
    needed = model_mod.memory_needed(model.mod)
    monkeypatch.setattr(model_mod, "available_memory", lambda: needed - 1)
    with pytest.raises(WorkloadError, match=r"model 'resnet50' needs about 0\.8 GiB of memory "
                                            r"to lower and extract its tasks \(0\.1 GiB of "
                                            r"weights.*machine has 0\.8 GiB available"):
        model.extract_tasks(TARGET)
    path, _ = _onnx_file(tmp_path / "m.onnx")
    monkeypatch.setattr(model_mod, "available_memory", lambda: 1 << 20)
    with pytest.raises(WorkloadError, match=r"model 'm\.onnx' needs about 0\.5 GiB.*0\.0 GiB "
                                            r"available"):
        models.load(path)
    monkeypatch.setattr(model_mod, "available_memory", lambda: needed)
    assert len(model.extract_tasks(TARGET)) == 29  # just enough: extracted
