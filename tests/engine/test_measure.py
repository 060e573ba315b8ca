"""Re-measuring trials, the replay strategy and the CUDA target without a GPU."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import msviz
from msviz import compat
from msviz.engine.measure.runner import cuda_available
from msviz.records.sidecar import read_sidecar


def test_remeasure_finished_and_paused(stepped: Any, tmp_path: Path, tiny_session: Any) -> None:
    done, _ = stepped
    wd = tmp_path / "wd"
    shutil.copytree(done.work_dir, wd)
    session = tiny_session(wd, max_trials=12, resume=True)
    session.step("batch")
    assert session.wait(300) == "paused"
    queued = session.remeasure(2, repeats=2)  # applied by the engine while paused
    result = queued.result(timeout=120)
    assert result["line"] == 3 and len(result["run_secs"]) == 2 and result["error"] is None
    trial = msviz.open(wd).trial(5)
    again = session.remeasure(trial, repeats=1).result(timeout=120)
    assert again["line"] == 6
    session.resume()
    assert session.wait(300) == "finished"
    later = session.remeasure(trial.schedule.trace, repeats=1).result(timeout=120)  # no worker
    # a trace of a stored record (committed before the resume) is found by its module
    assert later["run_secs"] and later["line"] == 6 and not later["new_trial"]
    trials = msviz.open(wd).trials
    assert len(trials["remeasured_secs"].iloc[2]) == 1
    assert len(trials["remeasured_secs"].iloc[2][0]) == 2
    assert len(trials["remeasured_secs"].iloc[5]) == 2  # by Trial, then by its trace
    assert trials["remeasured_secs"].iloc[0] is None
    kinds = [e.kind for e in session.events]
    assert kinds.count("remeasured") == 3
    # Never during a batch: each re-measure sits between a batch's cost-model update and the
    # next batch's build.
    order = [k for k in kinds if k in ("built", "measured", "remeasured")]
    for i, k in enumerate(order):
        if k == "remeasured" and i > 0:
            assert order[i - 1] in ("measured", "remeasured")
    with pytest.raises(ValueError, match="repeats"):
        session.remeasure(0, repeats=0)


def test_cuda_without_gpu_fails_clearly_after_three_batches(
    tmp_path: Path, tiny_session: Any
) -> None:
    if cuda_available() is None:
        pytest.skip("a CUDA device is present: the no-GPU error path cannot be shown here")
    session = tiny_session(tmp_path / "wd", target="cuda", strategy="replay", max_trials=4)
    session.start()
    assert session.wait(300) == "failed"  # no endless loop of batches that cannot run
    assert "3 batches" in session.end_reason and "no CUDA device" in session.end_reason
    assert session.trials_done == 0  # infrastructure failures do not count as trials
    trials = msviz.open(tmp_path / "wd").trials
    assert len(trials) == 12  # stored (so they are shown), 3 batches of 4
    assert trials["error"].str.contains("no CUDA device").all()
    side = read_sidecar(tmp_path / "wd").trials
    assert [side[line]["error_kind"] for line in trials["line"]] == ["infra"] * 12
    built = session.events.of_kind("built")[0]
    assert all(r["ok"] for r in built["results"])  # nvcc/codegen side works without a GPU


def test_cuda_on_a_gpu(tmp_path: Path, tiny_session: Any) -> None:
    why = cuda_available()
    if why is not None:
        pytest.skip(why)
    session = tiny_session(tmp_path / "wd", target="cuda", max_trials=4)
    session.start()
    assert session.wait(600) == "finished"
    assert (session.trials["status"] == "ok").any()


def test_watchdog_replaces_a_runner_that_stops_answering() -> None:
    import os
    import signal

    from msviz import compat, workloads
    from msviz.engine.measure.service import MeasuringService

    wl = workloads.get("GMM-0")
    sch = compat.Schedule(wl.mod)
    args = compat.ArgInfo.from_entry_func(sch.mod, remove_preproc=True)
    # The watchdog's deadline is read at each run: generous (60 s of slack) while a worker
    # starts (a process importing TVM: seconds on a loaded host), short only for the run that
    # hangs, which no deadline would see end
    m = MeasuringService(compat.make_target("llvm"), runner_timeout=5.0, watchdog_slack=60.0,
                 evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})
    try:
        built = m.build([sch.mod])
        assert built[0].error is None
        first = m.run(built, [args])[0]
        assert first.ok  # the runner's persistent worker is up now
        workers = list(m.runner.pool._worker_map.values())
        stuck = [w._proc.pid for w in workers if w._proc is not None]
        assert stuck
        os.kill(stuck[0], signal.SIGSTOP)  # a worker that never answers again
        old_runner = m.runner
        m.watchdog_slack = 3.0  # deadline (5 + 1) + 3 s
        hung = m.run(built, [args])[0]
        assert not hung.ok and "watchdog" in hung.error and hung.error_kind == "infra"
        assert m.runner is not old_runner and m.pools_replaced == 1
        m.watchdog_slack = 60.0
        again = m.run(built, [args])[0]  # the replacement pool works
        assert again.ok
        m.cleanup(built)
    finally:
        m.close()


def _losing_runner(lose: int) -> Any:
    """A MetaSchedule PyRunner that loses its first ``lose`` batches (as a dropped RPC
    session would), then runs candidates with a real LocalRunner."""
    from tvm.ir.utils import derived_object

    from msviz import compat

    @derived_object
    class LosingRunner(compat.ms.runner.PyRunner):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0
            self.local = compat.ms.runner.LocalRunner(
                timeout_sec=30,
                evaluator_config=compat.ms.runner.EvaluatorConfig(1, 1, 0))

        def run(self, runner_inputs: list) -> list:
            self.calls += 1
            if self.calls <= lose:
                raise ConnectionError("RPC session to the device was lost mid-batch")
            return self.local.run(runner_inputs)

    return LosingRunner()


def test_infra_failures_are_stored_but_never_train_or_count(
    tmp_path: Path, tiny_session: Any
) -> None:
    wd = tmp_path / "wd"
    session = tiny_session(wd, runner=_losing_runner(2), max_trials=8)
    session.start()
    assert session.wait(600) == "finished", session.end_reason
    trials = msviz.open(wd).trials
    lost, kept = trials[trials["batch"] < 2], trials[trials["batch"] >= 2]
    assert len(lost) >= 2 and len(kept) == 8  # 2 lost batches, then 8 trials that count
    side = read_sidecar(wd).trials
    assert {side[line]["error_kind"] for line in lost["line"]} == {"infra"}
    assert {side[line]["error_kind"] for line in kept["line"]} == {None}
    assert lost["error"].str.contains("RPC session to the device was lost").all()
    assert (lost["run_secs"].map(lambda s: s == (1e10,))).all()  # as stock stores failures
    assert (kept["status"] == "ok").all()
    assert session.trials_done == 8
    updates = session.events.of_kind("cost_model_updated")
    assert [u["trained_on"] for u in updates[:2]] == [0, 0]
    assert sum(u["trained_on"] for u in updates) == 8
    assert updates[-1]["samples"] == 8  # only real measurements train the model
    # The lost candidates are not "measured": only the 8 real trials are in the search's set.
    assert len(session.tuners[0].search.measured) == 8


def test_infra_failures_three_batches_in_a_row_fail_the_session(
    tmp_path: Path, tiny_session: Any
) -> None:
    session = tiny_session(tmp_path / "wd", runner=_losing_runner(99), max_trials=8)
    session.start()
    assert session.wait(600) == "failed"
    assert session.end_reason.startswith("InfrastructureError")
    assert "3 batches" in session.end_reason and "RPC session" in session.end_reason
    assert session.trials_done == 0
    trials = msviz.open(tmp_path / "wd").trials
    assert set(trials["batch"]) == {0, 1, 2}  # stored, then the session stopped trying
    assert trials["error"].str.contains("RPC session to the device was lost").all()


def test_an_edit_does_not_count_toward_max_trials(stepped: Any, tmp_path: Path,
                                                  tiny_session: Any) -> None:
    done, _ = stepped
    wd = tmp_path / "wd"
    shutil.copytree(done.work_dir, wd)
    session = tiny_session(wd, max_trials=12, resume=True)
    edit = compat.Schedule(done.workload.mod)  # the workload, its outer loop parallel
    edit.parallel(edit.get_loops(edit.get_sblock("Z"))[0])
    result = session.remeasure(edit, repeats=1).result(timeout=300)
    assert result["new_trial"] and result["line"] == 9 and result["check"] == "ok"
    assert session.trials_done == 8  # idle: the tuners are set up, the edit not counted
    session.start()
    assert session.wait(300) == "finished"
    trials = msviz.open(wd).trials
    assert len(trials) == 13 and (trials["origin"] == "edit").sum() == 1
    assert session.trials_done == 12  # the search measured 4 more, as if there were no edit
    again = tiny_session(wd, max_trials=12, resume=True)  # and so does a resumed session
    again.start()
    assert again.wait(300) == "finished" and again.trials_done == 12
    assert len(msviz.open(wd).trials) == 13
