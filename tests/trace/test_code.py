"""Generated code of a schedule: TVMScript, lowered TIR, LLVM IR, assembly, C and CUDA."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import tvm

from msviz import compat, workloads
from msviz.trace import (
    compile_cuda,
    generated_source,
    lowered_tir,
    tvmscript,
    with_decisions,
)


def test_cpu_code_of_a_replayed_trial(gmm_best):
    replay = with_decisions(gmm_best)
    script = tvmscript(replay)
    # The text is TVMScript of exactly this schedule: parsed back, it is the same module, and
    # the module it describes computes the batch matmul (checked against numpy).
    reparsed = tvm.script.from_source(script)
    assert compat.structural_equal(reparsed, replay.mod)
    assert not compat.structural_equal(reparsed, workloads.get("GMM-0").mod)  # it is scheduled
    lib = tvm.tirx.build(reparsed, target=compat.make_target("llvm"))
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal((1, 128, 128)).astype("float32") for _ in range(2))
    dev = tvm.cpu(0)
    args = [tvm.runtime.tensor(a, dev) for a in (x, y, np.zeros((1, 128, 128), "float32"))]
    lib[lib.entry_name](*args)
    np.testing.assert_allclose(args[2].numpy(), x @ y, rtol=1e-4, atol=1e-3)
    lowered = lowered_tir(replay)
    assert "T.sblock" not in lowered and "__tvm_ffi_main" in lowered
    ll = generated_source(replay, "llvm")
    assert "define" in ll and "ModuleID" in ll
    asm = generated_source(replay, "llvm", "asm")
    assert ".text" in asm
    c_source = generated_source(replay, "c")
    assert "#include" in c_source and "for (" in c_source
    with pytest.raises(ValueError, match="fmt must be one of"):
        generated_source(replay, "llvm", "cuda")


def _cuda_replay(make_spaces):
    mod = workloads.get("GMM", 0).mod
    space = make_spaces(mod, target="cuda")[0]
    return with_decisions(space, mod=mod, target="cuda")


def test_cuda_source_without_a_gpu(make_spaces):
    replay = _cuda_replay(make_spaces)
    source = generated_source(replay, "cuda")
    assert "__global__" in source and "threadIdx.x" in source
    assert "define" in generated_source(replay, "cuda", "host-ll")
    assert "threadIdx" in lowered_tir(replay, "cuda")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_cuda_source_compiles_to_ptx(make_spaces):
    ptx = compile_cuda(generated_source(_cuda_replay(make_spaces), "cuda"))
    assert b".entry" in ptx


def test_manual_cuda_schedule():
    mod = workloads.get("GMM", 0).mod
    sch = compat.Schedule(mod)
    _, i, j, _ = sch.get_loops(sch.get_sblock("Z"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    assert "__launch_bounds__(128)" in generated_source(sch, "cuda")
