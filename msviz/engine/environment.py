"""A session's environment: the sidecar line it writes when tuning starts, written from its
:class:`~msviz.engine.config.SessionConfig`, and the config that line gives back (to re-draw a
run's first batch elsewhere).

The line's fields are described in :mod:`msviz.records.environment`. It keeps the settings that
decide what is drawn and how it is timed (target, seed, preset and every knob, rules, strategy,
budgets, task scheduler, check, evaluator config); not where it runs: the builder, runner, their
timeouts, the threads, ``resume`` and ``end_to_end_check`` take the reader's defaults.

The same concept in the records: :mod:`msviz.records.environment` reads the line.
"""

from __future__ import annotations

from typing import Any

from msviz import compat, models, workloads
from msviz.engine.config import SessionConfig
from msviz.errors import WorkloadError
from msviz.records.environment import environment, rules_from_json, rules_to_json
from msviz.space_generator.rules import RuleSet

__all__ = ["catalogue_source", "config_of", "environment_of"]

#: Settings the line may leave out (None or ""), then the config's default is read back.
OPTIONAL = ("max_trials_per_task", "max_seconds", "max_seconds_per_task", "task_scheduler",
            "check", "evaluator_config", "library", "reuse", "graph")


def catalogue_source(workload: Any, model: Any = None) -> tuple[str | None, str | None]:
    """The catalogue names a session's workload and model were built from (None: a user's own
    program; a catalogue name is kept only when the catalogue still builds the same program)."""
    if model is not None:
        entry = models.catalogue().get(model.name)
        return None, model.name if entry is not None and \
            entry.description == model.description else None
    try:
        built = workloads.get(workload.name)
    except WorkloadError:
        return None, None
    same = compat.structural_equal(built.mod, workload.mod)
    return (workload.name if same else None), None


def environment_of(config: SessionConfig, *, workload: dict[str, Any] | None,
                   model: dict[str, Any] | None,
                   task_rules: dict[int, RuleSet] | None = None) -> dict[str, Any]:
    """The ``environment`` sidecar line of a session (without ``v``, ``kind``, ``timestamp``).

    Parameters
    ----------
    config : SessionConfig
        The session's settings (its rules and task scheduler those it tunes with now).
    workload, model : dict | None
        ``{"name": ..., "source": <catalogue name or None>}`` of the PrimFunc (None for a
        model) or of the model (None for one PrimFunc); see :func:`catalogue_source`.
    task_rules : dict, optional
        Rules set for one task alone, by task index.
    """
    c = config
    scheduler = c.task_scheduler if isinstance(c.task_scheduler, str) else \
        c.task_scheduler.kind  # "": a scheduler of the user's own
    evaluator = c.evaluator_config
    return environment(
        target=c.target, seed=c.seed, preset=c.preset, knobs=vars(c.knobs), rules=c.rules,
        strategy=c.strategy, max_trials=c.max_trials, trials_per_batch=c.trials_per_batch,
        workload=workload, model=model, max_trials_per_task=c.max_trials_per_task,
        task_scheduler=scheduler, check=c.check, max_seconds=c.max_seconds,
        max_seconds_per_task=c.max_seconds_per_task,
        library=list(c.library) if c.library else None, reuse=c.reuse, graph=c.graph,
        evaluator_config={"number": int(evaluator.number), "repeat": int(evaluator.repeat),
                          "min_repeat_ms": int(evaluator.min_repeat_ms),
                          "enable_cpu_cache_flush": bool(evaluator.enable_cpu_cache_flush)},
        task_rules={str(i): rules_to_json(r) for i, r in (task_rules or {}).items()} or None,
    )


def config_of(env: dict[str, Any], **settings: Any) -> SessionConfig:
    """The :class:`SessionConfig` that tunes as the session whose environment ``env`` is.

    Parameters
    ----------
    env : dict
        An environment line (:func:`environment_of`, a bundle's).
    **settings
        Config fields the line does not keep (``builder``, ``runner``, ``end_to_end_check``,
        ...), or that should differ.

    Raises
    ------
    ValueError, TypeError
        For a setting out of range or unknown (a bundle's line is untrusted input).
    """
    options: dict[str, Any] = {
        "target": env["target"], "seed": env.get("seed"), "preset": env.get("preset", "msviz"),
        "strategy": env.get("strategy", "evolutionary"),
        "max_trials": env["max_trials"], "trials_per_batch": env["trials_per_batch"],
        "knobs": dict(env.get("knobs") or {}),
    }
    if env.get("rules"):
        options["rules"] = rules_from_json(env["rules"])
    for key in OPTIONAL:
        if env.get(key) not in (None, ""):
            options[key] = env[key]
    return SessionConfig(**{**options, **settings})
