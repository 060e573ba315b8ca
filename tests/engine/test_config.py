"""A session's settings as one frozen SessionConfig (msviz/engine/config.py): checked once, read
by the session's attributes, written to the environment line and read back, replaced to make
another session; and no module but the session's own reads a session's private attributes."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import tvm

import msviz
from msviz import compat
from msviz.archive.sidecar_writer import SidecarWriter
from msviz.engine import Session
from msviz.engine.config import SessionConfig
from msviz.engine.environment import config_of, environment_of
from msviz.engine.search.presets import SearchKnobs
from msviz.records.environment import environments, rules_to_json
from msviz.records.sidecar import read_sidecar
from msviz.space_generator import RuleSet

ROOT = Path(__file__).resolve().parents[2] / "msviz"

#: A 2-core llvm target written out, so the expected Target is TVM's own.
TARGET = {"kind": "llvm", "num-cores": 2}


def _target_json(target: Any) -> dict:
    return compat.to_jsonable(target.export())


def test_a_sessions_config_is_frozen_and_holds_every_setting(tmp_path: Path) -> None:
    session = Session("GMM-0", work_dir=tmp_path / "wd", target=TARGET, max_trials=8,
                      trials_per_batch=4, seed=1, num_threads=2, population_size=16,
                      genetic_num_iters=1, evaluator_config={"number": 1, "repeat": 1,
                                                             "min_repeat_ms": 0})
    config = session.config
    assert dataclasses.is_dataclass(config) and type(config) is SessionConfig
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.seed = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_trials = 100  # type: ignore[misc]
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    assert _target_json(fields.pop("target")) == _target_json(tvm.target.Target(TARGET))
    assert rules_to_json(fields.pop("rules")) == rules_to_json(
        RuleSet.default(tvm.target.Target(TARGET)))
    assert fields == {
        "max_trials": 8, "trials_per_batch": 4, "max_trials_per_task": None,
        "max_seconds": None, "max_seconds_per_task": None, "strategy": "evolutionary",
        "seed": 1, "preset": "msviz",
        # the msviz preset's six choices, and the two knobs given
        "knobs": SearchKnobs(population_size=16, genetic_num_iters=1, cost_model_warmup=0,
                             cost_model_task_warmup=16, task_warmup_ranked=True,
                             skip_db_measured=True, eps_greedy_at_least_one=True,
                             sibling_carry=8),
        "resume": False, "builder": "local", "runner": "local", "num_threads": 2,
        "builder_timeout": 30.0, "runner_timeout": 30.0,
        "evaluator_config": compat.ms.runner.EvaluatorConfig(
            number=1, repeat=1, min_repeat_ms=0, enable_cpu_cache_flush=False),
        "task_scheduler": "forecast", "end_to_end_check": True, "check": "best",
        "library": None, "reuse": "improve", "graph": None,
    }
    # the session's settings are the config's
    assert (session.max_trials, session.trials_per_batch, session.seed, session.preset,
            session.strategy, session.check, session.num_threads) == (
        8, 4, 1, "msviz", "evolutionary", "best", 2)
    assert session.knobs is config.knobs and session.target is config.target
    assert session.end_to_end_check is False  # one PrimFunc: no model to check
    with pytest.raises(AttributeError):
        session.seed = 3  # type: ignore[misc]


def test_set_rules_changes_the_sessions_rules_not_its_config(tmp_path: Path) -> None:
    session = Session("GMM-0", work_dir=tmp_path / "wd", target=TARGET, seed=1)
    started = rules_to_json(RuleSet.default(tvm.target.Target(TARGET)))
    assert rules_to_json(session.rules) == started
    fewer = RuleSet.default(tvm.target.Target(TARGET)).remove("RandomComputeLocation")
    session.set_rules(fewer).result(timeout=60)  # idle: applied at once
    assert [s.name for s in session.rules.schedule_rules] == [
        s.name for s in RuleSet.default(tvm.target.Target(TARGET)).schedule_rules
        if s.name != "RandomComputeLocation"]
    assert rules_to_json(session.config.rules) == started


def test_the_config_round_trips_through_the_environment_line(tmp_path: Path) -> None:
    rules = RuleSet.default(tvm.target.Target(TARGET)).set("MultiLevelTiling",
                                                            max_innermost_factor=16)
    config = SessionConfig(
        target=TARGET, max_trials=20, trials_per_batch=5, max_trials_per_task=6,
        max_seconds=600, max_seconds_per_task=45.5, strategy="replay", rules=rules, seed=7,
        preset="stock",
        knobs={"population_size": 64, "eps_greedy": 0.25}, task_scheduler="round_robin",
        check="measured", evaluator_config={"number": 2, "repeat": 3, "min_repeat_ms": 10},
        num_threads=2)
    line = environment_of(config, workload={"name": "GMM-0", "source": "GMM-0"}, model=None)
    with SidecarWriter(tmp_path) as writer:  # as a session writes it, as a bundle reads it
        writer.write("environment", **line)
    (env,) = environments(read_sidecar(tmp_path))
    settings = {k: env[k] for k in ("target", "seed", "preset", "strategy", "max_trials",
                                    "trials_per_batch", "max_trials_per_task",
                                    "max_seconds", "max_seconds_per_task", "task_scheduler",
                                    "check", "evaluator_config")}
    assert settings == {
        "target": _target_json(tvm.target.Target(TARGET)), "seed": 7, "preset": "stock",
        "strategy": "replay", "max_trials": 20, "trials_per_batch": 5,
        "max_trials_per_task": 6, "max_seconds": 600.0, "max_seconds_per_task": 45.5,
        "task_scheduler": "round-robin", "check": "measured",
        "evaluator_config": {"number": 2, "repeat": 3, "min_repeat_ms": 10,
                             "enable_cpu_cache_flush": False}}
    assert env["knobs"] == {**vars(SearchKnobs()), "population_size": 64, "eps_greedy": 0.25}
    assert env["rules"]["schedule_rules"][[s.name for s in rules.schedule_rules].index(
        "MultiLevelTiling")]["params"]["max_innermost_factor"] == 16
    back = config_of(env, num_threads=2)
    assert back == config
    assert back.rules is not config.rules and back.knobs == config.knobs
    # equality can fail: one setting or one rule parameter apart
    assert back != dataclasses.replace(config, seed=8)
    assert back != dataclasses.replace(
        config, rules=rules.copy().set("MultiLevelTiling", max_innermost_factor=8))


def test_replace_makes_another_session_and_checks_again(tmp_path: Path) -> None:
    first = Session("GMM-0", work_dir=tmp_path / "a", target=TARGET, seed=1, max_trials=8,
                    trials_per_batch=4, population_size=16)
    other = dataclasses.replace(first.config, seed=5)
    second = Session.from_config("GMM-0", other, work_dir=tmp_path / "b")
    assert second.seed == 5 and second.config == other
    assert (second.max_trials, second.trials_per_batch, second.knobs.population_size) == (
        8, 4, 16)
    assert second.work_dir == tmp_path / "b" and second.workload.name == "GMM-0"
    with pytest.raises(ValueError, match="trials_per_batch must be an int >= 1, got 0"):
        dataclasses.replace(first.config, trials_per_batch=0)
    with pytest.raises(TypeError, match=r"seed must be an int .*not str"):
        dataclasses.replace(first.config, seed="5")
    with pytest.raises(TypeError, match="config must be a SessionConfig, not dict"):
        Session.from_config("GMM-0", {"seed": 5})  # type: ignore[arg-type]


def test_updated_takes_a_sessions_keyword_arguments() -> None:
    config = SessionConfig(target=TARGET, seed=3, knobs={"population_size": 32})
    assert config.updated(genetic_num_iters=2).knobs == SearchKnobs(
        population_size=32, genetic_num_iters=2, cost_model_warmup=0, cost_model_task_warmup=16,
        task_warmup_ranked=True, skip_db_measured=True, eps_greedy_at_least_one=True,
        sibling_carry=8)
    stock = config.updated(preset="stock", eps_greedy=0.5)
    assert (stock.preset, stock.knobs) == ("stock", SearchKnobs(eps_greedy=0.5))
    assert config.updated(seed=4).seed == 4
    with pytest.raises(TypeError, match="unknown search knob"):
        config.updated(populaton_size=8)


def test_bad_settings_fail_when_the_config_is_made() -> None:
    with pytest.raises(ValueError, match="strategy must be 'evolutionary' or 'replay', not "
                                         "'annealing'"):
        SessionConfig(strategy="annealing")
    with pytest.raises(ValueError, match="task scheduler must be one of"):
        SessionConfig(task_scheduler="fastest")
    with pytest.raises(TypeError, match=r"evaluator_config has no 'repeats'; its keys: number, "
                                        "repeat, min_repeat_ms, enable_cpu_cache_flush"):
        SessionConfig(evaluator_config={"repeats": 2})
    with pytest.raises(ValueError, match="unknown preset 'fast'"):
        SessionConfig(preset="fast")


# -- no module reads a session's private attributes ---------------------------------------------

#: Names that hold a session where msviz's modules use them (``self.session`` too).
SESSION_NAMES = frozenset({"s", "session", "sess", "source", "_session"})
#: A NamedTuple's own underscore API (``s._asdict()`` of a summary row is no session's).
NAMEDTUPLE_API = frozenset({"_asdict", "_replace", "_fields", "_make", "_field_defaults"})


def private_session_reads(text: str) -> list[tuple[int, str]]:
    """``(line, "name._attr")`` for each ``_attr`` of a session-named value in ``text``."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or \
                node.attr.startswith("__") or node.attr in NAMEDTUPLE_API:
            continue
        base = node.value
        name = base.id if isinstance(base, ast.Name) else \
            base.attr if isinstance(base, ast.Attribute) else None
        if name in SESSION_NAMES:
            out.append((node.lineno, f"{name}.{node.attr}"))
    return sorted(out)


PLANTED = '''
def f(session, s, source, w):
    session._worker.tuners
    s._task_rules[0] = None
    source._measurer_options
    w.session._loop
    return s._asdict(), session.__class__, w._cache, session.rules
'''


def test_the_check_finds_a_planted_private_read() -> None:
    assert private_session_reads(PLANTED) == [
        (3, "session._worker"), (4, "s._task_rules"), (5, "source._measurer_options"),
        (6, "session._loop")]


def test_no_module_reads_a_sessions_private_attributes() -> None:
    found = {str(path.relative_to(ROOT.parent)): reads
             for path in sorted(ROOT.rglob("*.py"))
             if path != ROOT / "engine" / "session.py"
             for reads in [private_session_reads(path.read_text())] if reads}
    assert found == {}


def test_the_package_exports_the_config() -> None:
    assert msviz.engine.SessionConfig is SessionConfig
