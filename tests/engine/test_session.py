"""Session controls, events and the stock database, with real TVM on a tiny GMM."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import msviz
from msviz import compat
from msviz.engine import SessionStateError


def test_script_session_runs_stages_in_order(stepped: Any) -> None:
    session, seen = stepped
    assert seen == ["paused"] * 6 + ["finished"]
    assert session.state == "finished"
    kinds = [e.kind for e in session.events if e.kind not in ("log",)]
    assert kinds[:2] == ["started", "design_spaces"]
    # First steps: paused after the design spaces, then after each search stage.
    first_batch = kinds[: kinds.index("cost_model_updated") + 1]
    search = [k for k in first_batch if k not in ("paused", "resumed")]
    assert search == ["started", "design_spaces", "initial_population", "generation",
                      "generation", "picked", "built", "measured", "cost_model_updated"]
    assert kinds[-1] == "finished"
    assert kinds.count("measured") == 2 and kinds.count("picked") == 2
    assert [e.seq for e in session.events] == list(range(len(session.events)))


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
    lib = ms.tir_integration.compile_tir(db, session.workload.mod, session.target)
    assert lib is not None
    run = msviz.open(session.work_dir)
    assert len(run.trials) == 8 and run.tasks.iloc[0]["task"] == "GMM-0"
    trials = session.trials
    assert list(trials["batch"]) == [0] * 4 + [1] * 4
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
