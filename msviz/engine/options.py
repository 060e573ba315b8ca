"""A session's options checked where they are given, each error naming its argument."""

from __future__ import annotations

from typing import Any

from msviz import models
from msviz.workloads import resolve

__all__ = ["check_budget", "tasks_of"]


def check_budget(name: str, value: Any) -> None:
    """A trial budget: an int >= 1 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def tasks_of(workload: Any, target: Any, *, params: dict | None = None,
             spec: dict | None = None) -> tuple[models.Model | None, list[models.ModelTask]]:
    """What a session tunes: a model and its tasks (``extract_tasks``), or no model and one
    task, the PrimFunc workload."""
    if models.is_model(workload):
        model = models.load(workload, params=params, spec=spec)
        return model, model.extract_tasks(target)
    if params is not None or spec is not None:
        raise TypeError("params= and spec= belong to a model (a Relax IRModule, an "
                        "nn.Module), not to a single PrimFunc workload")
    one = resolve(workload)
    return None, [models.ModelTask(0, one.name, 1, one)]
