"""What was measured, as plain data: MetaSchedule work dirs read into tables."""

from msviz.records.live import LiveRun
from msviz.records.row import ALL_COLUMNS, STATUSES, TRIAL_COLUMNS
from msviz.records.run import Run, Trial, open_work_dir

__all__ = ["ALL_COLUMNS", "STATUSES", "TRIAL_COLUMNS", "LiveRun", "Run", "Trial", "open_work_dir"]
