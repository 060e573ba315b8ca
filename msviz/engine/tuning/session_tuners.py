"""A session's tuners: one :class:`~msviz.engine.tuning.tuner.Tuner` per task, made around the
parts they share (:class:`~msviz.engine.tuning.shared.SharedParts`) and closed with them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from msviz.engine.measure.service import MeasuringService
from msviz.engine.profile import Profile
from msviz.engine.tuning.shared import SharedParts
from msviz.engine.tuning.sibling_carry import SiblingCarry
from msviz.engine.tuning.tuner import Tuner
from msviz.errors import MsvizError

if TYPE_CHECKING:  # its type only: msviz.engine.config imports the task scheduler
    from msviz.engine.config import SessionConfig

__all__ = ["NoDesignSpaceError", "close_tuners", "make_tuners", "task_seed"]


class NoDesignSpaceError(MsvizError, RuntimeError):
    """Generating the design spaces raised for every task (the session has nothing to tune)."""




def task_seed(seed: int, index: int) -> int:
    """The seed of task ``index`` (task 0, and so a single PrimFunc, has the session's)."""
    if index == 0:
        return seed
    return (seed - 1 + index * 7919) % (2**31 - 2) + 1


def make_tuners(config: SessionConfig, tasks: list, *, work_dir: Path, rules: dict,
                emit: Any, warn: Any, profile: Profile | None = None,
                measurer: MeasuringService | None = None) -> tuple[SharedParts, list[Tuner]]:
    """The parts all tasks share (database, cost model, sidecar, measurer) and one tuner per
    task, set up on the calling thread; everything is closed again if one fails.

    Parameters
    ----------
    config : SessionConfig
        The session's settings (each task's seed is :func:`task_seed` of its seed).
    tasks, work_dir : list of ModelTask, Path
        The session's tasks and work dir.
    rules : dict
        Each task index's RuleSet now.
    emit, warn, profile : callable, callable, Profile or None
        The session's event log, its ``warning`` event and its profile.
    measurer : MeasuringService, optional
        Measure with this one (warm pools, left open) instead of a new one.
    """
    shared = SharedParts(config, work_dir=work_dir, measurer=measurer)
    shared.open(warn)
    tuners: list[Tuner] = []
    try:
        for task in tasks:
            tuner = Tuner(config, workload=task.workload, work_dir=work_dir,
                          rules=rules[task.index], seed=task_seed(config.seed, task.index),
                          emit=emit, task_index=task.index, shared=shared, profile=profile)
            tuners.append(tuner)
            tuner.setup()
        if all(t.search is None for t in tuners):
            raise NoDesignSpaceError("no task has a design space: " + "; ".join(
                f"{e['task']}: {e['message']}" for t in tuners for e in t.quarantine.entries()))
        if config.knobs.sibling_carry and len(tuners) > 1:
            SiblingCarry(tuners, config.knobs.sibling_carry).attach()
    except BaseException:
        close_tuners(tuners, shared)
        raise
    return shared, tuners


def close_tuners(tuners: list[Tuner], shared: SharedParts | None) -> None:
    """Close each tuner, then the shared parts."""
    for tuner in tuners:
        tuner.close()
    if shared is not None:
        shared.close()

