"""A session's environment: the sidecar line it writes when tuning starts, and the session
options that line gives back (to re-draw a run's first batch elsewhere).

The line's fields are described in :mod:`msviz.records.environment`.
"""

from __future__ import annotations

from typing import Any

from msviz import compat, models, workloads
from msviz.engine.measure.runner import evaluator_config
from msviz.errors import WorkloadError
from msviz.records.environment import environment, rules_from_json, rules_to_json

__all__ = ["catalogue_source", "session_environment", "session_options"]


def catalogue_source(session: Any) -> tuple[str | None, str | None]:
    """The catalogue names a session's workload and model were built from (None: a user's own
    program; a catalogue name is kept only when the catalogue still builds the same program)."""
    model = session.model
    if model is not None:
        entry = models.catalogue().get(model.name)
        return None, model.name if entry is not None and \
            entry.description == model.description else None
    workload = session.workload
    try:
        built = workloads.get(workload.name)
    except WorkloadError:
        return None, None
    same = compat.structural_equal(built.mod, workload.mod)
    return (workload.name if same else None), None


def session_environment(session: Any) -> dict[str, Any]:
    """The ``environment`` sidecar line of a session (without ``v``, ``kind``, ``timestamp``)."""
    s = session
    workload_source, model_source = catalogue_source(s)
    config = evaluator_config(s._measurer_options.get("evaluator_config"))
    return environment(
        target=s.target, seed=s.seed, preset=s.preset, knobs=vars(s.knobs), rules=s.rules,
        strategy=s.strategy, max_trials=s.max_trials, trials_per_batch=s.trials_per_batch,
        workload=None if s.model is not None else {"name": s.workload.name,
                                                   "source": workload_source},
        model=None if s.model is None else {"name": s.model.name, "source": model_source},
        max_trials_per_task=s.max_trials_per_task,
        task_scheduler=s.scheduler.kind, check=s.check,
        evaluator_config={"number": int(config.number), "repeat": int(config.repeat),
                          "min_repeat_ms": int(config.min_repeat_ms),
                          "enable_cpu_cache_flush": bool(config.enable_cpu_cache_flush)},
        task_rules={str(i): rules_to_json(r) for i, r in s._task_rules.items()} or None,
    )


def session_options(env: dict[str, Any]) -> dict[str, Any]:
    """The :class:`~msviz.engine.session.Session` keyword arguments that tune as the session
    whose environment ``env`` is (all but the workload and the work dir): target, seed, preset
    with every knob, rules, strategy, budgets, task scheduler, check and evaluator config."""
    options: dict[str, Any] = {
        "target": env["target"], "seed": env.get("seed"), "preset": env.get("preset", "msviz"),
        "strategy": env.get("strategy", "evolutionary"),
        "max_trials": env["max_trials"], "trials_per_batch": env["trials_per_batch"],
        **dict(env.get("knobs") or {}),
    }
    if env.get("rules"):
        options["rules"] = rules_from_json(env["rules"])
    for key in ("max_trials_per_task", "task_scheduler", "check", "evaluator_config"):
        if env.get(key) not in (None, ""):  # "": a scheduler of the user's own
            options[key] = env[key]
    return options
