"""A tuned model against other runtimes, operator by operator, as plain data: ONNX Runtime's
profile parsed, its nodes matched to msviz's tasks, the per-task rows, and the ``runtimes``
entry a work dir's sidecar keeps (``msviz.vs_runtimes`` writes it; the Tasks tab and the report
read it back without running anything).

Matching (:func:`match_nodes`, pure): a task's *anchor* is the op its name starts with after
``fused_`` (``conv2d``, ``matmul``, ``dense``, ``batch_matmul``...). A convolution node (ORT's
``Conv``, ``FusedConv``...) matches a convolution task whose inputs hold a tensor of the node's
weight shape (OIHW, or OHWI as the NHWC expert graph lays it) and whose output has as many
elements as the node's; a ``MatMul`` / ``Gemm`` node matches a matmul-like task whose first
input and output have as many elements as the node's (ORT prepacks a Gemm's weight and leaves it
out of the profile); a pooling node (``MaxPool``, ``GlobalAveragePool``...) matches a pooling
task (``max_pool2d``, ``avg_pool2d``, ``adaptive_avg_pool2d``, or the ``mean`` over the image an
imported global pool becomes) whose first input and output have as many elements as the
node's. Where several tasks match a node (convolutions of one shape), the k-th such
node in ORT's order goes to the k-th such call in the model's order, each task taking at most as
many nodes as the model calls it. The nodes that match no task (ORT's layout reorders, the
elementwise ops it did not fuse...) are summed in ``other``.

The same concept at its other layers: :mod:`msviz.bench.runtimes`,
:mod:`msviz.engine.measure.runtimes`, :mod:`msviz.views.runtimes`.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["CONV_OPS", "MATMUL_OPS", "POOL_OPS", "RUNTIMES", "RUNTIMES_KIND", "anchor_of",
           "match_nodes", "parse_ort_profile", "recorded_runtimes", "task_rows"]

#: The sidecar kind of a runtime comparison.
RUNTIMES_KIND = "runtimes"
#: The runtimes a model can be compared against, and the pip package each needs.
RUNTIMES = {"onnxruntime": "onnxruntime", "openvino": "openvino"}
#: ONNX Runtime's convolution and matrix-product ops (after its graph optimizations).
CONV_OPS = frozenset({"Conv", "FusedConv", "NhwcFusedConv", "ConvTranspose", "QLinearConv",
                      "NhwcConv"})
MATMUL_OPS = frozenset({"MatMul", "Gemm", "FusedMatMul", "FusedGemm", "MatMulNBits",
                        "QLinearMatMul", "MatMulInteger"})
#: ONNX Runtime's pooling ops (its NCHWc and NHWC kernels included).
POOL_OPS = frozenset({"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
                      "NchwcMaxPool", "NchwcAveragePool", "NchwcGlobalAveragePool",
                      "NchwcGlobalMaxPool", "NhwcMaxPool", "QLinearAveragePool",
                      "QLinearGlobalAveragePool"})
_ANCHORS = {"conv1d": "conv", "conv2d": "conv", "conv3d": "conv", "conv2d_transpose": "conv",
            "matmul": "matmul", "dense": "matmul", "batch_matmul": "matmul",
            "max_pool1d": "pool", "max_pool2d": "pool", "max_pool3d": "pool",
            "avg_pool1d": "pool", "avg_pool2d": "pool", "avg_pool3d": "pool",
            "adaptive_avg_pool1d": "pool", "adaptive_avg_pool2d": "pool",
            "adaptive_avg_pool3d": "pool", "mean": "pool"}
_OP_KINDS = ((CONV_OPS, "conv"), (MATMUL_OPS, "matmul"), (POOL_OPS, "pool"))
_KERNEL_TIME = "_kernel_time"


def anchor_of(task_name: str) -> str | None:
    """``"conv"``, ``"matmul"``, ``"pool"`` or None: the kind of the first anchor op in a
    task's name (``fused_conv2d1_add_relu`` -> ``"conv"``; a trailing number of a deduplicated
    op is ignored)."""
    name = task_name[len("fused_"):] if task_name.startswith("fused_") else task_name
    words = [re.sub(r"\d+$", "", w) for w in name.split("_")]
    for i, word in enumerate(words):
        for width in (3, 2, 1):  # "adaptive_avg_pool2d", "batch_matmul" first
            joined = "_".join(words[i:i + width])
            if len(words[i:i + width]) == width and joined in _ANCHORS:
                return _ANCHORS[joined]
    return None


def _shapes(typed: Any) -> list[list[int]]:
    """``[{"float": [1, 16]}, ...]`` (ORT's ``input_type_shape``) as a list of shapes."""
    out = []
    for item in typed or ():
        if isinstance(item, Mapping):
            out += [list(map(int, s)) for s in item.values()]
    return out


def parse_ort_profile(events: Sequence[Mapping[str, Any]]) -> list[dict]:
    """ONNX Runtime's profiler trace (its JSON list, or only its ``Node`` events) as one row
    per node, in the order of its first run. Pure.

    Returns
    -------
    nodes : list of dict
        ``node`` (the name, ``_kernel_time`` cut off), ``op`` (``args.op_name``), ``inputs`` and
        ``outputs`` (shapes), ``us`` (the median of its ``dur`` over the runs, µs), ``runs``.
    """
    found: dict[str, dict] = {}
    for event in events:
        name = str(event.get("name", ""))
        if event.get("cat") != "Node" or not name.endswith(_KERNEL_TIME):
            continue
        args = event.get("args") or {}
        node = name[:-len(_KERNEL_TIME)]
        row = found.setdefault(node, {
            "node": node, "op": str(args.get("op_name", "")),
            "inputs": _shapes(args.get("input_type_shape")),
            "outputs": _shapes(args.get("output_type_shape")), "durs": []})
        row["durs"].append(float(event.get("dur", 0.0)))
    return [{"node": r["node"], "op": r["op"], "inputs": r["inputs"], "outputs": r["outputs"],
             "us": statistics.median(r["durs"]), "runs": len(r["durs"])}
            for r in found.values()]


def _size(shape: Sequence[int] | None) -> int | None:
    return None if shape is None else math.prod(shape)


def _weight_layouts(shape: Sequence[int]) -> set[tuple]:
    """An ONNX convolution weight's shape (O, I, kH, kW...) as the task may hold it: as it is
    (NCHW) or with the input channels last (OHWI: msviz's expert graph lays CPU convolutions
    out NHWC)."""
    shape = tuple(shape)
    return {shape, shape[:1] + shape[2:] + shape[1:2]} if len(shape) > 2 else {shape}


def _fits(node: Mapping[str, Any], task: Mapping[str, Any], kind: str) -> bool:
    inputs, outputs = node.get("inputs") or [], node.get("outputs") or []
    if not outputs or not task.get("inputs") or _size(outputs[0]) != _size(task.get("output")):
        return False
    if kind == "conv":
        return len(inputs) > 1 and bool(_weight_layouts(inputs[1]) & {
            tuple(s) for s in task["inputs"][1:]})
    return bool(inputs) and _size(inputs[0]) == _size(task["inputs"][0])


def match_nodes(nodes: Sequence[Mapping[str, Any]], tasks: Sequence[Mapping[str, Any]]
                ) -> dict:
    """ORT's nodes (:func:`parse_ort_profile`) matched to msviz's tasks. Pure.

    Parameters
    ----------
    nodes : sequence of dict
        ``node``, ``op``, ``inputs``, ``outputs``, ``us``, in ORT's order.
    tasks : sequence of dict
        ``task`` (its name), ``inputs`` (the shapes of its inputs), ``output`` (its output's
        shape), ``calls`` (per model run) and ``order`` (where the model first calls it; None:
        never).

    Returns
    -------
    matched : dict
        ``tasks`` (task name -> the nodes matched to it, in order), ``other`` (the nodes of no
        task), ``nodes`` (how many), ``matched`` (how many matched a task).
    """
    by_task: dict[str, list[str]] = {t["task"]: [] for t in tasks}
    ordered = sorted(tasks, key=lambda t: (t.get("order") is None, t.get("order") or 0))
    other = []
    for node in nodes:
        op = node.get("op", "")
        kind = next((k for ops, k in _OP_KINDS if op in ops), None)
        fits = [t for t in ordered if kind is not None and anchor_of(t["task"]) == kind
                and _fits(node, t, kind)]
        free = [t for t in fits if len(by_task[t["task"]]) < max(1, int(t.get("calls") or 1))]
        chosen = (free or fits or [None])[0]
        if chosen is None:
            other.append(node["node"])
        else:
            by_task[chosen["task"]].append(node["node"])
    return {"tasks": by_task, "other": other, "nodes": len(nodes),
            "matched": len(nodes) - len(other)}


def _per_s(flop: float, us: float | None) -> float | None:
    return None if not us or not flop else flop / (us * 1e3)


def _scale(whole_us: float | None, parts_us: float) -> float | None:
    return whole_us / parts_us if whole_us and parts_us > 0 else None


def task_rows(tasks: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
              in_model_us: Mapping[str, float | None], peak_gflops: float | None, *,
              tvm_whole_us: float | None = None, ort_whole_us: float | None = None) -> dict:
    """Per task, its time in the model beside ORT's for the nodes it covers. Pure.

    ``tasks`` as :func:`match_nodes` takes them, with ``flop`` (per call); ``in_model_us`` is
    each task's time per call inside the tuned model (the model profile's). Rows are sorted by
    ``gap`` (``tvm_us / ort_us``), largest first, the tasks ORT has no node for last.

    The profiles are taken in other runs than the whole-model timings, by instrumented runs,
    maybe in the machine's slow mode (ORT's profile of ResNet-50 summed to 1.45x its whole
    run). Given ``tvm_whole_us`` / ``ort_whole_us`` (each side's whole-model time in the same
    comparison), each side's times are scaled to add up to it: the TVM tasks the profile timed
    (one it did not time is no kernel call of its own in the build, or too short to time) and
    all of ORT's nodes, "other" included. The per-task gaps then agree with the whole
    model's.

    Returns
    -------
    data : dict
        ``tasks`` (rows: ``task``, ``calls``, ``flop`` (per run: per call x calls),
        ``tvm_us`` and ``ort_us`` (per run), ``gap``, ``tvm_gflops``, ``ort_gflops``,
        ``tvm_peak`` and ``ort_peak`` (shares of ``peak_gflops``), ``nodes``, ``ops``),
        ``other`` (rows ``node``, ``op``, ``us``), ``other_us``, ``nodes``, ``matched``,
        ``tvm_scale`` and ``ort_scale`` (the factors applied; None: not scaled).
    """
    matched = match_nodes(nodes, tasks)
    by_name = {n["node"]: n for n in nodes}
    tvm_scale = _scale(tvm_whole_us, sum(
        in_model_us[t["task"]] * int(t.get("calls") or 0) for t in tasks
        if in_model_us.get(t["task"]) is not None))
    ort_scale = _scale(ort_whole_us, sum(float(n["us"]) for n in nodes))
    rows = []
    for t in tasks:
        names = matched["tasks"][t["task"]]
        per_call = in_model_us.get(t["task"])
        calls = int(t.get("calls") or 0)
        flop = float(t.get("flop") or 0.0) * calls
        tvm = None if per_call is None else per_call * calls * (tvm_scale or 1.0)
        ort = sum(by_name[n]["us"] for n in names) * (ort_scale or 1.0) if names else None
        tvm_gflops, ort_gflops = _per_s(flop, tvm), _per_s(flop, ort)
        rows.append({
            "task": t["task"], "calls": calls, "flop": flop, "tvm_us": tvm, "ort_us": ort,
            "gap": tvm / ort if tvm is not None and ort else None,
            "tvm_gflops": tvm_gflops, "ort_gflops": ort_gflops,
            "tvm_peak": tvm_gflops / peak_gflops if tvm_gflops and peak_gflops else None,
            "ort_peak": ort_gflops / peak_gflops if ort_gflops and peak_gflops else None,
            "nodes": names, "ops": sorted({by_name[n]["op"] for n in names})})
    rows.sort(key=lambda r: (r["gap"] is None, -(r["gap"] or 0.0)))
    other = [{"node": n, "op": by_name[n]["op"], "us": by_name[n]["us"] * (ort_scale or 1.0)}
             for n in matched["other"]]
    return {"tasks": rows, "other": other, "other_us": sum(r["us"] for r in other),
            "nodes": matched["nodes"], "matched": matched["matched"],
            "tvm_scale": tvm_scale, "ort_scale": ort_scale}


def recorded_runtimes(run: Any) -> dict | None:
    """The last ``runtimes`` entry of a run's sidecar (None: there is none)."""
    return next((e for e in reversed(run.sidecar_entries) if e.get("kind") == RUNTIMES_KIND),
                None)
