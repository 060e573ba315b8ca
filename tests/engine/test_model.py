"""A whole model tuned in one Session: every task measured, the task scheduler stepped and
steered, the database compiled by stock ``compile_relax``, resume continuing every task."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tvm
from tvm import relax

from msviz import compat
from msviz.engine import Session
from tests.engine.conftest import TINY

#: MetaSchedule's GradientBased: these tests check its port (msviz's default is "forecast").
OPTIONS: dict[str, Any] = {**TINY, "trials_per_batch": 2, "task_scheduler": "gradient"}


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The catalogue MLP (4 tasks, one of weight 2) stepped by batch, steered, then run out;
    checked end to end in two draws (fresh processes) rather than the default three."""
    from msviz.bench import draws

    work_dir = tmp_path_factory.mktemp("mlp") / "wd"
    session = Session("mlp", work_dir=work_dir, max_trials=10, **OPTIONS)
    seen = []
    session.step("batch")
    seen.append(session.wait(600))
    session.tune_next("fused_matmul_add_relu")  # task 3, during the warm-up
    session.set_task_budget(0, 2)
    session.step("batch")
    seen.append(session.wait(600))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(draws, "DEFAULT_DRAWS", 2)  # the worker reads it when it checks
        session.resume()
        seen.append(session.wait(900))
    return session, seen


def test_model_has_four_tasks_one_of_weight_two(tuned: Any) -> None:
    session, seen = tuned
    assert seen == ["paused", "paused", "finished"]
    assert session.end_reason == "reached max_trials"
    tasks = session.events.of_kind("tasks")[0]["tasks"]
    assert [(t["index"], t["name"], t["weight"]) for t in tasks] == [
        (0, "softmax", 1), (1, "fused_matmul2_add1", 1), (2, "fused_matmul1_add_relu", 2),
        (3, "fused_matmul_add_relu", 1)]
    started = session.events.of_kind("started")[0]
    assert (started["model"], started["num_tasks"]) == ("mlp", 4)
    # the budget change was announced with a second tasks event
    assert session.events.of_kind("tasks")[-1]["tasks"][0]["max_trials"] == 2
    # as TaskScheduler::Tune: every task still alive is terminated when tuning ends
    assert sorted(e["task_index"] for e in session.events.of_kind("task_done")) == [0, 1, 2, 3]


def test_stock_task_scheduler_log(tuned: Any) -> None:
    from msviz.records.logs import read_task_table

    session, _ = tuned
    held = session.trials.groupby("task").size().to_dict()
    # the last table (records.logs keeps earlier tables too when the Name column is wide)
    table = read_task_table(session.work_dir / "logs")[-len(session.tasks):]
    assert [(t.id, t.name, t.weight, t.trials) for t in table] == [
        (t.index, t.name, float(t.weight), held[t.name]) for t in session.tasks]
    text = next((session.work_dir / "logs").glob("*task_scheduler.log")).read_text()
    assert text.count("TaskScheduler picks Task #") == len(session.events.of_kind("scheduled"))


def test_each_batch_step_runs_the_scheduled_task(tuned: Any) -> None:
    session, _ = tuned
    kinds = [e.kind for e in session.events if e.kind in ("scheduled", "measured", "paused")]
    # one task per batch step: scheduled, measured, paused; twice
    assert kinds[:6] == ["scheduled", "measured", "paused", "scheduled", "measured", "paused"]
    scheduled = session.events.of_kind("scheduled")
    # every measured batch is the batch of the task scheduled just before it
    flow = [e for e in session.events if e.kind in ("scheduled", "measured")]
    for before, event in pairwise(flow):
        if event.kind == "measured":
            assert before.kind == "scheduled"
            assert before["pick"] == event["task_index"]
            assert before["pick_name"] == event.task == event["trials"][0]["task"]
    assert [s["batch"] for s in scheduled] == list(range(len(scheduled)))
    first, forced = scheduled[0], scheduled[1]
    assert (first["pick"], first["reason"], first["forced"]) == (0, "round-robin warm-up", False)
    assert (forced["pick"], forced["reason"], forced["forced"]) == (3, "forced by user", True)
    assert forced["trials"] == [2, 0, 0, 0] and forced["done"] == [False] * 4
    # the warm-up goes on after the forced pick: tasks 1, 2, 3
    assert [s["pick"] for s in scheduled[2:5]] == [1, 2, 3]


def test_every_task_in_the_stock_database(tuned: Any) -> None:
    session, _ = tuned
    db = compat.JSONDatabase(work_dir=str(session.work_dir))
    per_task = {}
    for task in session.tasks:
        assert db.has_workload(task.workload.mod), task.name
        records = db.get_all_tuning_records()
        per_task[task.name] = sum(
            1 for r in records if tvm_ffi_equal(r.workload.mod, task.workload.mod))
    assert set(per_task) == {t.name for t in session.tasks} and min(per_task.values()) >= 1
    assert per_task["softmax"] <= 2  # its budget, set while paused
    assert sum(per_task.values()) == session.trials_done == 10
    assert session.trials.groupby("task").size().to_dict() == per_task


def tvm_ffi_equal(a: Any, b: Any) -> bool:
    return bool(compat.structural_equal(a, b))


def test_stock_compile_relax_builds_the_tuned_model(tuned: Any) -> None:
    session, _ = tuned
    model, target = session.model, session.target
    db = compat.JSONDatabase(work_dir=str(session.work_dir))
    tuned_exe = compat.ms.relax_integration.compile_relax(db, model.mod, target, params=None)
    with target:
        plain_exe = tvm.compile(model.mod, target=target)
    x = np.random.default_rng(5).standard_normal((4, 64)).astype("float32")
    outs = [relax.VirtualMachine(exe, tvm.cpu())["main"](tvm.runtime.tensor(x)).numpy()
            for exe in (tuned_exe, plain_exe)]
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-5)
    # softmax rows sum to one: the build computes the model, not just something equal
    np.testing.assert_allclose(outs[0].sum(axis=1), np.ones(4), rtol=1e-5)
    e2e = session.events.of_kind("end_to_end")[-1]
    assert e2e.data == session.end_to_end
    assert (e2e["match"], e2e["fallback"], e2e["error"]) == (True, [], None)
    assert e2e["untuned_us"] > 0 and e2e["tuned_us"] > 0
    # each build's time is the least of two fresh processes, the spread the slowest over it
    assert e2e["draws"] == len(e2e["untuned_draws_us"]) == len(e2e["tuned_draws_us"]) == 2
    for key in ("untuned", "tuned"):
        times = e2e[f"{key}_draws_us"]
        assert e2e[f"{key}_us"] == min(times) and all(t > 0 for t in times)
        assert e2e[f"{key}_spread"] == max(times) / min(times)


def test_the_end_to_end_check_is_stored_in_the_work_dir(tuned: Any) -> None:
    """``msviz.open`` (its dashboard and report) has the check a live session made."""
    import msviz
    from msviz.report import render_report

    session, _ = tuned
    e2e = session.events.of_kind("end_to_end")[-1]
    run = msviz.open(session.work_dir)
    assert run.end_to_end == e2e.data  # the draws and their spread too
    assert set(run.end_to_end) == {"untuned_us", "tuned_us", "match", "max_abs_diff",
                                   "fallback", "error", "draws", "untuned_draws_us",
                                   "tuned_draws_us", "untuned_spread", "tuned_spread",
                                   "slow_draws"}
    text = render_report(run)
    assert "<b>End to end</b>" in text and "outputs match" in text
    assert (f"least of 2 fresh processes (spread: untuned {e2e['untuned_spread']:.2f}x, tuned "
            f"{e2e['tuned_spread']:.2f}x)") in text


def test_time_to_quality_is_recorded_after_each_batch(tuned: Any) -> None:
    """The ``model_latency`` sidecar lines (and events) against a recomputation from the
    records: each task's best so far, batch by batch, a task not tuned yet at the untuned time
    the ``untuned`` line holds; wall time with the pauses left out."""
    import json

    import msviz
    from msviz.views.quality import events_quality_info, run_quality_info

    session, _ = tuned
    lines = [json.loads(x) for x in
             (session.work_dir / "msviz_sidecar.jsonl").read_text().splitlines()]
    (untuned_line,) = [x for x in lines if x["kind"] == "untuned"]
    untuned = {t["name"]: t["untuned_us"] for t in untuned_line["tasks"]}
    assert list(untuned) == [t.name for t in session.tasks]
    assert all(v > 0 for v in untuned.values())
    assert [t["error"] for t in untuned_line["tasks"]] == [None] * 4
    started = session.events.of_kind("model_latency")[0]["started"]
    points = [x for x in lines if x["kind"] == "model_latency" and x["started"] == started]
    run = msviz.open(session.work_dir)
    trials = run.trials.sort_values("line")
    batches = list(trials.groupby(["task", "batch"], sort=False))  # in measuring order
    assert len(points) == 1 + len(batches) == 1 + len(session.events.of_kind("measured"))
    weights = {t.name: t.weight for t in session.tasks}
    best: dict[str, float] = {}
    expected = [sum(weights[n] * untuned[n] for n in weights)]
    counts, stamps = [0], [None]
    for (task, _), mine in batches:
        ok = mine[mine["status"] == "ok"]["latency_us"]
        if len(ok):
            best[task] = min(best.get(task, np.inf), float(ok.min()))
        expected.append(sum(weights[n] * best.get(n, untuned[n]) for n in weights))
        counts.append(counts[-1] + len(mine))
        stamps.append(pd.Timestamp(mine["timestamp"].max()))
    np.testing.assert_allclose([p["estimate_us"] for p in points], expected, rtol=1e-9)
    assert [p["trials"] for p in points] == counts
    assert [p["untuned_tasks"] for p in points][:2] == [4, 3]
    for point, stamp in zip(points, stamps, strict=True):
        at = pd.Timestamp(point["timestamp"])
        assert stamp is None or at >= stamp  # after the batch it follows
        assert abs(point["elapsed"] + point["paused"] - (at.timestamp() - started)) < 0.01
    assert points[-1]["paused"] > 0  # the session was paused twice, by batch steps
    # the event curve, and the work dir's read back, are the sidecar's
    live = events_quality_info(session.events.snapshot(), name="mlp")
    np.testing.assert_allclose(live.estimate_us, expected, rtol=1e-9)
    assert live.seconds == tuple(p["elapsed"] for p in points)
    assert run_quality_info(run, name="mlp")._replace(source="session") == live
    from msviz.report import render_report

    text = render_report(run)
    assert 'id="time-to-quality"' in text and "as the session recorded it" in text


def test_resume_continues_every_task(tuned: Any) -> None:
    session, _ = tuned
    again = Session("mlp", work_dir=session.work_dir, resume=True, max_trials=14,
                    end_to_end_check=False, **OPTIONS)
    again.start()
    assert again.wait(900) == "finished"
    scheduled = again.events.of_kind("scheduled")
    # the global batch number continues (one per measured batch of the first session)
    assert scheduled[0]["batch"] == len(session.events.of_kind("measured"))
    held = session.trials.groupby("task").size().to_dict()
    assert scheduled[0]["trials"] == [held[t.name] for t in session.tasks]  # the work dir
    # no second warm-up: every task has its best-latency history back
    assert {s["reason"] for s in scheduled} <= {"largest gradient",
                                                "all gradients equal: random pick"}
    assert all(g is not None and g > 0 for g in scheduled[0]["gradients"])
    assert again.trials_done == 14
    # the untuned times are the work dir's, not measured again
    assert again.events.of_kind("untuned")[0]["tasks"] == \
        session.events.of_kind("untuned")[0]["tasks"]
    text = (session.work_dir / "msviz_sidecar.jsonl").read_text()
    assert text.count('"kind":"untuned"') == 1
    # the work dir's curve: the resumed session's points follow the first session's in time
    import msviz
    from msviz.views.quality import run_quality_info

    info = run_quality_info(msviz.open(session.work_dir))
    first, second = session.events.of_kind("model_latency"), again.events.of_kind("model_latency")
    assert len(info.seconds) == len(first) + len(second)
    assert info.seconds[len(first)] == first[-1]["elapsed"] + second[0]["elapsed"]
    assert list(info.seconds) == sorted(info.seconds) and info.trials[-1] == 14


def test_single_primfunc_also_emits_tasks_and_scheduled(tmp_path: Path) -> None:
    session = Session("GMM-0", work_dir=tmp_path / "wd", max_trials=2, **OPTIONS)
    session.start()
    assert session.wait(600) == "finished"
    tasks = session.events.of_kind("tasks")[0]
    assert tasks.task == "GMM-0"
    assert tasks["tasks"] == [{"index": 0, "name": "GMM-0", "flop": 2.0 * 128**3, "weight": 1,
                               "max_trials": None, "pinned": False, "skipped": False}]
    (sched,) = session.events.of_kind("scheduled")
    assert (sched["pick"], sched["pick_name"], sched["reason"]) == (0, "GMM-0",
                                                                    "round-robin warm-up")
    assert session.events.of_kind("started")[0]["model"] is None
    assert session.end_to_end is None and not session.events.of_kind("end_to_end")


def _bind_to_threads() -> Any:
    """A user's schedule rule written for a GPU: it binds each block's outer loop to
    ``threadIdx.x``, which LLVM cannot build, so every candidate on the CPU fails."""
    from tvm.ir.utils import derived_object

    @derived_object
    class BindToThreads(compat.ms.schedule_rule.PyScheduleRule):
        def _initialize_with_tune_context(self, context: Any) -> None:
            pass

        def apply(self, sch: Any, block: Any) -> list:
            loops = sch.get_loops(block)
            if sch.get(block).name_hint != "root" and loops:
                sch.bind(loops[0], "threadIdx.x")
            return [sch]

        def clone(self) -> Any:
            return BindToThreads()

    return BindToThreads()


def test_a_task_whose_every_candidate_fails_is_done_after_two_batches(tmp_path: Path) -> None:
    from msviz.engine import RuleSet

    session = Session("mlp", work_dir=tmp_path / "wd", max_trials=20, strategy="replay",
                      end_to_end_check=False,  # not what this tests
                      **{**OPTIONS, "task_scheduler": "round-robin"})
    session.set_rules(RuleSet([_bind_to_threads()], [], {}), task=1)
    session.start()
    assert session.wait(900) == "finished", session.end_reason
    trials = session.trials
    name = session.tasks[1].name
    broken = trials[trials["task"] == name]
    assert len(broken) == 4 and (broken["status"] == "build_error").all()
    assert broken["error"].str.contains("GetThreadIndex").all()
    done = [e for e in session.events.of_kind("task_done") if e["reason"] ==
            "every candidate failed"]
    assert [e.task for e in done] == [name]
    # Round-robin: tasks 0..3 twice (task 1's second batch ends it), then 0, 2, 3 only.
    picks = [s["pick"] for s in session.events.of_kind("scheduled")]
    assert picks == [0, 1, 2, 3, 0, 1, 2, 3, 0, 2]
    others = trials[trials["task"] != name]
    assert len(others) == 16 and (others["status"] == "ok").all()


def test_pin_skip_and_switch_scheduler(tmp_path: Path) -> None:
    session = Session("mlp", work_dir=tmp_path / "wd", max_trials=12, strategy="replay",
                      end_to_end_check=False, **OPTIONS)  # not what this tests
    session.skip(0)  # idle: applied at once
    session.pin("fused_matmul1_add_relu")  # task 2
    assert session.tasks[2].name == "fused_matmul1_add_relu"
    for _ in range(2):
        session.step("batch")
        assert session.wait(600) == "paused"
    session.pin(2, False).result(timeout=60)  # paused: applied by the worker
    session.set_scheduler("round-robin").result(timeout=60)
    session.resume()
    assert session.wait(900) == "finished"
    scheduled = session.events.of_kind("scheduled")
    # Pinned twice; then RoundRobin from the start, passing over the skipped task 0.
    assert [(s["pick"], s["reason"], s["scheduler"]) for s in scheduled] == [
        (2, "pinned", "gradient"), (2, "pinned", "gradient"),
        (1, "round-robin", "round-robin"), (2, "round-robin", "round-robin"),
        (3, "round-robin", "round-robin"), (1, "round-robin", "round-robin")]
    assert session.scheduler.kind == "round-robin"
    infos = [e["tasks"] for e in session.events.of_kind("tasks")]
    assert [(t["pinned"], t["skipped"]) for t in infos[0]] == [
        (False, True), (False, False), (True, False), (False, False)]
    assert [t["pinned"] for t in infos[-1]] == [False] * 4  # the unpin was announced
    trials = session.trials
    assert trials.groupby("task").size().to_dict() == {
        session.tasks[1].name: 4, session.tasks[2].name: 6, session.tasks[3].name: 2}
