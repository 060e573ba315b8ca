"""What every task of a session shares (:class:`SharedParts`: the database, the cost model,
the measuring service, the sidecar); the tuners made around them are
:mod:`msviz.engine.tuning.session_tuners`', each task's own work
:class:`~msviz.engine.tuning.tuner.Tuner`'s."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from msviz import compat
from msviz.archive.sidecar_writer import SidecarWriter
from msviz.engine.measure.service import MeasuringService
from msviz.engine.tuning.stored import StoredRecords
from msviz.engine.tuning.work_dir_database import WorkDirDatabase
from msviz.engine.tuning.workdir import count_lines, repair_torn_tail
from msviz.records import database as db_files

if TYPE_CHECKING:  # its type only: msviz.engine.config imports the task scheduler
    from msviz.engine.config import SessionConfig

__all__ = ["SharedParts"]


class SharedParts:
    """What every task of a session shares, as MetaSchedule's ``TaskScheduler`` shares it: the
    JSON database (one work dir, one record-line counter), the XGBoost cost model, the builder
    and runner (the measuring service) and msviz's sidecar, made from the session's config (target,
    knobs, threads, builder and runner) for its work dir.

    Call :meth:`open` on the worker thread (``warn(message)`` reports repairs).
    """

    def __init__(self, config: SessionConfig, *, work_dir: Path,
                 measurer: MeasuringService | None = None) -> None:
        self.work_dir = Path(work_dir)
        self.target = config.target
        self.knobs = config.knobs
        self.num_threads = config.num_threads
        self.measurer_options = config.measurer_options()
        self.measurer: MeasuringService | None = None
        #: A measurer given from outside (several sessions measuring one after another on
        #: warm pools): used, never closed.
        self._given_measurer = measurer
        self.ready = False

    def open(self, warn: Any) -> None:
        wd = self.work_dir
        wd.mkdir(parents=True, exist_ok=True)
        for name in (db_files.WORKLOAD_FILE, db_files.RECORD_FILE):
            torn = repair_torn_tail(wd / name)
            if torn is not None:
                warn(f"cut a torn last line off {name} (kept in msviz_torn_lines.txt): "
                     f"{torn[:80]!r}")
        #: The work dir's database: MetaSchedule's files, the best stored records in memory.
        self.database = WorkDirDatabase(wd)
        self.next_line = count_lines(wd / db_files.RECORD_FILE) + 1
        self.sidecar = SidecarWriter(wd)  # cuts a torn sidecar tail first
        #: The records the work dir held when the session opened it, read once for every task.
        self.stored = StoredRecords(wd, self.database)
        self.cost_model = compat.ms.cost_model.XGBModel(
            num_warmup_samples=self.knobs.cost_model_warmup, num_tuning_cores=self.num_threads)
        self.measurer = self._given_measurer or MeasuringService(self.target,
                                                                 **self.measurer_options)
        compat.register_tensor_intrins()  # before the first TuneContext imports them, slowly
        self.ready = True

    def close(self) -> None:
        if self.measurer is not None:
            if self.measurer is not self._given_measurer:
                self.measurer.close()
            self.measurer = None
        if self.ready:
            self.sidecar.close()
        self.ready = False
