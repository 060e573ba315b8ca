"""The engine's :class:`~msviz.records.run_actions.RunActions`: what a Run's user calls that build,
run or write are handed to. A trial's check and a model's fresh profile go through the measuring
service and its lock (:mod:`msviz.engine.measure.requests`); exports are
:mod:`msviz.archive.export`'s.
``msviz.open`` and a Session's ``run`` open Runs with :data:`ENGINE_ACTIONS`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msviz.archive import export as trial_export
from msviz.engine.measure import requests
from msviz.records.run import Run, open_work_dir

__all__ = ["ENGINE_ACTIONS", "EngineActions", "open_run"]


class EngineActions:
    """Checks and profiles through the measuring room, exports through the archive."""

    def check(self, trial: Any, **options: Any) -> Any:
        return requests.check_trial(trial, **options)

    def profile(self, run: Any, model: Any, **options: Any) -> Any:
        return requests.profile_run(run, model, **options)

    def export(self, run: Any, path: str | Path | None, *, fmt: str | None,
               overwrite: bool) -> Path:
        if fmt == "parquet":
            return trial_export.to_parquet(run, path, overwrite=overwrite)
        if fmt == "csv":
            return trial_export.to_csv(run, path, overwrite=overwrite)
        return trial_export.export(run, path, overwrite=overwrite)


#: The actions of every Run msviz hands a user.
ENGINE_ACTIONS = EngineActions()


def open_run(work_dir: str | Path, **options: Any) -> Run:
    """:func:`msviz.records.run.open_work_dir` (a work dir or a bundle) with the engine's
    actions."""
    return open_work_dir(work_dir, actions=ENGINE_ACTIONS, **options)
