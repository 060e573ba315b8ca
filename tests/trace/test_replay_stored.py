"""Stored trials of a VNNI-tensorized conv2d NCHWc replay to their stored modules, on this host
and on a host msviz takes for one without VNNI, or say why they cannot (issue 53).

The workload and rules are those of TVM's ``test_x86_conv2d_nchwc`` (an int8 conv2d NCHWc with a
1x1 kernel, ``MultiLevelTilingWithIntrin("dot_16x4_vnni", structure="SSRSRS", ...)`` on a
``cascadelake`` target, no postprocessors), the image 8x8 instead of 56x56. The stored module
each replay is compared with is TVM's own reading of the record: its whole trace applied with
``Trace.apply_to_schedule`` to a fresh schedule of its workload.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import msviz
from msviz import compat, workloads
from msviz.compat import target as host_target
from msviz.errors import ReplayError
from msviz.space_generator.rules import RuleSet, RuleSpec
from msviz.trace import with_decisions

#: TVM's test_x86_conv2d_nchwc: data [1, 4, H, W, 16] u8, kernel [16, 4, 1, 1, 4, 16, 4] i8.
CONV = ("I8C2D", (1, 64, 8, 8, 256, 1, 1))
#: The trials' own target: a CPU with AVX-512 VNNI (the test's, with this machine's 2 cores).
VNNI_TARGET = {"kind": "llvm", "mcpu": "cascadelake", "num-cores": 2}
#: Its rule, as the test builds it.
VNNI_RULE = RuleSpec("MultiLevelTilingWithIntrin", {
    "intrin_name": "dot_16x4_vnni", "structure": "SSRSRS", "tile_binds": None,
    "max_innermost_factor": 64, "vector_load_lens": None, "reuse_read": None,
    "reuse_write": {"req": "may", "levels": [1, 2], "scope": "global"}})
#: An AVX2 CPU without VNNI: what msviz is made to take this machine for.
AVX2_HOST = host_target.HostCPU("haswell", (), ("avx", "avx2"))


def _tune(work_dir: Path, rules: RuleSet) -> Any:
    """3 trials of the conv for VNNI_TARGET with ``rules``; the work dir, opened."""
    session = msviz.Session(
        workloads.get(CONV[0], shape=CONV[1]), target=VNNI_TARGET, work_dir=work_dir,
        rules=rules, max_trials=3, trials_per_batch=3, strategy="replay", seed=1,
        evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})
    session.start()
    assert session.wait(600) == "finished"
    run = msviz.open(work_dir)
    assert len(run.trials) == 3
    return run


def _stored_module(record: Any) -> Any:
    """TVM's reading of a record: its whole trace applied to a fresh schedule."""
    sch = compat.Schedule(record.workload.mod)
    record.trace.apply_to_schedule(sch, remove_postproc=False)
    return sch.mod


def _annotated(mod: Any) -> bool:
    return 'meta_schedule.auto_tensorize": "dot_16x4_vnni"' in mod.script()


@pytest.fixture(scope="module")
def tvm_test_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The conv tuned with TVM's test's rules: the VNNI tiling rule alone, no postprocs."""
    rules = RuleSet([VNNI_RULE], [], {})
    return _tune(tmp_path_factory.mktemp("tvm-test") / "wd", rules)


def test_stored_trials_replay_to_their_stored_modules(tvm_test_run: Any) -> None:
    """Each trial replayed for its own target is its stored module; before, the replay took
    the target's default postprocs and tensorized what the trial had left annotated."""
    for i in range(3):
        trial = tvm_test_run.trial(i)
        replay = with_decisions(trial, {}, target=trial.record.target)
        stored = _stored_module(trial.record)
        assert compat.structural_equal(replay.mod, stored), i
        assert replay.mod.script() == stored.script(), i
        assert replay.postprocs == [], i  # the session's: none
    assert any(_annotated(tvm_test_run.trial(i).mod) for i in range(3))


def test_replays_on_a_host_without_vnni_equal_the_stored_modules(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On an AVX2 host the default rules have no RewriteTensorize: a session there with the
    VNNI tiling rule added leaves its trials annotated, and their replays, for their own VNNI
    target, must not tensorize them."""
    monkeypatch.setattr(host_target, "_HOST_CPU", AVX2_HOST)
    assert compat.rule_kind("llvm") == "llvm"  # msviz takes the host for one without VNNI
    rules = RuleSet.default("llvm")
    assert "RewriteTensorize" not in [p.name for p in rules.postprocs]
    rules.insert(0, VNNI_RULE.name, **VNNI_RULE.params)
    run = _tune(tmp_path / "wd", rules)
    for i in range(3):
        trial = run.trial(i)
        assert compat.rule_kind(trial.record.target) == "vnni"
        replay = with_decisions(trial, {}, target=trial.record.target)
        stored = _stored_module(trial.record)
        assert compat.structural_equal(replay.mod, stored), i
        assert replay.mod.script() == stored.script(), i
        assert replay.postprocs == ["DisallowDynamicLoop", "RewriteParallelVectorizeUnroll",
                                    "RewriteReductionBlock", "RewriteLayout"], i
    assert any(_annotated(run.trial(i).mod) for i in range(3))


def test_a_work_dir_without_its_postprocs_says_so(tvm_test_run: Any, tmp_path: Path) -> None:
    """Without msviz's sidecar nothing says the trials had no postprocs: the replay with the
    target's defaults is another module, and says so instead of returning it."""
    stock = tmp_path / "stock"
    stock.mkdir()
    for name in ("database_workload.json", "database_tuning_record.json"):
        shutil.copy(tvm_test_run.work_dir / name, stock / name)
    trial = next(t for t in map(msviz.open(stock).trial, range(3)) if _annotated(t.mod))
    with pytest.raises(ReplayError) as err:
        with_decisions(trial, {}, target=trial.record.target)
    message = str(err.value)
    assert message.startswith(f"trial {trial.index} does not replay to its stored module for "
                              "target llvm cascadelake (AVX-512 VNNI, 2 cores) with the postprocs "
                              "DisallowDynamicLoop, RewriteParallelVectorizeUnroll, "
                              "RewriteReductionBlock, RewriteTensorize, RewriteLayout: after "
                              "EnterPostproc, step 1 of the stored trace is "), message
    assert "a work dir without msviz's sidecar does not say which" in message


def test_an_intrinsic_not_registered_here_is_named(tvm_test_run: Any) -> None:
    """A record whose blocks are annotated for an intrinsic this TVM lacks: RewriteTensorize
    would leave them untensorized with a log line; the replay refuses, naming it."""
    trial = next(t for t in map(tvm_test_run.trial, range(3)) if _annotated(t.mod))
    text = json.dumps(trial.record.as_json()).replace("dot_16x4_vnni", "dot_16x4_absent")
    record = compat.tuning_record_from_json(json.loads(text), trial.record.workload)
    with pytest.raises(ReplayError) as err:
        with_decisions(record, {})
    assert str(err.value).startswith(
        "the tuning record cannot be replayed on this host for target llvm cascadelake "
        "(AVX-512 VNNI, 2 cores): its trace tensorizes with 'dot_16x4_absent', which this TVM "
        "has not registered"), str(err.value)


def test_an_annotated_trace_registers_the_intrinsics(tvm_test_run: Any,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A trace that only annotates for RewriteTensorize registers msviz's dot_16x4_vnni too
    (in a fresh process a replay would otherwise tensorize with the stock one, which LLVM 22
    rejects)."""
    trial = next(t for t in map(tvm_test_run.trial, range(3)) if _annotated(t.mod))
    assert not any(inst.kind.name == "Tensorize" for inst in trial.trace.insts)
    monkeypatch.setattr(compat.intrinsics, "_INTRINS_READY", False)
    compat.register_intrins_for(trial.trace)
    assert compat.intrins_ready()
    monkeypatch.setattr(compat.intrinsics, "_INTRINS_READY", False)
    compat.register_intrins_for(json.dumps(trial.record.as_json()))
    assert compat.intrins_ready()
