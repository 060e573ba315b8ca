"""A session's settings as one value: :class:`SessionConfig`, frozen, checked when it is made.

A :class:`~msviz.engine.session.Session` builds its config from its keyword arguments (or takes
one, :meth:`Session.from_config <msviz.engine.session.Session.from_config>`) and hands it whole
to its worker, its task loop and each task's tuner. A new session derived from another (a
re-run, a reproduction) is ``dataclasses.replace(config, ...)``: every construction, ``replace``
included, checks the values again, so a bad one fails there, naming what was wrong.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from msviz import compat
from msviz.bench.schedule import validate_mode
from msviz.engine.arguments import (
    MAX_TRIALS_PER_BATCH,
    check_budget,
    check_reuse,
    check_seconds,
    check_seed,
    check_timeout,
    library_paths,
)
from msviz.engine.measure.runner import evaluator_config
from msviz.engine.search.factory import STRATEGIES
from msviz.engine.search.presets import PRESETS, SearchKnobs, knobs_for
from msviz.engine.task_scheduler import kinds as scheduler_kinds
from msviz.models import graph_passes
from msviz.records.environment import rules_to_json
from msviz.space_generator.rules import RuleSet

__all__ = ["SessionConfig"]


@dataclass(frozen=True, eq=False)
class SessionConfig:
    """Every setting of a :class:`~msviz.engine.session.Session` (see its parameters), checked
    and resolved when made: ``target`` a Target, ``rules`` a validated RuleSet (the target's
    defaults for None), ``seed`` an int (a random one for None), ``knobs`` the SearchKnobs
    (the preset's, with a mapping's values overriding them), ``evaluator_config`` an
    ``EvaluatorConfig``, ``num_threads`` an int (the cores this process may use for None), a
    named ``task_scheduler`` its canonical kind.

    Two configs are equal when every field is: targets by their exported attributes, rules by
    their JSON (:func:`msviz.records.environment.rules_to_json`), the rest by value (a
    builder, runner or task scheduler object by identity).

    ``dataclasses.replace(config, preset="stock")`` keeps the knobs as they are (only the
    label changes); :meth:`updated` takes a Session's keyword arguments, a preset's knobs and
    knob names included.

    ``rules`` are the rules a session *starts* with; :meth:`Session.set_rules` changes the
    session's rules (``session.rules``), never its config. Treat the RuleSet as read-only.

    Raises
    ------
    ValueError, TypeError
        Naming the setting and what was wrong (the errors the Session constructor raises).
    """

    target: Any = "llvm"
    max_trials: int = 64
    trials_per_batch: int = 16
    max_trials_per_task: int | None = None
    max_seconds: float | None = None
    max_seconds_per_task: float | None = None
    strategy: str = "evolutionary"
    rules: RuleSet | None = None
    seed: int | None = None
    preset: str = "msviz"
    knobs: SearchKnobs | Mapping[str, Any] | None = None
    resume: bool = False
    builder: Any = "local"
    runner: Any = "local"
    num_threads: int | None = None
    builder_timeout: float = 30.0
    runner_timeout: float = 30.0
    evaluator_config: Any = None
    task_scheduler: Any = "forecast"
    end_to_end_check: bool = True
    check: str = "best"
    library: Any = None
    reuse: str = "improve"
    graph: str | None = None

    def __post_init__(self) -> None:
        def set_(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        set_("check", validate_mode(self.check))
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be 'evolutionary' or 'replay', not "
                             f"{self.strategy!r}")
        check_budget("max_trials", self.max_trials)
        check_budget("trials_per_batch", self.trials_per_batch, MAX_TRIALS_PER_BATCH)
        if self.max_trials_per_task is not None:
            check_budget("max_trials_per_task", self.max_trials_per_task)
        for name in ("max_seconds", "max_seconds_per_task"):
            set_(name, check_seconds(name, getattr(self, name)))
        seed = check_seed(self.seed)
        set_("seed", int.from_bytes(os.urandom(4), "little") % (2**31 - 2) + 1
             if seed is None else seed)
        if not isinstance(self.knobs, SearchKnobs):
            set_("knobs", knobs_for(self.preset, **dict(self.knobs or {})))
        elif self.preset not in PRESETS:
            knobs_for(self.preset)  # raises, naming the presets
        set_("target", compat.make_target(self.target))
        if self.runner == "local":  # measured here: at most this machine's cores
            compat.check_local_cores(self.target)
        if self.rules is not None and not isinstance(self.rules, RuleSet):
            raise TypeError(f"rules must be a RuleSet, not {type(self.rules).__name__}")
        set_("rules", (self.rules or RuleSet.default(self.target)).copy().validate())
        for name in ("builder_timeout", "runner_timeout"):
            set_(name, check_timeout(name, getattr(self, name)))
        set_("evaluator_config", _evaluator(self.evaluator_config, self.runner_timeout))
        if isinstance(self.task_scheduler, str):
            set_("task_scheduler", scheduler_kinds.create(self.task_scheduler).kind)
        set_("num_threads", self.num_threads or compat.host_cores())
        set_("resume", bool(self.resume))
        set_("end_to_end_check", bool(self.end_to_end_check))
        set_("library", library_paths(self.library))
        set_("reuse", check_reuse(self.reuse))
        if self.graph is not None:
            graph_passes.check_graph(self.graph)

    # -- what the parts take ----------------------------------------------------------------------

    def measurer_options(self) -> dict[str, Any]:
        """The :class:`~msviz.engine.measure.service.MeasuringService` keyword arguments."""
        return {"builder": self.builder, "runner": self.runner,
                "builder_timeout": self.builder_timeout, "runner_timeout": self.runner_timeout,
                "evaluator_config": self.evaluator_config, "max_workers": None}

    def updated(self, **options: Any) -> SessionConfig:
        """A copy with some settings changed, given as a Session's keyword arguments: search
        knob names (``population_size=...``) change those knobs of :attr:`knobs`; a new
        ``preset`` starts from that preset's knobs. Unknown names raise TypeError."""
        names = {f.name for f in dataclasses.fields(self)}
        knobs = {k: options.pop(k) for k in list(options) if k not in names}
        if knobs or ("preset" in options and "knobs" not in options):
            base = knobs_for(options["preset"]) if "preset" in options else self.knobs
            options["knobs"] = base.replace(**{k: v for k, v in knobs.items() if v is not None})
        return dataclasses.replace(self, **options)

    # -- equality ---------------------------------------------------------------------------------

    def _compared(self) -> tuple:
        values = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "target":
                value = json.dumps(compat.to_jsonable(value.export()), sort_keys=True)
            elif f.name == "rules":
                value = json.dumps(rules_to_json(value), sort_keys=True)
            values.append(value)
        return tuple(values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SessionConfig):
            return NotImplemented
        return self._compared() == other._compared()

    __hash__ = None  # type: ignore[assignment]  # holds a RuleSet and maybe objects


def _evaluator(config: Any, runner_timeout: float) -> Any:
    """MetaSchedule's ``EvaluatorConfig`` of None, a dict or itself, checked
    (:func:`~msviz.engine.measure.runner.evaluator_config`), whose timing fits in one
    ``runner_timeout``."""
    config = evaluator_config(config)
    timed = config.repeat * config.min_repeat_ms / 1000
    if timed >= runner_timeout:
        raise ValueError(
            f"evaluator_config min_repeat_ms={config.min_repeat_ms} x repeat={config.repeat} "
            f"times each candidate for at least {timed:g} s, not within runner_timeout="
            f"{runner_timeout:g} s (every candidate would time out): lower min_repeat_ms or "
            "repeat, or raise runner_timeout")
    return config
