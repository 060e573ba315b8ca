"""A hand-written ``runtimes`` sidecar line (what ``msviz.vs_runtimes`` writes) and a small ONNX
Runtime profile, shared by the record, view and browser tests."""

from __future__ import annotations

import copy
from typing import Any

#: ORT's trace of two runs of a block: two 3x3 convs of one shape (weights 16x16x3x3), a Gemm
#: (its weight prepacked: only the bias shows), a reorder, and what is no node (a session event,
#: a fence).
ORT_EVENTS = [
    {"cat": "Session", "name": "model_run", "dur": 900, "args": {}},
    *[event for run in ({"a": 30, "b": 20, "g": 5, "r": 4}, {"a": 34, "b": 18, "g": 7, "r": 6})
      for event in (
          {"cat": "Node", "name": "ReorderInput_kernel_time", "dur": run["r"],
           "args": {"op_name": "ReorderInput", "input_type_shape": [{"float": [1, 16, 8, 8]}],
                    "output_type_shape": [{"float": [1, 16, 8, 8]}]}},
          {"cat": "Node", "name": "ReorderInput_fence_before", "dur": 0, "args": {}},
          {"cat": "Node", "name": "conv_a_kernel_time", "dur": run["a"],
           "args": {"op_name": "FusedConv",
                    "input_type_shape": [{"float": [1, 16, 8, 8]}, {"float": [16, 16, 3, 3]},
                                         {"float": [16]}],
                    "output_type_shape": [{"float": [1, 16, 8, 8]}]}},
          {"cat": "Node", "name": "conv_b_kernel_time", "dur": run["b"],
           "args": {"op_name": "Conv",
                    "input_type_shape": [{"float": [1, 16, 8, 8]}, {"float": [16, 16, 3, 3]},
                                         {"float": [16]}],
                    "output_type_shape": [{"float": [1, 16, 8, 8]}]}},
          {"cat": "Node", "name": "/MatMulAddFusion_kernel_time", "dur": run["g"],
           "args": {"op_name": "Gemm",
                    "input_type_shape": [{"float": [1, 1024]}, {"float": [10]}],
                    "output_type_shape": [{"float": [1, 10]}]}})],
]

#: The model's tasks as :func:`msviz.bench.runtimes.task_specs` gives them: the residual conv
#: (its extra input x) is listed first but called second.
TASKS = [
    {"task": "fused_conv2d_add_add1_relu", "inputs": [[1, 16, 8, 8], [16, 16, 3, 3],
                                                      [1, 16, 1, 1], [1, 16, 8, 8]],
     "output": [1, 16, 8, 8], "calls": 1, "flop": 300000.0, "order": 1},
    {"task": "fused_conv2d_add_relu", "inputs": [[1, 16, 8, 8], [16, 16, 3, 3], [1, 16, 1, 1]],
     "output": [1, 16, 8, 8], "calls": 1, "flop": 296000.0, "order": 0},
    {"task": "fused_matmul_add", "inputs": [[1, 1024], [1024, 10], [10]], "output": [1, 10],
     "calls": 1, "flop": 20490.0, "order": 3},
    {"task": "softmax", "inputs": [[1, 10]], "output": [1, 10], "calls": 1, "flop": 50.0,
     "order": 4},
]

#: A ``runtimes`` line: resnet-block-like, against ONNX Runtime and OpenVINO.
ENTRY: dict[str, Any] = {
    "v": 1, "kind": "runtimes", "timestamp": "2026-11-28T01:00:00.000+00:00",
    "model": "resnet-block", "cpu": "Test CPU", "threads": 2, "reference": "onnxruntime",
    "rounds": 2, "draws": 1, "runtimes": ["onnxruntime", "openvino"],
    "peak": {"gflops": 100.0, "avx512_gflops": 100.0, "avx2_gflops": 50.0, "threads": 2,
             "cpu": "Test CPU", "error": None},
    "whole": [
        {"runtime": "onnxruntime", "runtime_us": 40.0, "tvm_us": 80.0,
         "runtime_rounds_us": [40.0, 44.0], "tvm_rounds_us": [80.0, 99.0], "draw": [0, 0],
         "gap": 2.125, "gap_low": 2.0, "gap_high": 2.25, "draw_gaps": [2.125],
         "verdict": "no verdict: too few rounds", "spread": 1.1},
        {"runtime": "openvino", "runtime_us": 100.0, "tvm_us": 80.0,
         "runtime_rounds_us": [100.0, 120.0], "tvm_rounds_us": [80.0, 99.0], "draw": [0, 0],
         "gap": 0.8, "gap_low": 0.8, "gap_high": 0.825, "draw_gaps": [0.8],
         "verdict": "no verdict: too few rounds", "spread": 1.2},
    ],
    "outputs": {"tvm": {"max_abs_diff": [2e-06], "match": True},
                "onnxruntime": {"max_abs_diff": [0.0], "match": True},
                "openvino": {"max_abs_diff": [0.5], "match": False}},
    "tasks": [
        {"task": "fused_conv2d_add_relu", "calls": 1, "flop": 296000.0, "tvm_us": 10.0,
         "ort_us": 20.0, "gap": 0.5, "tvm_gflops": 29.6, "ort_gflops": 14.8,
         "tvm_peak": 0.296, "ort_peak": 0.148, "nodes": ["conv_a"], "ops": ["FusedConv"]},
        {"task": "fused_conv2d_add_add1_relu", "calls": 1, "flop": 300000.0, "tvm_us": 60.0,
         "ort_us": 20.0, "gap": 3.0, "tvm_gflops": 5.0, "ort_gflops": 15.0, "tvm_peak": 0.05,
         "ort_peak": 0.15, "nodes": ["conv_b"], "ops": ["Conv"]},
        {"task": "softmax", "calls": 1, "flop": 50.0, "tvm_us": 2.0, "ort_us": None,
         "gap": None, "tvm_gflops": 0.025, "ort_gflops": None, "tvm_peak": 0.00025,
         "ort_peak": None, "nodes": [], "ops": []},
    ],
    "other": [{"node": "ReorderInput", "op": "ReorderInput", "us": 5.0}],
    "other_us": 5.0, "ort_nodes": 3, "ort_matched": 2, "openvino_ops": [],
    "tvm_scale": 0.9, "ort_scale": 0.7,
}


def entry() -> dict[str, Any]:
    """A fresh copy of :data:`ENTRY`."""
    return copy.deepcopy(ENTRY)
