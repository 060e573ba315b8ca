"""The expert graph: batch norms folded into the convolutions (checked against numpy), epilogues
fused, weights prepacked in the tuned build, and graph="stock" for stock MetaSchedule's."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import tvm
from tvm import relax

import msviz
from msviz import compat, models
from msviz.cli import main
from msviz.models import graph_passes
from tests.conftest import require

TARGET = compat.make_target("llvm")


def _conv_bn_module(rng: np.random.Generator, relu: bool = True
                    ) -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    """conv2d then a batch norm written as ONNX's frontend writes it (subtract the mean,
    divide by sqrt(var + eps), multiply by gamma, add beta), then relu (or, ``relu=False``,
    the batch norm's add is the model's output); weights as constants."""
    w = rng.standard_normal((8, 3, 3, 3)).astype("float32")
    mean, var = rng.standard_normal(8).astype("float32"), rng.random(8).astype("float32") + 0.5
    gamma, beta = rng.standard_normal(8).astype("float32"), rng.standard_normal(8).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 3, 10, 10), "float32"))

    def c(v: np.ndarray) -> relax.Expr:
        return relax.const(v.reshape(1, -1, 1, 1))

    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(w), padding=1))
            y = bb.emit(relax.op.subtract(y, c(mean)))
            y = bb.emit(relax.op.divide(y, bb.emit(relax.op.sqrt(relax.op.add(
                c(var), relax.const(1e-5, "float32"))))))
            y = bb.emit(relax.op.multiply(y, c(gamma)))
            if relu:
                out = bb.emit_output(bb.emit(relax.op.nn.relu(bb.emit(relax.op.add(y, c(beta))))))
            else:
                out = bb.emit_output(relax.op.add(y, c(beta)))
        bb.emit_func_output(out)
    return bb.get(), {"w": w, "mean": mean, "var": var, "gamma": gamma, "beta": beta}


def _numpy_conv_bn_relu(x: np.ndarray, p: dict[str, np.ndarray], relu: bool = True
                        ) -> np.ndarray:
    """The same network in numpy (float64): a 3x3 convolution, padding 1, by hand."""
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (1, 1), (1, 1)))
    w = p["w"].astype("float64")
    out = np.zeros((1, 8, 10, 10))
    for i in range(3):
        for j in range(3):
            out += np.einsum("chw,oc->ohw", xp[0, :, i:i + 10, j:j + 10], w[:, :, i, j])[None]
    scale = (p["gamma"] / np.sqrt(p["var"].astype("float64") + 1e-5))[None, :, None, None]
    out = (out - p["mean"][None, :, None, None]) * scale + p["beta"][None, :, None, None]
    return np.maximum(out, 0.0) if relu else out


def _ops(mod: tvm.IRModule) -> list[str]:
    names: list[str] = []

    def visit(expr: object) -> None:
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
            names.append(str(expr.op.name))

    relax.analysis.post_order_visit(mod["main"], visit)
    return names


@pytest.mark.parametrize("relu", [True, False], ids=["then-relu", "as-the-output"])
def test_a_batch_norm_is_folded_into_the_convolution_and_the_output_is_numpys(
        relu: bool) -> None:
    """Also where the batch norm's last op is the model's output (a feature extractor, a
    MobileNet head): the fold's bias add must stay an output of the dataflow block."""
    rng = np.random.default_rng(3)
    mod, params = _conv_bn_module(rng, relu)
    with TARGET:
        mod = relax.transform.FoldConstant()(mod)
    folded, convs, ops = graph_passes.fold_scale_shift(mod)
    assert (convs, ops) == (1, 4)
    relax.analysis.well_formed(folded)  # raises on a dataflow var used outside its block
    # what is left: the convolution with new weights, one bias add, the relu
    assert sorted(_ops(folded)) == ["relax.add", "relax.nn.conv2d"] + ["relax.nn.relu"] * relu
    x = rng.standard_normal((1, 3, 10, 10)).astype("float32")
    with TARGET:
        exe = tvm.compile(folded, target=TARGET)
    out = relax.VirtualMachine(exe, tvm.cpu())["main"](tvm.runtime.tensor(x)).numpy()
    ref = _numpy_conv_bn_relu(x, params, relu)
    assert np.abs(ref).max() > 1.0
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-4 * np.abs(ref).max())


def test_a_bias_alone_and_a_shared_output_are_left_as_they_are() -> None:
    """A conv + bias needs no fold (it fuses already); a conv output used twice cannot be
    folded without changing the other use."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 2, 4, 4), "float32"))
    w = relax.const(np.ones((2, 2, 1, 1), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, w))
            b = bb.emit(relax.op.add(y, relax.const(np.ones((1, 2, 1, 1), "float32"))))
            z = bb.emit(relax.op.nn.conv2d(x, w))
            s = bb.emit(relax.op.multiply(z, relax.const(np.full((1, 2, 1, 1), 2, "float32"))))
            out = bb.emit_output(bb.emit(relax.op.add(b, relax.op.add(s, z))))
        bb.emit_func_output(out)
    _, convs, ops = graph_passes.fold_scale_shift(bb.get())
    assert (convs, ops) == (0, 0)


@pytest.fixture(scope="module")
def onnx_resnet18(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require("onnx", "onnx")
    path = tmp_path_factory.mktemp("onnx") / "r18.onnx"
    models.export_onnx("resnet18", path)  # conv-BatchNormalization-relu, as PyTorch exports
    return path


def test_an_onnx_cnn_with_batch_norm_nodes_gets_the_expert_graph(onnx_resnet18: Path) -> None:
    expert = models.load(str(onnx_resnet18))
    stock = expert.on_graph("stock")
    assert (expert.graph, stock.graph) == ("expert", "stock")
    stock_names = [t.name for t in stock.extract_tasks(TARGET)]
    expert_names = [t.name for t in expert.extract_tasks(TARGET)]
    # stock: a batch-norm epilogue on each conv, and standalone relu / add+relu tasks
    assert sum("subtract" in n for n in stock_names) == 11
    assert sum(n.startswith(("fused_relu", "fused_add")) for n in stock_names) == 8
    # expert: no batch-norm arithmetic, no standalone elementwise task, relus fused
    assert not any("subtract" in n or "divide" in n for n in expert_names)
    assert not any(n.startswith(("fused_relu", "fused_add")) for n in expert_names)
    # every relu went into a convolution's task: 17 tasks less mean, the fc and the three 1x1
    # downsampling convs (no relu of their own); the flatten is a view, no task
    assert "reshape" in stock_names and "reshape" not in expert_names
    assert sum(bool(re.search(r"^fused_conv2d\d*_.*relu\d*$", n)) for n in expert_names) == 12
    # the 20 convolutions NHWC: two transposes more, the input's and the pooled features'
    # before the flatten (both once a run), none between the convolutions
    transposes = [n for n in expert_names if re.match(r"(fused_)?transpose", n)]
    assert sorted(transposes) == ["fused_transpose1_reshape", "transpose"]
    assert expert.graph_report(TARGET) == graph_passes.GraphReport(
        "expert", folded_convs=20, folded_ops=80, nhwc_convs=20, prepacked_tasks=16, tasks=19,
        calls=24, stock_tasks=22, stock_calls=40)
    assert expert.graph_report(TARGET).summary() == (
        "batch norm folded into 20 convolutions; 20 convolutions laid out NHWC; 22 tasks on "
        "stock's graph -> 19, 40 kernel calls a run -> 24; weights prepacked for 16 tasks")
    # in the model's own layout: the same folds, no transpose
    assert expert.on_graph("expert-nchw").graph_report(TARGET) == graph_passes.GraphReport(
        "expert-nchw", folded_convs=20, folded_ops=80, prepacked_tasks=16, tasks=17, calls=22,
        stock_tasks=22, stock_calls=40)


def test_a_bad_graph_is_refused_naming_the_graphs(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(ValueError,
                       match=r"graph must be one of 'expert', 'expert-nchw', "
                             r"'expert-exact', 'stock'.*'fast'"):
        msviz.Session("mlp", graph="fast")
    with pytest.raises(ValueError, match="graph must be one of"):
        models.build("mlp").on_graph("onnx")
    with pytest.raises(SystemExit) as exit_info:
        main(["tune", "mlp", "--graph", "fast"])
    assert exit_info.value.code == 2
    assert "--graph: invalid choice: 'fast'" in capsys.readouterr().err


@pytest.fixture(scope="module")
def tuned_block(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work_dir = tmp_path_factory.mktemp("graph") / "rb"
    session = msviz.Session("resnet-block", work_dir=work_dir, max_trials=4, trials_per_batch=2,
                            seed=1, end_to_end_check=False,
                            evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})
    session.start()
    assert session.wait(600) == "finished"
    return work_dir


def test_the_tuned_build_lays_the_weights_out_once_and_gives_the_same_output(
        tuned_block: Path) -> None:
    model = models.build("resnet-block")
    database = compat.JSONDatabase(work_dir=str(tuned_block))
    exe = model.compile(database, TARGET)
    text = exe.as_text()
    # the tuned kernels take their weights prepacked (the layout change folded at build time)
    assert "_prepacked" in text
    x = model.random_inputs(0)
    dev = tvm.cpu()
    out = relax.VirtualMachine(exe, dev)["main"](tvm.runtime.tensor(x[0])).numpy()
    with TARGET:
        plain = tvm.compile(model.mod, target=TARGET)  # stock's build of the same Relax module
    ref = relax.VirtualMachine(plain, dev)["main"](tvm.runtime.tensor(x[0])).numpy()
    assert np.abs(ref).max() > 1.0
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5 * np.abs(ref).max())


def test_a_work_dir_says_its_graph_and_is_rebuilt_on_it(tuned_block: Path) -> None:
    from msviz.engine.arguments import on_tuned_graph
    from msviz.records.model_profile import graph_of_run, model_of_run
    from msviz.records.sidecar import read_sidecar

    run = msviz.open(tuned_block)
    model = run.environment["model"]
    assert (model["graph"], model["graph_report"]["folded_convs"]) == ("expert", 2)
    entries = read_sidecar(tuned_block).other
    assert model_of_run(tuned_block, entries).graph == "expert"
    assert model_of_run(tuned_block, entries, models.build("resnet-block").on_graph(
        "stock")).graph == "expert"  # the line's graph, whatever model is passed
    # a line that does not say (msviz before the expert graph, stock's work dirs): the graph
    # whose tasks the records are of
    old = [dict(e, model={"name": "resnet-block", "source": "resnet-block"})
           if e.get("kind") == "environment" else e for e in entries]
    assert graph_of_run(old) is None
    # a line from before the expert graph laid convolutions out NHWC: its report has no
    # nhwc_convs, and its records are of the expert graph in NCHW
    before = [dict(e, model={**e["model"], "graph_report": {
        k: v for k, v in e["model"]["graph_report"].items() if k != "nhwc_convs"}})
        if e.get("kind") == "environment" else e for e in entries]
    assert graph_of_run(before) == "expert-nchw"
    # from before the polynomial exp/erf/tanh: NHWC, libm's exp/erf/tanh
    exact = [dict(e, model={**e["model"], "graph_report": {
        k: v for k, v in e["model"]["graph_report"].items() if k != "fast_math_ops"}})
        if e.get("kind") == "environment" else e for e in entries]
    assert graph_of_run(exact) == "expert-exact"
    stock = models.build("resnet-block").on_graph("stock")
    assert on_tuned_graph(stock, tuned_block, old, TARGET).graph == "expert"


def _transcendental_module(dtype: str = "float32") -> tvm.IRModule:
    """One output per op the expert graph lowers with polynomials, on one (6, 40) input."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((6, 40), dtype))
    op = relax.op
    with bb.function("main", [x]):
        with bb.dataflow():
            outs = [bb.emit(f(x)) for f in (
                op.exp, op.erf, op.tanh, op.sigmoid, op.nn.silu, op.nn.gelu, op.nn.gelu_tanh,
                lambda v: op.nn.softmax(v, axis=1), lambda v: op.nn.softmax(v, axis=0))]
            out = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(out)
    return bb.get()


def _numpy_transcendentals(x: np.ndarray) -> list[np.ndarray]:
    import math

    x = x.astype("float64")
    erf = np.vectorize(math.erf)
    sig = 1 / (1 + np.exp(-x))

    def softmax(v: np.ndarray, axis: int) -> np.ndarray:
        e = np.exp(v - v.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    return [np.exp(x), erf(x), np.tanh(x), sig, x * sig, x * 0.5 * (1 + erf(x / math.sqrt(2))),
            0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
            softmax(x, 1), softmax(x, 0)]


def _calls(mod: tvm.IRModule) -> set[str]:
    """The TIR math calls in a module's PrimFuncs (``T.exp``, ``T.erf``, ...)."""
    return set(re.findall(r"T\.(exp|erf|tanh|sigmoid)\(", mod.script()))


def test_exp_erf_tanh_are_polynomials_on_the_expert_graph_and_equal_numpys(
        tmp_path: Path) -> None:
    """On a CPU the expert graph lowers exp, erf, tanh and what uses them without libm's
    scalar calls; every output is float64 numpy's within 2e-6 relative (a value near zero:
    2e-7 absolute, 1e-6 for those multiplied by x); ``expert-exact`` keeps TVM's own lowering (libm's calls)."""
    mod = _transcendental_module()
    model = models.Model("ops", mod, inputs=[("x", (6, 40), "float32")],
                         description="nine transcendental ops")
    lowered, report = graph_passes.lower(mod, TARGET, "expert")
    assert report.fast_math_ops == 9
    assert report.summary().endswith("exp/erf/tanh vectorized in 9 ops")
    assert _calls(lowered) == set()
    exact, exact_report = graph_passes.lower(mod, TARGET, "expert-exact")
    assert exact_report.fast_math_ops == 0
    assert _calls(exact) == {"exp", "erf", "tanh", "sigmoid"}
    # the function names (the task names users read) are TVM's own
    names = {g.name_hint for g, f in lowered.functions_items() if type(f).__name__ == "PrimFunc"}
    assert names == {g.name_hint for g, f in exact.functions_items()
                     if type(f).__name__ == "PrimFunc"}
    x = np.random.default_rng(3).uniform(-9, 9, (6, 40)).astype("float32")
    for graph in ("expert", "expert-exact"):
        (tmp_path / graph).mkdir()
        exe = model.on_graph(graph).compile(
            compat.JSONDatabase(work_dir=str(tmp_path / graph)), TARGET)
        outs = relax.VirtualMachine(exe, tvm.cpu())["main"](tvm.runtime.tensor(x))
        for i, (out, ref) in enumerate(zip(outs, _numpy_transcendentals(x))):
            # silu, gelu, gelu_tanh: x (up to 9) times a float32 sum near 0 for x near -9
            atol = 1e-6 if i in (4, 5, 6) else 2e-7
            np.testing.assert_allclose(out.numpy(), ref, rtol=2e-6, atol=atol,
                                       err_msg=f"{graph}: output {i}")


def test_other_dtypes_keep_tvms_exp() -> None:
    lowered, report = graph_passes.lower(_transcendental_module("float16"), TARGET, "expert")
    assert report.fast_math_ops == 0
    assert {"exp", "tanh"} <= _calls(lowered)
