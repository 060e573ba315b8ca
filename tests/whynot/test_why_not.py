"""msviz.why_not: each kind of want forced on real TVM design spaces, against a reason worked
out by hand (extents, dtypes, layouts and loop nests of the workloads below)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import msviz
from msviz import compat
from msviz.engine.measure.requests import measure_forced as measure
from msviz.errors import DecisionError
from msviz.space_generator import RuleSet
from msviz.whynot.answer import why_not

VNNI = "dot_16x4_vnni"
needs_vnni = pytest.mark.skipif(
    not compat.target_has_features(compat.make_target("llvm"), ("avx512vnni",)),
    reason="this CPU has no AVX-512 VNNI")
#: A VNNI CPU named explicitly: the tensorize analysis needs no VNNI host, so it runs on every one.
VNNI_CPU = {"kind": "llvm", "mcpu": "cascadelake", "num-cores": 2}
#: An AVX2 CPU without VNNI.
AVX2_CPU = {"kind": "llvm", "mcpu": "haswell", "num-cores": 2}

#: GMM-0's tiles pinned (b, i, j, k extents 1, 128, 128, 128), so the loop nest is known.
PINNED = {"b": [1, 1, 1, 1], "i": [8, 4, 2, 2], "j": [8, 4, 2, 2], "k": [64, 2]}


def dense(k: int, a_dtype: str = "uint8") -> Any:
    """C[16, 32] = A[16, k] . B[32, k]^T, int32 (the plain layout: B unpacked [n, k])."""
    from tvm import te

    a = te.placeholder((16, k), a_dtype, name="A")
    b = te.placeholder((32, k), "int8", name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((16, 32), lambda i, j: te.sum(
        a[i, r].astype("int32") * b[j, r].astype("int32"), axis=r), name="C")
    return compat.normalize_mod(te.create_prim_func([a, b, c]))


def test_tensorize_plain_dense_k30_names_the_extent_and_the_layout() -> None:
    got = msviz.why_not(dense(30), target=VNNI_CPU, tensorize=VNNI)
    assert (got.possible, got.blocked_by) == (False, "MultiLevelTilingWithIntrin")
    # k = 30 = 7 * 4 + 2; B[j, k] rows are 30 int8 apart where vpdpbusd reads 16 rows 4 apart
    assert got.differences == (
        "the reduction loop k of block C has extent 30, which is not a multiple of 4 (the "
        "intrinsic's vk): 30 = 7 x 4 + 2",
        "in B, one step of j moves 30 element(s), but the intrinsic reads its B with vi 4 "
        "element(s) apart: the tensorized kernel would read the wrong elements (lay B out so "
        "that each 16x4 tile is contiguous)",
    )
    assert got.reason.startswith("no design space tensorizes block C with dot_16x4_vnni: the "
                                 "reduction loop k of block C has extent 30")
    assert "can not be blockized" in got.tvm_message  # TVM's own words, forcing tensorize
    assert 'T.sblock("C"' in got.ir and got.schedule == "" and got.forced is None


def test_tensorize_names_the_dtypes() -> None:
    got = why_not(dense(64, "int8"), target=VNNI_CPU, tensorize=VNNI)
    assert (got.possible, got.blocked_by) == (False, "MultiLevelTilingWithIntrin")
    assert got.differences[0] == ("the intrinsic expects uint8 x int8 -> int32, block C "
                                  "computes int8 x int8 -> int32")
    assert "doesn't match the tensor intrin" in got.tvm_message


def test_tensorize_packed_int8_dense_is_possible_on_a_vnni_cpu_only() -> None:
    got = why_not("I8DP-0", target=VNNI_CPU, tensorize=VNNI)
    assert (got.possible, got.blocked_by, got.differences) == (True, "", ())
    assert [s for s, _ in got.steps][-2:] == ["RewriteTensorize", "RewriteLayout"]
    # the same workload on a CPU without the instruction: blocked, the feature named
    got = why_not("I8DP-0", target=AVX2_CPU, tensorize=VNNI)
    assert (got.possible, got.blocked_by, got.differences) == (
        False, "MultiLevelTilingWithIntrin", ())
    assert got.reason == ("tensor intrinsic 'dot_16x4_vnni' needs the CPU feature(s) avx512vnni, "
                          "which the target (llvm haswell (AVX2, 2 cores)) lacks")


@needs_vnni
def test_tensorize_packed_int8_dense_builds_and_computes_numpys_result() -> None:
    from msviz.workloads.int8 import pack_weight

    got = why_not("I8DP-0", tensorize=VNNI)
    assert (got.possible, got.blocked_by, got.differences) == (True, "", ())
    assert [s for s, ok in got.steps if ok != "ok"] == []
    assert [s for s, _ in got.steps][-2:] == ["RewriteTensorize", "RewriteLayout"]
    assert "T.call_llvm_pure_intrin" in got.schedule or "vpdpbusd" in got.schedule
    rng = np.random.default_rng(0)
    a = rng.integers(0, 255, (64, 64), dtype=np.uint8)
    w = rng.integers(-128, 127, (64, 64), dtype=np.int8)
    func = compat.fast_build(got.forced.mod, got.target)
    dev = compat.device_of(got.target)
    out = compat.to_tensor(np.zeros((64, 64), np.int32), dev)
    func(compat.to_tensor(a, dev), compat.to_tensor(pack_weight(w), dev), out)
    np.testing.assert_array_equal(out.numpy(), a.astype(np.int32) @ w.astype(np.int32).T)
    measured = measure(got, repeats=1)
    assert (measured["check"], measured["error"]) == ("ok", None)
    assert measured["latency_us"] > 0


def test_tile_outside_the_choices() -> None:
    big = why_not("GMM-0", tile={"j": [1, 1, 1, 128]})
    assert (big.possible, big.blocked_by) == (False, "SamplePerfectTile")
    assert "[1, 1, 1, 128] has innermost factor 128 > max_innermost_factor 64" in big.reason
    assert "j: i0" not in big.reason and big.schedule  # forced anyway: TVM does not check it
    # refused before TVM sees it, as with_decisions refuses it (TVM would "repair" it)
    with pytest.raises(DecisionError, match=r"\[3, 3, 3, 3\] multiplies to 81, not to the "
                                            "loop extent 128"):
        why_not("GMM-0", tile={"j": [3, 3, 3, 3]})
    ok = why_not("GMM-0", tile={"j": [2, 2, 2, 16]})
    assert ok.possible and "for j_3_fused in T.vectorized(16)" in ok.schedule
    none = why_not("GMM-0", tile={"x": [1, 128]})
    assert (none.blocked_by, none.reason) == (
        "MultiLevelTiling", "no SamplePerfectTile tiles loop x here (the tiled loops: b, i, j, k)")


def test_vectorize_a_loop_that_is_not_innermost_and_a_reduction_loop() -> None:
    outer = why_not("GMM-0", tile=PINNED, vectorize="i_3")
    assert (outer.possible, outer.blocked_by) == (False, "RewriteParallelVectorizeUnroll")
    # SSRSRS: ... k_1, b_3, i_3, j_3: only j_3 lies inside i_3
    assert outer.reason.startswith("loop i_3 is not the innermost loop: j_3 lie inside it")
    assert outer.schedule  # TVM's vectorize accepts it; MetaSchedule never does it
    red = why_not("GMM-0", tile=PINNED, vectorize="k_1")
    assert red.reason.startswith("loop k_1 iterates the reduction axis of block Z (axis v_k)")
    assert "not a data parallel block iter" in red.tvm_message and red.forced is None
    assert ("vectorize(k_1)", "failed") in red.steps


def test_vectorize_true_without_the_rule() -> None:
    rules = RuleSet.default("llvm").remove("ParallelizeVectorizeUnroll")
    got = why_not("GMM-0", vectorize=True, rules=rules)
    assert (got.possible, got.blocked_by, got.reason) == (
        False, "RewriteParallelVectorizeUnroll",
        "no loop is vectorized: no ParallelizeVectorizeUnroll rule annotates "
        "meta_schedule.vectorize")


def test_parallel_past_the_job_limit() -> None:
    cores = int(compat.make_target("llvm").attrs["num-cores"])
    got = why_not("GMM-0", tile=PINNED, parallel="j_1")
    # b_0 i_0 j_0 b_1 i_1 j_1 = 1 * 8 * 8 * 1 * 4 * 4
    assert (got.possible, got.blocked_by) == (False, "RewriteParallelVectorizeUnroll")
    assert got.reason.startswith(
        f"MetaSchedule parallelizes the outermost loops fused: b_0, i_0, j_0, b_1, i_1, j_1 "
        f"multiply to 1024 > max_jobs_per_core 16 x {cores} core(s) = {16 * cores}")
    assert why_not("GMM-0", tile=PINNED, parallel="b_0").possible


def test_unroll_outside_the_candidates_is_forced() -> None:
    got = why_not("GMM-0", unroll=32)
    assert (got.possible, got.blocked_by) == (False, "ParallelizeVectorizeUnroll")
    assert got.reason.startswith("its unroll_max_steps are [0, 16, 64, 512]: 32 is not one of "
                                 "them, so MetaSchedule never samples it")
    assert '"pragma_auto_unroll_max_step": 32' in got.schedule  # forced anyway
    assert why_not("GMM-0", unroll=64).possible


def test_decision_out_of_range() -> None:
    with pytest.raises(DecisionError, match=r"^why_not\(decision=\(18, 9\)\): instruction 18 "
                       r"\(SampleCategorical.*9 is not a valid choice. Allowed: an index 0..3 "
                       r"into the candidates \[0, 16, 64, 512\]"):
        why_not("GMM-0", decision=(18, 9))


def test_compute_at() -> None:
    from tvm import te, topi
    from tvm.s_tir.meta_schedule.testing import te_workload

    data, weight, out = te_workload.conv2d_nhwc(1, 14, 14, 16, 16, 3, 1, 1)
    mod = compat.normalize_mod(te.create_prim_func([data, weight, topi.nn.relu(out)]))
    # the conv is tiled by MultiLevelTiling; only the padding is placed by a sampled location
    conv = why_not(mod, compute_at=("conv2d_nhwc", "h_0"))
    assert (conv.possible, conv.blocked_by) == (False, "RandomComputeLocation")
    assert conv.reason.startswith("no SampleComputeLocation decides where block conv2d_nhwc")
    # rh (extent 3) tiled [1, 3]: its outer loop rh_0 has extent 1
    unit = why_not(mod, tile={"rh": [1, 3]}, compute_at=("PadInput", "rh_0"))
    assert (unit.possible, unit.blocked_by) == (False, "SampleComputeLocation")
    assert unit.reason.startswith("loop rh_0 is not a place block PadInput can be computed at")
    assert "TVM's compute_at accepts loop rh_0 (extent 1)" in unit.reason
    ok = why_not(mod, compute_at=("PadInput", "co_1"))
    assert ok.possible
    lines = ok.schedule.splitlines()
    # the postproc fuses n_0 ... co_1 into the parallel loop: PadInput sits inside it
    at = next(i for i, ln in enumerate(lines) if "_co_1_fused" in ln and " for " in ln)
    pad = next(i for i, ln in enumerate(lines) if 'T.sblock("PadInput")' in ln)
    assert at < pad and lines[at].index("for") < lines[pad].index("with")


def test_a_gpu_verifier_names_the_threads() -> None:
    # CUDA GMM-0 tiles i and j in 5 levels; the third is bound to threadIdx.x: 128 x 16 threads
    got = why_not("GMM-0", target="cuda", tile={"i": [1, 1, 128, 1, 1], "j": [1, 1, 16, 1, 8]})
    assert (got.possible, got.blocked_by) == (False, "VerifyGPUCode")
    assert got.reason == ("postproc VerifyGPUCode rejects the forced schedule (it returned "
                          "False: the schedule breaks its conditions): threadIdx.x 2048 = 2048 "
                          "threads per block > max_threads_per_block 1024")
    # stock's postprocs for sm_90 (cuda-tensorcore) end VerifyGPUCode, RewriteTensorize; the
    # first failure stops the rest, as ThreadedTraceApply does
    assert list(got.steps[-2:]) == [("VerifyGPUCode", "failed"), ("RewriteTensorize", "not run")]


def test_a_model_task_is_its_workload() -> None:
    from msviz.models.model import ModelTask

    task = ModelTask(0, "matmul", 1, msviz.workloads.get("GMM-0"))
    assert why_not(task, unroll=32).reason == why_not("GMM-0", unroll=32).reason


def test_unknown_want_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="why_not\\(\\) wants one or more of tensorize"):
        why_not("GMM-0", vectorise="j_3")
