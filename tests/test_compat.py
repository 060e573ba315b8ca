"""The host CPU target: what ``"llvm"`` means, how it is described, and that it uses the vector
units (real TVM, real LLVM, a real 8-trial session)."""

from __future__ import annotations

import json
import re

import pytest
import tvm

from msviz import compat

CODEGEN = tvm.target.codegen


def _llvm_isa_features(mcpu: str) -> set[str]:
    """LLVM's avx*/amx* features of a CPU name, asked of LLVM directly."""
    feats = CODEGEN.llvm_get_cpu_features(tvm.target.Target({"kind": "llvm", "mcpu": mcpu}))
    return {str(f) for f in feats if str(f).startswith(("avx", "amx"))}


def test_llvm_means_the_host_cpu():
    target = compat.make_target("llvm")
    spec = target.export()
    assert spec["kind"] == "llvm"
    assert spec["mcpu"] == str(CODEGEN.llvm_get_system_cpu())
    assert int(spec["num-cores"]) >= 1
    # Whatever LLVM's tables say, nothing the OS does not report stays on.
    flags = open("/proc/cpuinfo").read()
    os_flags = {f.replace("_", "") for f in re.search(r"^flags\s*:(.*)$", flags, re.M)
                .group(1).split()}
    off = {m[1:] for m in spec.get("mattr", ())}
    for feature in _llvm_isa_features(spec["mcpu"]):
        plain = feature.replace("-", "").replace(".", "")
        assert (feature in off) == (plain not in os_flags), feature


def test_a_session_targets_the_host_cpu(tmp_path):
    from msviz import Session

    session = Session("GMM-0", work_dir=tmp_path / "wd")
    assert session.target.export()["mcpu"] == str(CODEGEN.llvm_get_system_cpu())


def test_features_the_os_hides_are_turned_off():
    host = compat.host_cpu()
    mcpu = host.mcpu
    if mcpu is None:
        pytest.skip("LLVM does not know this CPU")
    isa = _llvm_isa_features(mcpu)
    assert "avx2" in isa  # every x86-64 CPU LLVM names for a TVM wheel host has AVX2
    # a VM that reports only AVX and AVX2 (cpuinfo spelling)
    cpu = compat.host_cpu(cpu_flags={"avx", "avx2", "fma", "sse4_2"})
    assert cpu.features == ("avx", "avx2")
    assert set(cpu.disabled) == isa - {"avx", "avx2"}
    # the OS reports everything, in its own spelling (underscores): nothing is turned off
    spelled = {re.sub(r"^(avx512|amx|avx)(?=[a-z])", r"\1_", f) for f in isa}
    assert compat.host_cpu(cpu_flags=spelled).disabled == ()
    # the cached host answer was not replaced by the explicit ones
    assert compat.host_cpu() is host
    # and it is this machine's answer: LLVM's extensions that /proc/cpuinfo reports (own parse)
    line = re.search(r"^flags\s*:(.*)$", open("/proc/cpuinfo").read(), re.M).group(1)
    os_flags = {f.replace("_", "") for f in line.split()}
    assert host.features == tuple(sorted(
        f for f in isa if f.replace("-", "").replace(".", "") in os_flags))


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"kind": "llvm", "mcpu": "haswell", "num-cores": 4}, "llvm haswell (AVX2, 4 cores)"),
        ({"kind": "llvm", "mcpu": "skylake-avx512", "num-cores": 2},
         "llvm skylake-avx512 (AVX-512, 2 cores)"),
        ({"kind": "llvm", "mcpu": "cascadelake", "num-cores": 2},
         "llvm cascadelake (AVX-512 VNNI, 2 cores)"),
        ({"kind": "llvm", "mcpu": "cascadelake", "mattr": ["-avx512f"], "num-cores": 2},
         "llvm cascadelake (AVX2, 2 cores)"),
        ({"kind": "llvm", "num-cores": 2}, "llvm generic (no mcpu: baseline ISA only, 2 cores)"),
    ],
)
def test_describe_target(spec, expected):
    assert compat.describe_target(spec) == expected


def test_an_explicit_target_is_used_as_given():
    target = compat.make_target({"kind": "llvm", "mcpu": "haswell", "num-cores": 3})
    assert target.export()["mcpu"] == "haswell" and "mattr" not in target.export()
    assert "mcpu" not in compat.make_target({"kind": "llvm"}).export()


def test_the_default_session_uses_wide_vector_registers(tmp_path):
    """An 8-trial default session's best kernel uses ymm/zmm; the same schedule built for a
    target without mcpu uses xmm only (what msviz did before it asked for the host CPU)."""
    from msviz import Session
    from msviz.trace import generated_source

    session = Session("GMM-0", work_dir=tmp_path / "wd", max_trials=8, trials_per_batch=8,
                      population_size=16, init_min_unmeasured=8, genetic_num_iters=1, seed=1,
                      evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})
    session.start()
    assert session.wait(600) == "finished", session.end_reason
    best = session.best()
    # the target is stored with every record (the stock database's own JSON)
    lines = (tmp_path / "wd" / "database_tuning_record.json").read_text().splitlines()
    stored = [json.loads(line)[1][2] for line in lines]
    assert len(stored) == 8
    assert all(t["mcpu"] == str(CODEGEN.llvm_get_system_cpu()) for t in stored)
    asm = generated_source(best.schedule, session.target, "asm")
    assert re.search(r"%[yz]mm\d", asm), "no ymm/zmm register in the best kernel"
    generic = generated_source(best.schedule, {"kind": "llvm", "num-cores": 2}, "asm")
    assert re.search(r"%xmm\d", generic) and not re.search(r"%[yz]mm\d", generic)
