"""The task loop and scheduler: which task gets the next batch (``GradientBased``,
``RoundRobin``, ``"forecast"``), each task's tuner, and the work dir's logs."""

from msviz.engine.task_scheduler.kinds import create
from msviz.engine.task_scheduler.scheduler import TaskScheduler
from msviz.engine.task_scheduler.task_loop import TaskLoop
from msviz.engine.task_scheduler.tuner import InfrastructureError, SharedParts, Tuner

__all__ = ["InfrastructureError", "SharedParts", "TaskLoop", "TaskScheduler", "Tuner", "create"]
