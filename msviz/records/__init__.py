"""What was measured, as plain data: MetaSchedule work dirs and bundles read into tables. Only
reads: writing is :mod:`msviz.archive`'s, building and running kernels the engine's."""

from msviz.records.live import LiveRun
from msviz.records.row import ALL_COLUMNS, STATUSES, TRIAL_COLUMNS
from msviz.records.run import Run, Trial, open_work_dir

__all__ = ["ALL_COLUMNS", "STATUSES", "TRIAL_COLUMNS", "LiveRun", "Run", "Trial", "open_work_dir"]
