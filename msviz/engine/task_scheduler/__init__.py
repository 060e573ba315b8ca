"""The task loop and scheduler: which task gets the next batch (``GradientBased``,
``RoundRobin``, ``"forecast"``) and the work dir's task log. Each task's tuning itself is
:mod:`msviz.engine.tuning`'s."""

from msviz.engine.task_scheduler.kinds import create
from msviz.engine.task_scheduler.scheduler import TaskScheduler
from msviz.engine.task_scheduler.task_loop import TaskLoop

__all__ = ["TaskLoop", "TaskScheduler", "create"]
