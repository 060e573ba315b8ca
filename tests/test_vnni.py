"""Auto-tensorization with AVX-512 VNNI on this CPU: msviz's fixed intrinsic, default sessions
that tensorize the int8 workloads, and clear warnings when an intrinsic cannot be used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import msviz
from msviz import compat, workloads
from msviz.engine import RuleSet
from msviz.trace import code
from msviz.workloads.int8 import pack_weight
from tests.engine.conftest import TINY as ENGINE_TINY

HOST = compat.make_target("llvm")
HAS_VNNI = compat.target_has_features(HOST, ("avx512vnni",))
needs_vnni = pytest.mark.skipif(not HAS_VNNI, reason="this CPU has no AVX-512 VNNI")

#: The engine tests' tiny knobs, each time the mean of 2 runs.
TINY: dict[str, Any] = {**ENGINE_TINY,
                        "evaluator_config": {"number": 2, "repeat": 1, "min_repeat_ms": 0}}


def _dense_inputs(m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    return a, w, a.astype(np.int32) @ w.T.astype(np.int32)


def _run(lib: Any, *arrays: np.ndarray) -> np.ndarray:
    import tvm

    args = [tvm.runtime.tensor(x) for x in arrays]
    lib(*args)
    return args[-1].numpy()


def _hand_tensorized(intrin: str, workload: str = "I8DP-0") -> Any:
    """``workload`` (I8DP-0) tiled by hand so its inner 16x4 loops are one ``intrin`` call."""
    sch = compat.Schedule(workloads.get(workload).mod)
    block = sch.get_sblock("C")
    i, j, k = sch.get_loops(block)
    jo, ji = sch.split(j, [None, 16])
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(i, jo, ko, ji, ki)
    sch.decompose_reduction(block, ko)
    sch.tensorize(ji, intrin)
    return sch


@needs_vnni
def test_stock_vnni_still_fails_and_msvizs_builds_right() -> None:
    """The pinned TVM's dot_16x4_vnni fails LLVM 22's verifier; msviz's computes numpy's answer.

    When the first half fails, TVM's implementation builds: msviz's replacement
    (``compat._vnni_impl``) can go.
    """
    import tvm

    compat.register_tensor_intrins()
    stock = tvm.s_tir.TensorIntrin.get(compat.VNNI_INTRIN).desc
    tvm.s_tir.TensorIntrin.register("msviz_test_stock_vnni", stock, compat.stock_vnni_impl(),
                                    override=True)
    assert compat.vnni_needs_fix(), "LLVM < 22: the stock implementation should build again"
    with pytest.raises(Exception, match="vpdpbusd"):
        code.build(_hand_tensorized("msviz_test_stock_vnni"), HOST)

    sch = _hand_tensorized(compat.VNNI_INTRIN)  # msviz's, registered under the stock name
    lib = code.build(sch, HOST)
    assert "vpdpbusd" in lib.inspect_source("asm")
    a, w, want = _dense_inputs(64, 64, 64)
    got = _run(lib, a, pack_weight(w), np.zeros((64, 64), np.int32))
    np.testing.assert_array_equal(got, want)


def test_default_rules_follow_the_target() -> None:
    vnni = RuleSet.default({"kind": "llvm", "mcpu": "cascadelake", "num-cores": 2})
    avx512 = RuleSet.default({"kind": "llvm", "mcpu": "skylake-avx512", "num-cores": 2})
    plain = RuleSet.default({"kind": "llvm", "mcpu": "haswell", "num-cores": 2})
    assert [s.name for s in vnni.schedule_rules] == [
        "ApplyCustomRule", "InlineConstantScalars", "AutoInline", "AddRFactor",
        "MultiLevelTilingWithIntrin", "MultiLevelTiling", "ParallelizeVectorizeUnroll",
        "RandomComputeLocation"]
    assert vnni.intrinsics() == ["dot_16x4_vnni"]
    assert [s.name for s in vnni.postprocs] == [
        "DisallowDynamicLoop", "RewriteParallelVectorizeUnroll", "RewriteReductionBlock",
        "RewriteTensorize", "RewriteLayout"]
    assert vnni.postprocs[3].params == {"vectorize_init_loop": True}
    assert vnni.schedule_rules[4].params["keep_untensorized"] is True
    assert [s.name for s in plain.schedule_rules] == [
        s.name for s in RuleSet.default({"kind": "llvm", "num-cores": 2}).schedule_rules]
    assert plain.intrinsics() == []
    # AVX-512BW without VNNI: stock's DefaultX86("avx512") and DefaultCPUTensorization
    assert avx512.intrinsics() == ["dot_16x4_avx512"]
    assert [s.name for s in avx512.postprocs] == [s.name for s in vnni.postprocs]


@needs_vnni
def test_default_session_tensorizes_packed_int8_dense(tmp_path: Path) -> None:
    """The must-show: 32 trials of a default session on I8DP-0 use vpdpbusd and are right."""
    session = msviz.Session("I8DP-0", work_dir=tmp_path / "wd", max_trials=32,
                            trials_per_batch=16, **TINY)
    session.start()
    assert session.wait(900) == "finished"
    assert not session.events.of_kind("warning")
    run = session.open()
    assert (run.trials["status"] == "ok").sum() >= 16
    best = run.best()
    tensorize = [inst for inst in best.trace.insts if inst.kind.name == "Tensorize"]
    assert [str(inst.attrs[0]) for inst in tensorize] == ["dot_16x4_vnni"]
    asm = code.generated_source(best, session.target, "asm")
    assert "vpdpbusd" in asm
    a, w, want = _dense_inputs(64, 64, 64)
    got = _run(code.build(best, session.target), a, pack_weight(w), np.zeros((64, 64), np.int32))
    np.testing.assert_array_equal(got, want)


def _conv_nchwc_int8(data: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """numpy: conv2d NCHWc int8, stride 1, no padding, written out from its definition."""
    n, _, h, w, _ = data.shape
    ocs, _, kh, kw, _, lanes, _ = kernel.shape
    d = data.reshape(*data.shape[:4], -1, 4).astype(np.int64)  # [n, ico, h, w, icf, ics]
    k = kernel.astype(np.int64)  # [occ, ico, kh, kw, icf, ocb, ics]
    out = np.zeros((n, ocs, h - kh + 1, w - kw + 1, lanes), np.int64)
    for ry in range(kh):
        for rx in range(kw):
            window = d[:, :, ry:ry + h - kh + 1, rx:rx + w - kw + 1]
            out += np.einsum("bcyxfs,ocfls->boyxl", window, k[:, :, ry, rx])
    return out.astype(np.int32)


@needs_vnni
def test_default_session_tensorizes_int8_conv2d_nchwc(tmp_path: Path) -> None:
    """conv2d NCHWc int8 (I8C2D-0): a default session tensorizes it with VNNI, and its best
    kernel computes what numpy computes from the definition."""
    session = msviz.Session("I8C2D-0", work_dir=tmp_path / "wd", max_trials=16,
                            trials_per_batch=8, check="measured", **TINY)
    session.start()
    assert session.wait(900) == "finished"
    assert not session.events.of_kind("warning")
    run = session.open()
    trials = run.trials
    ran = trials["status"] == "ok"
    assert ran.sum() >= 8 and (trials.loc[ran, "check"] == "ok").all()  # every one checked
    assert not (trials["status"] == "wrong_result").any()
    tensorized = [i for i in trials.index if any(
        inst.kind.name == "Tensorize" and str(inst.attrs[0]) == "dot_16x4_vnni"
        for inst in run.trial(int(i)).trace.insts)]
    assert tensorized
    for trial in (run.best(), run.trial(tensorized[0])):
        rng = np.random.default_rng(3)
        data = rng.integers(0, 256, (1, 2, 8, 8, 16), dtype=np.uint8)
        kernel = rng.integers(-128, 128, (2, 2, 3, 3, 4, 16, 4), dtype=np.int8)
        got = _run(code.build(trial, session.target), data, kernel,
                   np.zeros((1, 2, 6, 6, 16), np.int32))
        np.testing.assert_array_equal(got, _conv_nchwc_int8(data, kernel))
    assert "vpdpbusd" in code.generated_source(run.trial(tensorized[0]), session.target, "asm")


@needs_vnni
def test_default_session_on_unpacked_int8_dense_is_right(tmp_path: Path) -> None:
    """The trap: tensorized kernels of I8DU read B as if packed and are wrong; the result
    check marks them, and the best (from the untensorized spaces msviz keeps) equals numpy."""
    session = msviz.Session("I8DU-0", work_dir=tmp_path / "wd", max_trials=16,
                            trials_per_batch=8, **TINY)
    session.start()
    assert session.wait(900) == "finished"
    trials = session.open().trials
    wrong = trials["status"] == "wrong_result"
    assert wrong.sum() >= 1
    assert ((trials["check"] == "wrong") == wrong).all()
    best = session.best()
    assert best.status == "ok" and not any(
        inst.kind.name == "Tensorize" for inst in best.trace.insts)
    a, w, want = _dense_inputs(64, 64, 64)
    got = _run(code.build(best, session.target), a, w, np.zeros((64, 64), np.int32))
    np.testing.assert_array_equal(got, want)
    for index in trials.index[wrong]:  # each one marked wrong really is wrong
        trial = session.open().trial(int(index))
        out = _run(code.build(trial, session.target), a, w, np.zeros((64, 64), np.int32))
        assert not np.array_equal(out, want)


@needs_vnni
def test_an_edited_schedule_is_checked_when_remeasured(tmp_path: Path) -> None:
    """A user's schedule is checked whatever its speed: VNNI by hand on the unpacked weight is
    a wrong_result trial (numpy agrees it is wrong), the plain schedule an ok one."""
    a, w, want = _dense_inputs(64, 64, 64)
    compat.register_tensor_intrins()
    trap = _hand_tensorized(compat.VNNI_INTRIN, "I8DU-0")
    assert not np.array_equal(_run(code.build(trap, HOST), a, w, np.zeros((64, 64), np.int32)),
                              want)
    session = msviz.Session("I8DU-0", work_dir=tmp_path / "wd", **TINY)
    wrong = session.remeasure(trap, repeats=1).result(timeout=300)
    untouched = compat.Schedule(workloads.get("I8DU-0").mod)
    # one instruction, so the record is one stock's database may pick (TuningRecord::IsValid)
    untouched.get_sblock("root")
    plain = session.remeasure(untouched, repeats=1).result(timeout=300)
    assert (wrong["line"], wrong["new_trial"], wrong["check"]) == (1, True, "wrong")
    assert wrong["run_secs"] is None and wrong["error"].startswith("wrong result")
    assert (plain["line"], plain["new_trial"], plain["check"], plain["error"]) == (
        2, True, "ok", None)
    trials = session.open().trials
    assert list(trials["status"]) == ["wrong_result", "ok"]
    assert list(trials["check"]) == ["wrong", "ok"] and list(trials["origin"]) == ["edit"] * 2
    assert session.open().best().index == 1  # the plain one
    assert session.trials_done == 0  # edits are not trials of the search's budget


def _tiny_session(tmp_path: Path, workload: Any, **kw: Any) -> Any:
    options = {**TINY, "max_trials": 4, "trials_per_batch": 4, "strategy": "replay", **kw}
    session = msviz.Session(workload, work_dir=tmp_path / "wd", **options)
    session.start()
    assert session.wait(600) == "finished"
    return session


def _warnings(session: Any) -> list[str]:
    return [e["message"] for e in session.events.of_kind("warning")]


def _tensorized_spaces(session: Any) -> int:
    spaces = session.events.of_kind("design_spaces")[-1]["spaces"]
    return sum("meta_schedule.auto_tensorize" in s["trace"] for s in spaces)


def test_unknown_intrinsic_is_named_and_tuning_goes_on(tmp_path: Path) -> None:
    rules = RuleSet.default({"kind": "llvm", "mcpu": "cascadelake", "num-cores": 2})
    rules.set("MultiLevelTilingWithIntrin", intrin_name="dot_16x4_nope")
    session = _tiny_session(tmp_path, "I8DP-0", rules=rules)
    assert _warnings(session) == [
        "tensor intrinsic 'dot_16x4_nope' does not exist (not registered with TVM; x86 ones: "
        "dot_16x4_avx512, dot_16x4_vnni): tuning without it"]
    assert _tensorized_spaces(session) == 0
    assert (session.open().trials["status"] == "ok").all()


def test_target_without_vnni_is_named_and_tuning_goes_on(tmp_path: Path) -> None:
    rules = RuleSet.default({"kind": "llvm", "mcpu": "cascadelake", "num-cores": 2})
    # a CPU without VNNI whose kernels this machine runs: AVX-512 without VNNI where the host
    # has AVX-512, else AVX2 (the host's CPU changes between machines)
    avx512 = any(f.startswith("avx512") for f in compat.host_cpu().features)
    target = {"kind": "llvm", "mcpu": "skylake-avx512" if avx512 else "haswell"}
    session = _tiny_session(tmp_path, "I8DP-0", rules=rules, target=target)
    assert _warnings(session) == [
        "tensor intrinsic 'dot_16x4_vnni' needs the CPU feature(s) avx512vnni, which the "
        f"target ({compat.describe_target(session.target)}) lacks: tuning without it"]
    assert _tensorized_spaces(session) == 0
    assert (session.open().trials["status"] == "ok").all()


@needs_vnni
def test_shapes_that_do_not_divide_the_intrinsic_are_named(tmp_path: Path) -> None:
    wl = workloads.get("I8DU", shape=(8, 20, 30))
    session = _tiny_session(tmp_path, wl)
    assert _warnings(session) == [
        f"no design space of {wl.name} uses tensor intrinsic 'dot_16x4_vnni': no block "
        "matches its description (uint8[4], int8[16, 4], int32[16]) (dtypes, or extents that "
        "do not divide the intrinsic's); tuning without tensorization"]
    assert _tensorized_spaces(session) == 0
    assert (session.open().trials["status"] == "ok").all()


@needs_vnni
def test_fp32_workload_gets_no_intrinsic_warning(tmp_path: Path) -> None:
    session = _tiny_session(tmp_path, workloads.get("GMM", shape=(1, 16, 16, 16)))
    assert _warnings(session) == []
