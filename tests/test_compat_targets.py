"""Targets as msviz makes them (msviz/compat/target.py): an mcpu that LLVM does not know is
refused, naming the CPU; a missing num-cores is filled in for this machine and asked for by
name for another; a GPU target without the attributes MetaSchedule reads is refused by name."""

from __future__ import annotations

import pytest
import tvm

import msviz
from msviz import compat
from msviz.compat.target import complete_target
from msviz.errors import TargetError
from msviz.space_generator.rules import RuleSet


@pytest.mark.parametrize("target", [{"kind": "llvm", "mcpu": "skylakee"}, "llvm -mcpu=skylakee",
                                    '{"kind": "llvm", "mcpu": "skylakee"}'])
def test_unknown_mcpu_is_named(target: object) -> None:
    with pytest.raises(TargetError, match=r"target mcpu 'skylakee' is not a CPU LLVM knows for "
                       r"\S+ .*did you mean 'skylake'.*llvm_get_cpu_archlist.*llc -mcpu=help"):
        compat.make_target(target)


def test_session_refuses_an_unknown_mcpu() -> None:
    with pytest.raises(ValueError, match="target mcpu 'notacpu' is not a CPU LLVM knows"):
        msviz.Session("GMM-0", target={"kind": "llvm", "mcpu": "notacpu"})


def test_known_mcpus_pass() -> None:
    assert str(compat.make_target({"kind": "llvm", "mcpu": "haswell"}).attrs["mcpu"]) == "haswell"
    arm = {"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a72", "num-cores": 4}
    assert str(compat.make_target(arm).attrs["mcpu"]) == "cortex-a72"
    with pytest.raises(TargetError, match="'skylake' is not a CPU LLVM knows for aarch64"):
        compat.make_target({**arm, "mcpu": "skylake"})


# -- what MetaSchedule needs from a target -----------------------------------------------------

NO_CORES = {"kind": "llvm", "mcpu": "haswell"}
ARM = {"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a72"}
CUDA_NO_LIMITS = {"kind": "cuda", "arch": "sm_80"}


@pytest.mark.parametrize("given", [NO_CORES, tvm.target.Target(NO_CORES)],
                         ids=["dict", "Target"])
def test_llvm_num_cores_is_filled_in_for_this_machine(given: object) -> None:
    made = compat.make_target(given)
    assert int(made.attrs["num-cores"]) == compat.host_cores()
    assert str(made.attrs["mcpu"]) == "haswell"
    assert int(compat.make_target(given, num_cores=3).attrs["num-cores"]) == 3
    complete = tvm.target.Target({**NO_CORES, "num-cores": 5})
    assert compat.make_target(complete) is complete  # nothing missing: the very Target


@pytest.mark.parametrize("given", [ARM, tvm.target.Target(ARM), "arm/rasp4b"],
                         ids=["dict", "Target", "tag"])
def test_llvm_num_cores_of_another_machine_is_asked_for(given: object) -> None:
    with pytest.raises(TargetError, match=r"target llvm cortex-a72 for (aarch64|armv8l)\S* has "
                       r"no num-cores, which MetaSchedule needs .*Add the device's physical "
                       r"cores to the target, e.g. \{'kind': 'llvm', 'mtriple': '\S+', "
                       r"'num-cores': 4\}"):
        compat.make_target(given)
    assert int(compat.make_target(given, num_cores=4).attrs["num-cores"]) == 4


@pytest.mark.parametrize("given", [CUDA_NO_LIMITS, tvm.target.Target(CUDA_NO_LIMITS)],
                         ids=["dict", "Target"])
def test_gpu_target_without_thread_and_memory_limits_is_refused_by_name(given: object) -> None:
    both = (r"target cuda sm_80 has no max_threads_per_block \(read by MetaSchedule's GPU "
            r"schedule rules\) and max_shared_memory_per_block \(read by MetaSchedule's "
            r"VerifyGPUCode postprocessor\)\. Add your GPU's values to the target, e.g. "
            r"\{'kind': 'cuda', 'arch': 'sm_80', 'max_threads_per_block': 1024, "
            r"'max_shared_memory_per_block': 49152\}, or name a tag .*'nvidia/nvidia-a100'")
    with pytest.raises(TargetError, match=both):
        compat.make_target(given)
    with pytest.raises(TargetError, match=r"max_threads_per_block"):  # not TVM's ValueError
        RuleSet.default(given)
    one = {**CUDA_NO_LIMITS, "max_threads_per_block": 1024}
    with pytest.raises(TargetError, match=r"^target cuda sm_80 has no "
                       r"max_shared_memory_per_block \(read by MetaSchedule's VerifyGPUCode"):
        compat.make_target(one)


def test_session_reports_a_missing_target_attribute() -> None:
    with pytest.raises(TargetError, match="has no max_threads_per_block"):
        msviz.Session("GMM-0", target=CUDA_NO_LIMITS)
    with pytest.raises(TargetError, match="has no num-cores"):
        msviz.Session("GMM-0", target=tvm.target.Target(ARM))


def test_other_gpu_kinds_name_only_what_is_missing() -> None:
    with pytest.raises(TargetError, match=r"^target vulkan has no max_shared_memory_per_block "
                       r"\(read by MetaSchedule's VerifyGPUCode postprocessor\)\. Add your "
                       r"GPU's values to the target \(max_threads_per_block in threads, "
                       r"max_shared_memory_per_block in bytes\)\.$"):
        compat.make_target({"kind": "vulkan"})
    assert compat.make_target({"kind": "vulkan", "max_shared_memory_per_block": 16384})


def test_shorthands_and_tags_are_unchanged() -> None:
    cuda = compat.make_target("cuda", num_cores=2)
    assert {k: int(cuda.attrs[k]) for k in ("max_threads_per_block",
                                            "max_shared_memory_per_block")} == {
        "max_threads_per_block": 1024, "max_shared_memory_per_block": 49152}
    assert str(cuda.attrs["arch"]) == "sm_90"
    assert int(cuda.host.attrs["num-cores"]) == 2
    assert compat.make_target("llvm", num_cores=3).export() == tvm.target.Target(
        compat.host_target_spec(3)).export()
    a100 = compat.make_target("nvidia/nvidia-a100")
    assert complete_target(a100) is a100
    assert int(compat.make_target("aws/cpu/c5.large").attrs["num-cores"]) == 1  # the tag's own


def test_replay_for_a_target_object_without_num_cores() -> None:
    from msviz import workloads
    from msviz.trace import with_decisions

    mod = workloads.get("GMM", 0).mod
    sch = compat.Schedule(mod)
    _, i, _, _ = sch.get_loops(sch.get_sblock("Z"))
    sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16, decision=[8, 16]))
    replay = with_decisions(sch, mod=mod, target=tvm.target.Target(NO_CORES))
    assert int(replay.target.attrs["num-cores"]) == compat.host_cores()
    with pytest.raises(TargetError, match="has no num-cores"):
        with_decisions(sch, mod=mod, target=tvm.target.Target(ARM))


def test_cli_names_the_missing_field(capsys: pytest.CaptureFixture[str]) -> None:
    from msviz import cli

    for spec, field in (('{"kind": "cuda", "arch": "sm_80", "max_shared_memory_per_block": '
                         '49152}', "max_threads_per_block"),
                        ('{"kind": "llvm", "mtriple": "aarch64-linux-gnu"}', "num-cores")):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["tune", "GMM-0", "--target", spec])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert f"has no {field}" in err, err
        assert "TVMError" not in err and "missing attribute" not in err, err
        assert "not a target TVM knows" not in err, err  # TVM knows it; msviz needs more


def test_other_entry_points_name_the_missing_field() -> None:
    from msviz.trace import decision_sites

    mod = msviz.workloads.get("GMM", 0).mod
    with pytest.raises(TargetError, match=r"^target cuda sm_80 has no max_threads_per_block"):
        msviz.why_not(mod, target={**CUDA_NO_LIMITS, "max_shared_memory_per_block": 49152},
                      unroll=16)
    with pytest.raises(TargetError, match="has no num-cores"):
        msviz.why_not(mod, target=ARM, unroll=16)
    sch = compat.Schedule(mod)
    _, i, _, _ = sch.get_loops(sch.get_sblock("Z"))
    sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16, decision=[8, 16]))
    assert len(decision_sites(sch, mod)) == 1  # sites need no target


def test_tvm_itself_raises_bare_errors_for_these_targets() -> None:
    """What msviz's errors stand in for: TVM's own, naming neither what to add nor how."""
    ms = compat.ms
    mod = msviz.workloads.get("GMM", 0).mod
    cuda = tvm.target.Target({**CUDA_NO_LIMITS, "max_shared_memory_per_block": 49152})
    with pytest.raises(ValueError, match="missing attribute `max_threads_per_block`") as raw:
        ms.TuneContext(mod=mod, target=cuda, task_name="t",
                       space_generator=ms.space_generator.PostOrderApply(
                           sch_rules="cuda", postprocs=[], mutator_probs={}))
    assert not isinstance(raw.value, TargetError)
    with pytest.raises(Exception, match="num-cores") as raw:
        ms.TuneContext(mod=mod, target=tvm.target.Target(ARM), task_name="t",
                       space_generator=ms.space_generator.PostOrderApply(
                           sch_rules="llvm", postprocs=[], mutator_probs={})
                       ).generate_design_space()
    assert not isinstance(raw.value, TargetError)
