"""``msviz.vs_runtimes`` (msviz/workflows/vs_runtimes.py): a resnet-block tuned 8 trials against
ONNX Runtime for real (outputs match, the sidecar line, per-task rows for its conv tasks), and
what it refuses, named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import msviz
from msviz.errors import MissingExtraError, MsvizError
from msviz.records.runtimes import recorded_runtimes
from tests.conftest import require
from tests.engine.conftest import TINY


@pytest.fixture(scope="module")
def resnet_block_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """resnet-block tuned 8 trials (its two conv tasks), the end-to-end check on one draw."""
    from msviz.bench import draws

    work_dir = tmp_path_factory.mktemp("vs-runtimes") / "wd"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(draws, "DEFAULT_DRAWS", 1)  # read when the check runs
        session = msviz.Session("resnet-block", work_dir=work_dir, max_trials=8,
                                **{**TINY, "trials_per_batch": 4})
        session.start()
        assert session.wait(600) == "finished", session.end_reason
    return work_dir


def test_against_onnxruntime_end_to_end(resnet_block_dir: Path) -> None:
    require("onnxruntime", "msviz[compare]")
    require("onnx", "msviz[compare]")
    result = msviz.vs_runtimes(resnet_block_dir, ("onnxruntime",), rounds=2, draws=1)
    data = result.data
    assert data["outputs"]["tvm"]["match"] is True, data["outputs"]
    assert data["outputs"]["tvm"]["max_abs_diff"][0] < 1e-3
    (whole,) = data["whole"]
    assert whole["runtime"] == "onnxruntime" and len(whole["runtime_rounds_us"]) == 2
    assert whole["gap"] == pytest.approx(
        sorted(t / r for t, r in zip(whole["tvm_rounds_us"], whole["runtime_rounds_us"]))[0],
        rel=1) and whole["gap_low"] <= whole["gap"] <= whole["gap_high"]
    # per task: both conv tasks, each with ORT's Conv node and TVM's time in the model
    rows = {r["task"]: r for r in data["tasks"]}
    convs = [t.name for t in msviz.models.load("resnet-block").extract_tasks("llvm")
             if "conv2d" in t.name]
    # and the expert graph's two layout changes (NCHW input to NHWC and back): TVM's time
    # that ORT never spends, no ORT node, listed after the tasks with a gap
    layout = [t.name for t in msviz.models.load("resnet-block").extract_tasks("llvm")
              if t.name.startswith("transpose")]
    assert sorted(rows) == sorted(convs + layout) and len(convs) == len(layout) == 2
    assert [r["task"] for r in data["tasks"]][2:] == [r["task"] for r in data["tasks"]
                                                       if r["task"] in layout]
    for name in layout:
        assert rows[name]["nodes"] == [] and rows[name]["ort_us"] is None
        assert rows[name]["tvm_us"] > 0 and rows[name]["gap"] is None
    for name in convs:
        assert rows[name]["ops"] and all("Conv" in op for op in rows[name]["ops"]), rows
        assert rows[name]["tvm_us"] > 0 and rows[name]["ort_us"] > 0
        assert rows[name]["gap"] == pytest.approx(rows[name]["tvm_us"] / rows[name]["ort_us"])
    assert data["ort_matched"] == 2 and data["ort_nodes"] >= 2
    assert data["peak"]["gflops"] is None or data["peak"]["gflops"] > 0
    # each side's per-task times add up to its whole-model time in this comparison
    assert data["ort_scale"] is not None and sum(
        r["ort_us"] for r in data["tasks"] if r["ort_us"] is not None) + data["other_us"] \
        == pytest.approx(whole["runtime_us"])
    assert data["tvm_scale"] is not None  # the recorded profile timed the tasks
    assert sum(r["tvm_us"] for r in data["tasks"] if r["tvm_us"] is not None) \
        == pytest.approx(whole["tvm_us"])
    # the peak measured before and after the timing (the session's recorded model profile is
    # used: no profiling, no third sample), the largest kept
    samples = data["peak"]["samples_gflops"]
    assert len(samples) == 2 and data["peak"]["gflops"] == max(
        (x for x in samples if x), default=None)
    # the sidecar line: msviz.open reads it back without running anything
    recorded = recorded_runtimes(msviz.open(resnet_block_dir))
    assert recorded is not None and recorded["whole"] == data["whole"]
    assert "onnxruntime" in str(result) and len(result.tasks) == 4


def test_an_onnx_file_of_other_inputs_is_named(resnet_block_dir: Path, tmp_path: Path) -> None:
    require("onnx", "msviz[compare]")
    require("onnxruntime", "msviz[compare]")
    from msviz.models.onnx_export import export_onnx

    other = export_onnx("convnet", tmp_path / "convnet.onnx")
    with pytest.raises(MsvizError, match=r"convnet\.onnx does not take model 'resnet-block'"
                       r"'s inputs: it takes x \[1, 3, 32, 32\] float32; the model takes x "
                       r"\[1, 16, 16, 16\] float32"):
        msviz.vs_runtimes(resnet_block_dir, ("onnxruntime",), onnx=other, draws=1)


def test_an_unknown_runtime_names_the_accepted_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown runtime\(s\) \['tensorrt'\]: vs_runtimes "
                       r"compares against 'onnxruntime', 'openvino'"):
        msviz.vs_runtimes(tmp_path, ("onnxruntime", "tensorrt"))


def test_a_runtime_not_installed_says_what_to_pip_install(tmp_path: Path,
                                                           monkeypatch: Any) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "openvino" else real(name, *a))
    with pytest.raises(MissingExtraError, match=r"openvino is not installed: pip install "
                       r"openvino \(or pip install msviz\[compare\]\)"):
        msviz.vs_runtimes(tmp_path, ("openvino",))


def test_a_missing_work_dir_is_named(tmp_path: Path) -> None:
    require("onnxruntime", "msviz[compare]")
    with pytest.raises(FileNotFoundError, match=r"nowhere is not a work dir \(it does not "
                       "exist\\)"):
        msviz.vs_runtimes(tmp_path / "nowhere", ("onnxruntime",))
