"""compat.default_rules / rule_kind: stock's choice of rules and postprocs by the whole target,
and every replay of a stored trace applies its own target's postprocs."""

from __future__ import annotations

from typing import Any

import pytest

from msviz import compat
from msviz.space_generator.rules import RuleSet
from msviz.trace import with_decisions

_CUDA = {"max_threads_per_block": 1024, "max_shared_memory_per_block": 49152,
         "thread_warp_size": 32, "registers_per_block": 65536}


def _cuda(arch: str) -> Any:
    return compat.make_target({"kind": "cuda", "arch": arch, **_CUDA}, num_cores=2)


_CPU = ["DisallowDynamicLoop", "RewriteParallelVectorizeUnroll", "RewriteReductionBlock",
        "RewriteLayout"]
_CPU_TENSORIZE = ["DisallowDynamicLoop", "RewriteParallelVectorizeUnroll",
                  "RewriteReductionBlock", "RewriteTensorize", "RewriteLayout"]
_GPU = ["DisallowDynamicLoop", "RewriteCooperativeFetch", "RewriteUnboundBlock",
        "RewriteParallelVectorizeUnroll", "RewriteReductionBlock", "VerifyGPUCode"]

#: (target, rule kind, postprocs), as read in TVM's space_generator.cc and postproc.cc.
CASES = [
    ({"kind": "llvm", "num-cores": 2}, "llvm", _CPU),
    ({"kind": "llvm", "mcpu": "haswell", "num-cores": 2}, "llvm", _CPU),
    ({"kind": "llvm", "mcpu": "skylake-avx512", "num-cores": 2}, "avx512", _CPU_TENSORIZE),
    ({"kind": "llvm", "mcpu": "cascadelake", "num-cores": 4}, "vnni", _CPU_TENSORIZE),
    ({"kind": "llvm", "mcpu": "alderlake", "num-cores": 4}, "vnni", _CPU_TENSORIZE),  # AVX-VNNI
    ({"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a76", "num-cores": 4},
     "dotprod", _CPU_TENSORIZE),
    ({"kind": "llvm", "mtriple": "aarch64-linux-gnu", "num-cores": 4}, "asimd", _CPU_TENSORIZE),
    ("sm_70", "cuda", _GPU),
    ("sm_80", "cuda-tensorcore", [*_GPU, "RewriteTensorize"]),
    ("sm_90", "cuda-tensorcore", [*_GPU, "RewriteTensorize"]),
]


@pytest.mark.parametrize(("target", "kind", "postprocs"), CASES,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_rules_are_chosen_by_the_whole_target(target: Any, kind: str, postprocs: list) -> None:
    target = _cuda(target) if isinstance(target, str) else compat.make_target(target)
    found = compat.default_rules(target)
    assert (compat.rule_kind(target), found.kind) == (kind, kind)
    assert [type(p).__name__ for p in found.postprocs] == postprocs
    # RuleSet.default follows it: the same postprocs, and the same rules but for msviz's one
    # addition, the untensorized space kept beside a tensorized one (KeepUntensorized)
    ruleset = RuleSet.default(target)
    assert [s.name for s in ruleset.schedule_rules] == [type(r).__name__ for r in found.sch_rules]
    _, procs, mutators = ruleset.build(target)
    assert [type(p).__name__ for p in procs] == postprocs
    assert {type(m).__name__: p for m, p in mutators.items()} == pytest.approx(
        {type(m).__name__: p for m, p in found.mutator_probs.items()})


def test_an_avx_vnni_cpu_tunes_without_the_avx512_intrinsic_and_says_why() -> None:
    """Stock picks ``dot_16x4_vnni`` (512-bit ``vpdpbusd``) for AVX-VNNI alone, which such a
    CPU cannot run; msviz leaves the rule out and names the missing feature."""
    target = compat.make_target({"kind": "llvm", "mcpu": "alderlake", "num-cores": 4})
    ruleset = RuleSet.default(target)
    rules, _, _ = ruleset.build(target)
    assert "MultiLevelTilingWithIntrin" not in [type(r).__name__ for r in rules]
    assert ruleset.skipped == [
        "tensor intrinsic 'dot_16x4_vnni' needs the CPU feature(s) avx512vnni, which the target "
        f"({compat.describe_target(target)}) lacks: tuning without it"]


def test_msvizs_cuda_shorthand_is_a_tensor_core_target() -> None:
    assert compat.rule_kind("cuda") == "cuda-tensorcore"  # sm_90


def _fp16_matmul() -> Any:
    from tvm import te

    a = te.placeholder((128, 128), "float16", name="A")
    b = te.placeholder((128, 128), "float16", name="B")
    k = te.reduce_axis((0, 128), name="k")
    c = te.compute((128, 128), lambda i, j: te.sum(
        a[i, k].astype("float32") * b[k, j].astype("float32"), axis=k), name="C")
    return compat.normalize_mod(te.create_prim_func([a, b, c]))


def test_a_stored_tensor_core_trace_replays_with_its_own_targets_postprocs() -> None:
    """A record of an sm_80 tuning, replayed without naming a target, gets the tensor-core
    postprocs (stock's) and the module stock's replay makes; "llvm" ones would fail it."""
    ms = compat.ms
    mod, target = _fp16_matmul(), _cuda("sm_80")
    space = ms.space_generator.PostOrderApply()
    ctx = ms.TuneContext(mod=mod, target=target, space_generator=space, num_threads=1,
                         rand_state=3)
    sketches = [s for s in ctx.generate_design_space() if "wmma" in str(s.trace)]
    assert sketches, "stock's sm_80 design space of an fp16 matmul uses tensor cores"
    trace = sketches[0].trace
    record = ms.database.TuningRecord(trace, ms.database.Workload(mod), [1e-5], target)

    replay = with_decisions(record, {})

    assert replay.postprocs == [*_GPU, "RewriteTensorize"]
    stock = compat.Schedule(mod, seed=1, debug_mask=0)
    trace.apply_to_schedule(stock, remove_postproc=True)
    stock.enter_postproc()
    assert all(p.apply(stock) for p in ctx.space_generator.postprocs)
    assert compat.structural_equal(replay.mod, stock.mod)
    assert replay.mod.script() == stock.mod.script()
    assert "wmma" in replay.mod.script() and "auto_tensorize" not in replay.mod.script()
