"""One task's tuning: its :class:`~msviz.engine.tuning.tuner.Tuner` (search, measuring through
the measuring service, the database), the records a resumed work dir already holds
(``stored``), the session's database (``work_dir_database``) and the work dir's preparation
(``workdir``). Which task tunes next is :mod:`msviz.engine.task_scheduler`'s."""

from msviz.engine.tuning.shared import SharedParts
from msviz.engine.tuning.tuner import InfrastructureError, Tuner

__all__ = ["InfrastructureError", "SharedParts", "Tuner"]
