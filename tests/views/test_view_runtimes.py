"""The runtimes view (msviz/views/runtimes.py): the whole info against a hand-written expected
one, the figure's bars and the tables."""

from __future__ import annotations

from typing import Any

import pytest

from msviz.errors import MsvizWarning
from msviz.views.runtimes import (
    RuntimesInfo,
    RuntimeTask,
    RuntimeWhole,
    runtimes_figure,
    runtimes_html,
    runtimes_info,
)
from tests.runtimes_data import entry


def test_runtimes_info_whole(same: Any) -> None:
    expected = RuntimesInfo(
        model="resnet-block", cpu="Test CPU", threads=2, peak_gflops=100.0,
        reference="onnxruntime", tvm_match=True, tvm_max_abs_diff=2e-06,
        whole=(RuntimeWhole("onnxruntime", 40.0, 80.0, 2.125, 2.0, 2.25, 1.1, True, 0.0,
                            "no verdict: too few rounds"),
               RuntimeWhole("openvino", 100.0, 80.0, 0.8, 0.8, 0.825, 1.2, False, 0.5,
                            "no verdict: too few rounds")),
        tasks=(  # largest gap first, the task ORT has no node for last
            RuntimeTask("fused_conv2d_add_add1_relu", 1, 60.0, 20.0, 3.0, 5.0, 15.0, 0.05,
                        0.15, ("Conv",)),
            RuntimeTask("fused_conv2d_add_relu", 1, 10.0, 20.0, 0.5, 29.6, 14.8, 0.296, 0.148,
                        ("FusedConv",)),
            RuntimeTask("softmax", 1, 2.0, None, None, 0.025, None, 0.00025, None, ())),
        other_us=5.0, other_nodes=1, nodes=3, matched=2, rounds=2, draws=1, tvm_scale=0.9,
        ort_scale=0.7)
    assert same(runtimes_info(entry()), expected)


def test_empty_runtimes_info_warns_and_draws_a_note() -> None:
    with pytest.warns(MsvizWarning, match="no runtime comparison"):
        info = runtimes_info(None)
    assert (info.whole, info.tasks, info.nodes) == ((), (), 0)
    fig = runtimes_figure(info)
    assert fig.layout.title.text == "TVM in the model vs ONNX Runtime" and not fig.data
    assert "no per-task comparison" in fig.layout.annotations[0].text


def test_runtimes_figure_bars_sorted_by_gap() -> None:
    fig = runtimes_figure(runtimes_info(entry()))
    tvm, ort = fig.data
    assert list(tvm.y) == ["fused_conv2d_add_add1_relu", "fused_conv2d_add_relu", "softmax",
                           "other (ORT nodes of no task)"]
    assert list(tvm.x) == [60.0, 10.0, 2.0, None]
    assert list(ort.x) == [20.0, 20.0, None, 5.0]
    assert list(tvm.text) == ["3.00x", "0.50x", "-", ""]
    assert (tvm.name, ort.name) == ("TVM (tuned)", "ONNX Runtime")


def test_runtimes_html_tables() -> None:
    text = runtimes_html(runtimes_info(entry()))
    assert text.count("msviz-runtime-row") == 2 and text.count("msviz-runtime-task'") == 3
    assert "DIFFER" in text and "2 of 3 ONNX Runtime nodes matched" in text
    assert "fp32 peak 100.0 GFLOPS" in text and "5.0%" in text  # TVM's share on the worst task
    assert ("per-task times scaled to add up to each side's whole-model time (TVM's profiled "
            "calls x0.90, ONNX Runtime's profiled nodes x0.70)") in text
    unscaled = entry()
    del unscaled["tvm_scale"], unscaled["ort_scale"]  # a line from before the scaling
    assert "scaled" not in runtimes_html(runtimes_info(unscaled))
    assert runtimes_html(None) == ""
