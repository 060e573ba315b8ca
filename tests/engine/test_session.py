"""Session controls, events and the stock database, with real TVM on a tiny GMM."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import msviz
from msviz import compat
from msviz.engine import SessionStateError
from msviz.records.sidecar import read_sidecar
from tests.engine.conftest import batch_column


def test_script_session_runs_stages_in_order(stepped: Any) -> None:
    session, seen = stepped
    assert seen == ["paused"] * 6 + ["finished"]
    assert session.state == "finished"
    # "tasks" and "scheduled" (the task scheduler, issue 10) are checked in test_model.py
    kinds = [e.kind for e in session.events
             if e.kind not in ("log", "tasks", "scheduled", "profile", "model_latency",
                               "environment")]
    assert kinds[:2] == ["started", "design_spaces"]
    # First steps: paused after the design spaces, then after each search stage.
    first_batch = kinds[: kinds.index("cost_model_updated") + 1]
    search = [k for k in first_batch if k not in ("paused", "resumed")]
    assert search == ["started", "design_spaces", "initial_population", "generation",
                      "generation", "picked", "built", "measured", "cost_model_updated"]
    assert kinds[-1] == "finished"
    # 8 trials in batches of up to 4: two or more batches, each picked, then measured.
    batches = len(set(batch_column(session, 8, 4)))
    assert batches >= 2 and kinds.count("measured") == kinds.count("picked") == batches
    measured = [k for k in kinds if k in ("picked", "measured")]
    assert measured == ["picked", "measured"] * batches
    assert [e.seq for e in session.events] == list(range(len(session.events)))
    # the profile: a row for setting up, one per batch (after its cost model update), the end
    profiles = [e["batch"] for e in session.events.of_kind("profile")]
    assert profiles == [None, *range(batches), None]


def test_events_are_plain_snapshots(stepped: Any) -> None:
    session, _ = stepped
    init = session.events.of_kind("initial_population")[0]
    cand = init["candidates"][0]
    assert cand["origin"] == "fresh" and isinstance(cand["design_space"], int)
    assert all(isinstance(d[0], int) and isinstance(d[1], str) for d in cand["decisions"])
    gen = session.events.of_kind("generation")[1]
    assert gen["iteration"] == 1 and len(gen["scores"]) == gen["size"] == 16
    origins = {c[0] for c in gen["children"]}
    assert origins <= {"mutated", "kept", "copied"} and "mutated" in origins
    picked = session.events.of_kind("picked")[0]
    assert len(picked["candidates"]) == 4
    assert all(c["pick"] in ("score", "random") and c["predicted_score"] >= 0
               for c in picked["candidates"])
    measured = session.events.of_kind("measured")[0]
    assert [t["line"] for t in measured["trials"]] == [1, 2, 3, 4]
    assert all(t["latency_us"] > 0 and t["error"] is None for t in measured["trials"])
    updated = session.events.of_kind("cost_model_updated")[0]
    assert updated["samples"] == 4

    def plain(x: Any) -> bool:
        if isinstance(x, dict):
            return all(isinstance(k, str) and plain(v) for k, v in x.items())
        if isinstance(x, (list, tuple)):
            return all(plain(v) for v in x)
        return x is None or isinstance(x, (bool, int, float, str))

    assert all(plain(dict(e.data)) for e in session.events)


def test_database_holds_max_trials_and_compiles(stepped: Any) -> None:
    session, _ = stepped
    ms = compat.ms
    db = ms.database.JSONDatabase(work_dir=str(session.work_dir))
    assert len(db) == 8 == session.trials_done
    sch = ms.tir_integration.compile_tir(db, session.workload.mod, session.target)
    # The compiled best schedule computes the workload (GMM-0: Z = X @ Y, 1x128x128 float32).
    import numpy as np
    import tvm

    func = tvm.tirx.build(sch.mod, target=session.target)
    rng = np.random.default_rng(0)
    a, b = rng.random((1, 128, 128), "float32"), rng.random((1, 128, 128), "float32")
    c = tvm.runtime.tensor(np.zeros((1, 128, 128), "float32"))
    func(tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)
    run = msviz.open(session.work_dir)
    assert len(run.trials) == 8 and run.tasks.iloc[0]["task"] == "GMM-0"
    trials = session.trials
    column = batch_column(session, 8, 4)
    assert column[:4] == [0] * 4  # the first batch (seed 1) is full
    assert list(trials["batch"]) == column
    assert trials["predicted_score"].notna().all() and trials["timestamp"].notna().all()
    assert set(trials["origin"]) <= {"fresh", "mutated", "kept", "copied", "database"}
    assert (trials["status"] == "ok").all()


def test_wrong_states_say_so(stepped: Any, tmp_path: Path, tiny_session: Any) -> None:
    session, _ = stepped  # finished
    for call in (session.start, session.pause, session.resume, lambda: session.step("batch")):
        with pytest.raises(SessionStateError, match="finished"):
            call()
    assert session.stop() is False and session.stop() is False
    assert session.wait(0) == "finished"
    with pytest.raises(ValueError, match="step kind"):
        session.step("epoch")
    idle = tiny_session(tmp_path / "idle")
    with pytest.raises(SessionStateError, match=r"idle.*step"):
        idle.pause()
    with pytest.raises(SessionStateError, match="start"):
        idle.resume()
    assert idle.stop() is True and idle.state == "stopped"
    assert idle.stop() is False
    with pytest.raises(TypeError, match="unknown search knob"):
        tiny_session(tmp_path / "x", populaton_size=3)
    with pytest.raises(msviz.WorkDirError, match="resume=True"):
        tiny_session(session.work_dir)


def test_controls_from_other_threads_twice(tmp_path: Path, tiny_session: Any) -> None:
    session = tiny_session(tmp_path / "wd", max_trials=12)

    def twice(fn: Any) -> list:
        out: list = []
        threads = [threading.Thread(target=lambda: out.append(fn())) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sorted(out)

    assert twice(session.start) == [False, True]
    assert twice(session.pause) == [False, True]
    assert session.wait(300) == "paused"
    assert twice(session.pause) == [False, False]
    assert twice(session.resume) == [False, True]
    assert twice(lambda: session.step("batch")) == [True, True]
    assert session.wait(120) == "paused"
    assert session.events.of_kind("paused")[-1]["after"] == "batch"
    assert twice(session.stop) == [False, True]
    assert session.wait(120) == "stopped"
    assert session.events[-1].kind == "stopped"
    done = session.trials_done
    assert done % 4 == 0 and 0 < done < 12  # stopped after a whole batch, before the end
    assert len(msviz.open(session.work_dir).trials) == done


def test_failing_candidates_and_bad_callback_leave_session_running(
    tmp_path: Path, tiny_session: Any
) -> None:
    from tvm.ir.utils import derived_object

    from msviz.engine import RuleSet

    @derived_object
    class BindToThreads(compat.ms.schedule_rule.PyScheduleRule):
        """Deliberately broken: a second sketch binds a loop to threadIdx.x (fails on llvm)."""

        def _initialize_with_tune_context(self, context: Any) -> None:
            pass

        def apply(self, sch: Any, block: Any) -> list:
            if sch.get(block).name_hint == "root" or not sch.get_loops(block):
                return [sch]
            broken = sch.copy()
            broken.bind(broken.get_loops(block)[0], "threadIdx.x")
            return [sch, broken]

        def clone(self) -> Any:
            return BindToThreads()

    rules = RuleSet.default("llvm").insert(7, BindToThreads())
    session = tiny_session(tmp_path / "wd", rules=rules, seed=3)
    calls = []

    def bad(event: Any) -> None:
        calls.append(event.kind)
        raise RuntimeError("boom")

    session.subscribe(bad)
    session.start()
    assert session.wait(300) == "finished"
    assert calls == ["started"]  # called once, then unsubscribed
    errors = session.events.of_kind("callback_error")
    assert len(errors) == 1 and "boom" in errors[0]["error"]
    trials = session.trials
    assert len(trials) == 8
    failed = trials[trials["status"] == "build_error"]
    assert len(failed) >= 1 and failed["error"].str.contains("LocalBuilder").all()
    assert (trials["status"] == "ok").any()


def test_engine_exception_moves_to_failed(tmp_path: Path, tiny_session: Any) -> None:
    from tvm.ir.utils import derived_object

    from msviz.engine import RuleSet

    @derived_object
    class Raises(compat.ms.schedule_rule.PyScheduleRule):
        def _initialize_with_tune_context(self, context: Any) -> None:
            pass

        def apply(self, sch: Any, block: Any) -> list:
            raise ValueError("this rule is broken on purpose")

        def clone(self) -> Any:
            return Raises()

    session = tiny_session(tmp_path / "wd", rules=RuleSet.default("llvm").insert(0, Raises()))
    session.start()
    assert session.wait(300) == "failed"
    event = session.events[-1]
    assert event.kind == "failed" and "broken on purpose" in event["traceback"]
    with pytest.raises(SessionStateError):
        session.resume()


def test_started_and_measured_events_carry_full_rows(stepped: Any) -> None:
    session, _ = stepped
    started = session.events.of_kind("started")[0]
    assert started["target_kind"] == "llvm"
    assert started["target"]["kind"] == "llvm"
    assert started["target"]["num-cores"] == session.target.attrs["num-cores"]
    assert started["flop"] == 2 * 128**3  # GMM-0: 128x128x128 multiply-adds
    side = read_sidecar(session.work_dir).trials
    for batch, event in enumerate(session.events.of_kind("measured")):
        for row in event["trials"]:
            entry = side[row["line"]]
            assert row["batch"] == batch == entry["batch"]
            assert row["generation"] == entry["generation"]
            assert row["task"] == "GMM-0" and row["workload"] == entry["workload"] == 0
            stamp = datetime.fromisoformat(entry["timestamp"]).timestamp()
            assert abs(row["timestamp"] - stamp) < 1e-3  # the same instant
            assert row["latency_us"] == pytest.approx(
                sum(row["run_secs"]) / len(row["run_secs"]) * 1e6)
            for key in ("origin", "parent", "mutator", "pick", "predicted_score",
                        "ancestor_line", "design_space", "error_kind", "error", "task_trial"):
                assert key in row


_REJECTS = {"calls": 0, "rejects": 0}
_LOCK = threading.Lock()


def _every_third_postproc() -> Any:
    """A real PyPostproc that rejects every third schedule it sees, and counts."""
    from tvm.ir.utils import derived_object

    @derived_object
    class RejectEveryThird(compat.ms.postproc.PyPostproc):
        def _initialize_with_tune_context(self, context: Any) -> None:
            pass

        def apply(self, sch: Any) -> bool:
            with _LOCK:
                _REJECTS["calls"] += 1
                bad = _REJECTS["calls"] % 3 == 0
                _REJECTS["rejects"] += bad
            return not bad

        def clone(self) -> Any:
            return RejectEveryThird()

    return RejectEveryThird()


def test_failures_are_counted_once_in_their_stage(tmp_path: Path, tiny_session: Any) -> None:
    from msviz.engine import RuleSet

    rules = RuleSet.default("llvm")
    rules.postprocs.append(RuleSet._spec(_every_third_postproc()))
    rules.mutator_probs = {"MutateTileSize": 1.0}  # always finds a tile to change on GMM
    session = tiny_session(tmp_path / "wd", rules=rules, max_trials=4)
    counts = []
    session.step("generation")  # pauses after the design spaces
    assert session.wait(300) == "paused"
    for _ in range(3):  # initial population, generation iterations 0 and 1
        before = _REJECTS["rejects"]
        session.step("generation")
        assert session.wait(300) == "paused"
        counts.append(_REJECTS["rejects"] - before)
    session.stop()
    session.wait(120)
    init = session.events.of_kind("initial_population")[0]["failures"]
    gen0, gen1 = (e["failures"] for e in session.events.of_kind("generation")[:2])
    name = next(k for k in init if not k.startswith("mutator "))
    assert counts[0] > 0 and init == {name: counts[0]}
    assert counts[1] == 0 and gen0 == {}  # nothing is replayed when scoring iteration 0
    # Every mutated trace the postproc rejected counts once, under the postproc only.
    assert counts[2] > 0 and gen1.get(name) == counts[2]
    assert gen1.get("mutator MutateTileSize", 0) < counts[2]
