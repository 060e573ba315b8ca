"""What a :class:`~msviz.records.run.Run`'s user calls ask of the rooms above the records.

``records/`` only reads work dirs into plain data. A trial's result check and a model's fresh
profile build and run kernels (the engine's measuring room, under its measure lock), and an
export writes files (:mod:`msviz.archive`): a Run hands those calls to the
:class:`RunActions` it was opened with. ``msviz.open`` and a Session's ``run`` give it the
engine's (:mod:`msviz.engine.measure.run_actions`); a Run read by ``msviz.records`` alone has
:data:`READ_ONLY`, which says how to open one that can act.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from msviz.errors import MsvizError

__all__ = ["READ_ONLY", "RunActions"]


class RunActions(Protocol):
    """The calls a Run and its trials hand on (each takes the Run or Trial it is called on)."""

    def check(self, trial: Any, **options: Any) -> Any:
        """Build ``trial``'s schedule and the untuned workload, run both, compare outputs."""

    def profile(self, run: Any, model: Any, **options: Any) -> Any:
        """Build ``run``'s model with its work dir's database and profile it now."""

    def export(self, run: Any, path: str | Path | None, *, fmt: str | None,
               overwrite: bool) -> Path:
        """Write ``run``'s trials to ``path`` (``fmt``: ``"parquet"``, ``"csv"`` or by
        suffix)."""


class _ReadOnly:
    """The actions of a Run read without the engine: each refusal names the call."""

    def _refuse(self, what: str, run: Any) -> MsvizError:
        return MsvizError(f"{what} needs the engine, and this Run of {run.work_dir} was read by "
                          "msviz.records alone: open it with msviz.open(work_dir)")

    def check(self, trial: Any, **options: Any) -> Any:
        raise self._refuse("a trial's check (it builds and runs kernels)", trial.run)

    def profile(self, run: Any, model: Any, **options: Any) -> Any:
        raise self._refuse("profiling a model anew (it builds and runs it)", run)

    def export(self, run: Any, path: str | Path | None, *, fmt: str | None,
               overwrite: bool) -> Path:
        raise self._refuse("an export (it writes files)", run)


#: The actions of a Run opened by ``msviz.records`` alone.
READ_ONLY: RunActions = _ReadOnly()
