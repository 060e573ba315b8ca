"""ONNX Runtime's profile parsed and matched to msviz's tasks (msviz/records/runtimes.py): pure
functions on a hand-written trace and task list."""

from __future__ import annotations

import pytest

from msviz.records.runtimes import anchor_of, match_nodes, parse_ort_profile, task_rows
from tests.runtimes_data import ORT_EVENTS, TASKS


def test_parse_ort_profile_one_row_per_node_median_over_runs() -> None:
    assert parse_ort_profile(ORT_EVENTS) == [
        {"node": "ReorderInput", "op": "ReorderInput", "inputs": [[1, 16, 8, 8]],
         "outputs": [[1, 16, 8, 8]], "us": 5.0, "runs": 2},
        {"node": "conv_a", "op": "FusedConv",
         "inputs": [[1, 16, 8, 8], [16, 16, 3, 3], [16]], "outputs": [[1, 16, 8, 8]],
         "us": 32.0, "runs": 2},
        {"node": "conv_b", "op": "Conv", "inputs": [[1, 16, 8, 8], [16, 16, 3, 3], [16]],
         "outputs": [[1, 16, 8, 8]], "us": 19.0, "runs": 2},
        {"node": "/MatMulAddFusion", "op": "Gemm", "inputs": [[1, 1024], [10]],
         "outputs": [[1, 10]], "us": 6.0, "runs": 2},
    ]


@pytest.mark.parametrize(("name", "anchor"), [
    ("fused_conv2d1_add_relu", "conv"), ("fused_conv2d_add_add1_relu", "conv"),
    ("fused_matmul3_add", "matmul"), ("fused_batch_matmul_add", "matmul"),
    ("fused_dense_add", "matmul"), ("fused_conv2d_transpose_add", "conv"),
    ("softmax", None), ("fused_add_relu", None), ("adaptive_avg_pool2d", "pool"),
    ("max_pool2d", "pool"), ("max_pool2d1", "pool"), ("mean", "pool"), ("fused_avg_pool2d_add",
    "pool"), ("fused_transpose1_reshape", None), ("fused_layer_norm", None),
])
def test_anchor_of(name: str, anchor: str | None) -> None:
    assert anchor_of(name) == anchor


def test_same_shaped_convs_go_to_the_tasks_in_the_models_order() -> None:
    matched = match_nodes(parse_ort_profile(ORT_EVENTS), TASKS)
    assert matched == {
        # ORT's first conv is the model's first call (order 0), though listed second
        "tasks": {"fused_conv2d_add_add1_relu": ["conv_b"], "fused_conv2d_add_relu": ["conv_a"],
                  "fused_matmul_add": ["/MatMulAddFusion"], "softmax": []},
        "other": ["ReorderInput"], "nodes": 4, "matched": 3}


def test_a_node_of_no_task_shape_is_other() -> None:
    nodes = [{"node": "c", "op": "Conv", "inputs": [[1, 16, 8, 8], [32, 16, 3, 3]],
              "outputs": [[1, 32, 8, 8]], "us": 1.0}]
    assert match_nodes(nodes, TASKS)["other"] == ["c"]


def test_a_conv_node_matches_the_nhwc_task_of_its_weight_in_ohwi() -> None:
    # the expert graph's NHWC task holds ORT's OIHW weight (32, 16, 3, 3) as OHWI
    node = {"node": "c", "op": "Conv", "inputs": [[1, 16, 8, 8], [32, 16, 3, 3]],
            "outputs": [[1, 32, 8, 8]], "us": 1.0}
    nhwc = {"task": "fused_conv2d_add", "inputs": [[1, 8, 8, 16], [32, 3, 3, 16], [1, 1, 1, 32]],
            "output": [1, 8, 8, 32], "calls": 1, "order": 0}
    other = dict(nhwc, task="fused_conv2d1_add", inputs=[[1, 8, 8, 16], [32, 3, 16, 3]])
    assert match_nodes([node], [other, nhwc])["tasks"] == {"fused_conv2d1_add": [],
                                                           "fused_conv2d_add": ["c"]}
    assert match_nodes([node], [other])["other"] == ["c"]


def test_pooling_nodes_match_the_pooling_tasks_of_their_sizes() -> None:
    # ResNet's stem pool and its global average pool, as ORT's NCHWc kernels profile them
    # (blocked NCHW) and as the NHWC expert graph's tasks hold them
    nodes = [
        {"node": "pool", "op": "NchwcMaxPool", "inputs": [[1, 8, 80, 80, 8]],
         "outputs": [[1, 8, 40, 40, 8]], "us": 30.0},
        {"node": "gap", "op": "GlobalAveragePool", "inputs": [[1, 2048, 5, 5]],
         "outputs": [[1, 2048, 1, 1]], "us": 4.0},
        {"node": "relu", "op": "Relu", "inputs": [[1, 2048, 5, 5]],
         "outputs": [[1, 2048, 5, 5]], "us": 2.0}]
    tasks = [
        {"task": "max_pool2d", "inputs": [[1, 80, 80, 64]], "output": [1, 40, 40, 64],
         "calls": 1, "order": 1},
        {"task": "mean", "inputs": [[1, 5, 5, 2048]], "output": [1, 1, 1, 2048],
         "calls": 1, "order": 2},
        # an elementwise task of the same sizes is no pool
        {"task": "fused_add_relu", "inputs": [[1, 5, 5, 2048]], "output": [1, 5, 5, 2048],
         "calls": 1, "order": 0}]
    assert match_nodes(nodes, tasks) == {
        "tasks": {"max_pool2d": ["pool"], "mean": ["gap"], "fused_add_relu": []},
        "other": ["relu"], "nodes": 3, "matched": 2}
    # a pool of other sizes (a 3x3 stride-1 pool) matches no task
    other = dict(nodes[0], outputs=[[1, 8, 80, 80, 8]])
    assert match_nodes([other], tasks)["other"] == ["pool"]


def test_task_rows_sorted_by_gap_with_gflops_and_peak_share() -> None:
    data = task_rows(TASKS, parse_ort_profile(ORT_EVENTS),
                     {"fused_conv2d_add_add1_relu": 57.0, "fused_conv2d_add_relu": 16.0,
                      "fused_matmul_add": 3.0, "softmax": 1.0}, peak_gflops=100.0)
    assert [(r["task"], r["tvm_us"], r["ort_us"], r["gap"]) for r in data["tasks"]] == [
        ("fused_conv2d_add_add1_relu", 57.0, 19.0, 3.0),
        ("fused_conv2d_add_relu", 16.0, 32.0, 0.5),  # a tie keeps the tasks' order
        ("fused_matmul_add", 3.0, 6.0, 0.5),
        ("softmax", 1.0, None, None)]
    conv = data["tasks"][0]
    assert conv["tvm_gflops"] == pytest.approx(300000 / 57e3)
    assert conv["ort_peak"] == pytest.approx(300000 / 19e3 / 100)
    assert conv["ops"] == ["Conv"] and conv["nodes"] == ["conv_b"]
    assert (data["other"], data["other_us"], data["nodes"], data["matched"]) == (
        [{"node": "ReorderInput", "op": "ReorderInput", "us": 5.0}], 5.0, 4, 3)


def test_task_rows_scaled_to_each_sides_whole_model_time() -> None:
    # ORT's profiled nodes add up to 62 µs a run (5 + 32 + 19 + 6), its whole run took 31 in
    # the comparison; TVM's tasks to 77, its whole run 38.5: both sides' times are halved
    in_model = {"fused_conv2d_add_add1_relu": 57.0, "fused_conv2d_add_relu": 16.0,
                "fused_matmul_add": 3.0, "softmax": 1.0}
    data = task_rows(TASKS, parse_ort_profile(ORT_EVENTS), in_model, peak_gflops=100.0,
                     tvm_whole_us=38.5, ort_whole_us=31.0)
    assert (data["tvm_scale"], data["ort_scale"]) == (0.5, 0.5)
    assert [(r["task"], r["tvm_us"], r["ort_us"], r["gap"]) for r in data["tasks"]] == [
        ("fused_conv2d_add_add1_relu", 28.5, 9.5, 3.0),
        ("fused_conv2d_add_relu", 8.0, 16.0, 0.5),
        ("fused_matmul_add", 1.5, 3.0, 0.5),
        ("softmax", 0.5, None, None)]
    assert data["tasks"][0]["tvm_gflops"] == pytest.approx(300000 / 28.5e3)
    assert (data["other"], data["other_us"]) == (
        [{"node": "ReorderInput", "op": "ReorderInput", "us": 2.5}], 2.5)
    # a task the profile did not time (no kernel call of its own in the build; ResNet-50's
    # transpose-reshape): the timed ones are scaled to the whole, 76 µs to 38 here
    partial = dict(in_model, softmax=None)
    data = task_rows(TASKS, parse_ort_profile(ORT_EVENTS), partial, peak_gflops=100.0,
                     tvm_whole_us=38.0, ort_whole_us=31.0)
    assert (data["tvm_scale"], data["ort_scale"]) == (0.5, 0.5)
    assert [(r["task"], r["tvm_us"]) for r in data["tasks"]] == [
        ("fused_conv2d_add_add1_relu", 28.5), ("fused_conv2d_add_relu", 8.0),
        ("fused_matmul_add", 1.5), ("softmax", None)]
    # and none timed: nothing to scale
    data = task_rows(TASKS, parse_ort_profile(ORT_EVENTS), dict.fromkeys(in_model),
                     peak_gflops=100.0, tvm_whole_us=38.0, ort_whole_us=31.0)
    assert data["tvm_scale"] is None
    # without the whole-model times nothing is scaled
    data = task_rows(TASKS, parse_ort_profile(ORT_EVENTS), in_model, peak_gflops=100.0)
    assert (data["tvm_scale"], data["ort_scale"]) == (None, None)


def test_a_task_called_twice_takes_two_nodes() -> None:
    tasks = [{**TASKS[1], "calls": 2, "order": 0}]
    matched = match_nodes(parse_ort_profile(ORT_EVENTS), tasks)
    assert matched["tasks"] == {"fused_conv2d_add_relu": ["conv_a", "conv_b"]}
