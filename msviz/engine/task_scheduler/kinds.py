"""Task schedulers by name: ``create("gradient")``, ``"round-robin"`` or ``"forecast"``."""

from __future__ import annotations

from msviz.engine.task_scheduler.forecast import Forecasting
from msviz.engine.task_scheduler.scheduler import GradientBased, RoundRobin, TaskScheduler

__all__ = ["SCHEDULERS", "create"]

#: Scheduler kinds, as the ``scheduled`` event names them.
SCHEDULERS = ("gradient", "round-robin", "forecast")


def create(kind: str | TaskScheduler, *, seed: int = 1) -> TaskScheduler:
    """A scheduler by name (``"gradient"``, ``"round-robin"`` or ``"forecast"``), or the object
    itself."""
    if isinstance(kind, TaskScheduler):
        return kind
    if kind == "gradient":
        return GradientBased(seed=seed)
    if kind in ("round-robin", "round_robin", "roundrobin"):
        return RoundRobin()
    if kind == "forecast":
        return Forecasting(seed=seed)
    raise ValueError(f"task scheduler must be one of {SCHEDULERS}, not {kind!r}")
