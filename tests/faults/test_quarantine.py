"""Quarantine: a postproc, mutator or design space that raises is skipped, not the end of the
run, and the user is told: ``session.quarantine``, a ``quarantine`` event, the sidecar."""

from __future__ import annotations

import html
import threading
from pathlib import Path
from typing import Any

from tvm.ir.utils import derived_object

import msviz
from msviz import compat
from msviz.engine import RuleSet
from msviz.records.sidecar import read_sidecar
from msviz.report import render_report
from msviz.widgets import Dashboard
from tests.engine.conftest import make_tiny_session

_CALLS = [0]
_LOCK = threading.Lock()


@derived_object
class FlakyPostproc(compat.ms.postproc.PyPostproc):
    """Accepts every schedule, but raises on every third call (counted over all clones)."""

    def _initialize_with_tune_context(self, context: Any) -> None:
        pass

    def apply(self, sch: Any) -> bool:
        with _LOCK:
            _CALLS[0] += 1
            n = _CALLS[0]
        if n % 3 == 0:
            raise RuntimeError(f"flaky postproc fails on call {n}")
        return True

    def clone(self) -> Any:
        return FlakyPostproc()


def broken(base: type, what: str) -> Any:
    """A MetaSchedule Py* object (``PyMutator``, ``PyScheduleRule``...) whose ``apply`` always
    raises "this <what> is broken on purpose"."""
    def apply(self: Any, *args: Any) -> Any:
        raise ValueError(f"this {what} is broken on purpose")

    made: Any = None
    made = derived_object(type(f"Broken{base.__name__}", (base,), {
        "_initialize_with_tune_context": lambda self, context: None, "apply": apply,
        "clone": lambda self: made()}))
    return made()


def test_a_flaky_postproc_is_quarantined_and_reported(tmp_path: Path) -> None:
    _CALLS[0] = 0
    rules = RuleSet.default("llvm")
    rules.postprocs.append(RuleSet._spec(FlakyPostproc()))
    session = make_tiny_session(tmp_path / "wd", rules=rules, max_trials=4)
    session.start()
    assert session.wait(300) == "finished"
    assert session.trials_done == 4
    entries = session.quarantine
    assert [(e["task"], e["where"], e["what"]) for e in entries] == [
        ("GMM-0", "postproc", "_PyPostproc")]
    (entry,) = entries
    assert entry["message"].startswith("RuntimeError: flaky postproc fails on call ")
    # every third call raised: the count is exactly those calls (no other postproc after it)
    assert entry["count"] == _CALLS[0] // 3
    events = session.events.of_kind("quarantine")
    assert events and events[-1]["count"] == entry["count"]
    lines = [e for e in read_sidecar(session.work_dir).other if e["kind"] == "quarantine"]
    assert lines[-1]["count"] == entry["count"] and lines[-1]["what"] == "_PyPostproc"
    # said where the user looks: the Trials tab (live and read back) and the report
    count = entry["count"]
    line = (f"GMM-0: postproc _PyPostproc raised {count} time{'s' if count != 1 else ''} "
            f"and was skipped: {entry['message']}")
    title = f"Quarantined: {count} skipped (1 cause)"
    for source in (session, msviz.open(session.work_dir)):
        note = Dashboard(source).quarantine.value
        assert title in note and html.escape(line) in note, note
    page = render_report(session.work_dir)
    assert f'<h2 id="quarantine">{title}</h2>\n<ul><li>{html.escape(line)}</li></ul>' in page


def test_a_raising_mutator_is_quarantined(tmp_path: Path) -> None:
    rules = RuleSet.default("llvm")
    session = make_tiny_session(tmp_path / "wd", rules=rules, max_trials=4,
                                genetic_mutate_prob=1.0)
    # the only mutator: every mutation try raises
    session.rules.mutator_probs = {}
    session.rules.build = _with_mutator(session.rules.build,
                                         broken(compat.ms.mutator.PyMutator, "mutator"))
    session.step("generation")  # design spaces
    assert session.wait(300) == "paused"
    for _ in range(3):  # initial population, iterations 0 and 1 (the first mutates)
        session.step("generation")
        assert session.wait(300) == "paused"
    session.stop()
    assert session.wait(60) == "stopped"
    (entry,) = session.quarantine
    assert (entry["where"], entry["what"]) == ("mutator", "_PyMutator")
    assert entry["message"] == "ValueError: this mutator is broken on purpose"
    assert entry["count"] >= 1


def _with_mutator(build: Any, mutator: Any) -> Any:
    def built(*args: Any, **kw: Any) -> Any:
        rules, postprocs, _ = build(*args, **kw)
        return rules, postprocs, {mutator: 1.0}
    return built


def test_a_design_space_that_raises_fails_a_lone_task_naming_it(tmp_path: Path) -> None:
    session = make_tiny_session(tmp_path / "wd",
                                rules=RuleSet.default("llvm").insert(
                                    0, broken(compat.ms.schedule_rule.PyScheduleRule, "rule")))
    session.start()
    assert session.wait(300) == "failed"
    assert "NoDesignSpaceError" in session.end_reason
    assert "broken on purpose" in session.end_reason
    (entry,) = session.quarantine
    assert (entry["where"], entry["what"]) == ("design_space", "generate_design_space")


