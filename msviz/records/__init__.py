"""What was measured, as plain data: MetaSchedule work dirs read into tables."""

from msviz.records.run import TRIAL_COLUMNS, Run, Trial, open_work_dir

__all__ = ["TRIAL_COLUMNS", "Run", "Trial", "open_work_dir"]
