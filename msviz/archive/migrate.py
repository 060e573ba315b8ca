"""``msviz migrate``: a copy of an old work dir that the pinned TVM's ``compile_tir`` accepts.

The records are read as :class:`msviz.records.run.Run` reads them (migrated on read, see
:mod:`msviz.records.migrate_on_read`), each replayed on its workload with the pinned TVM, and
written by
MetaSchedule's own ``JSONDatabase``, so the copy is a stock work dir of the pinned TVM.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msviz import compat
from msviz.archive.writer import output_dir
from msviz.errors import MsvizWarning, WorkDirError
from msviz.records import s_tir_rename as rules
from msviz.records.run import Run

__all__ = ["MigrationReport", "migrate_work_dir", "parse_workload_flags"]


@dataclass
class MigrationReport:
    """What :func:`migrate_work_dir` wrote."""

    work_dir: Path
    records: int  # records written
    migrated: int  # of them, rewritten from an older TVM's form
    how: str  # the rewrites applied, in words (Migration.how)
    skipped: dict[int, str]  # source record line -> why it was left out

    def __str__(self) -> str:
        text = (f"{self.work_dir}: {self.records} records written, {self.migrated} migrated"
                f" ({self.how or 'nothing to rewrite'})")
        for line, why in sorted(self.skipped.items()):
            text += f"\nskipped record line {line}: {why}"
        return text


def migrate_work_dir(work_dir: str | Path, out_dir: str | Path, *,
                     workloads: Mapping[int, Any] | None = None) -> MigrationReport:
    """Write a migrated copy of a work dir that the pinned TVM's ``compile_tir`` accepts.

    The original is only read. Each record is checked by replaying its trace on its workload
    with the pinned TVM; one that fails is reported and left out. The copy is written to a
    temporary directory beside ``out_dir`` and renamed into place when complete (``logs/`` are
    copied as they are; the workloads and records are written by MetaSchedule's JSONDatabase).

    Parameters
    ----------
    work_dir : str | Path
        The work dir to migrate.
    out_dir : str | Path
        Where to write the copy; must not exist yet.
    workloads : mapping, optional
        Workload line index (0-based) -> workload, for old workloads without a log.

    Returns
    -------
    report : MigrationReport
    """
    src, dst = Path(work_dir), Path(out_dir)
    if dst.exists() or dst.is_symlink():
        raise WorkDirError(f"{dst} exists: msviz migrate writes a new work dir, pick another path")
    if not dst.parent.is_dir():
        raise WorkDirError(f"cannot write {dst}: {dst.parent} is not a directory")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MsvizWarning)  # reported below instead
        run = Run(src, migrate_workloads=workloads)
    migration = run.migration
    skipped = dict(migration.skipped) if migration else {}
    with output_dir(dst, what="migrated work dir") as tmp:
        database = compat.JSONDatabase(work_dir=str(tmp))
        committed: dict[int, Any] = {}
        written = 0
        for index in range(len(run.trials)):
            trial = run.trial(index)
            try:
                record = trial.record
                trial.schedule
            except Exception as err:
                text = str(err).strip().splitlines()
                skipped[int(run.trials.at[index, "line"])] = text[-1] if text else repr(err)
                continue
            w = int(run.trials.at[index, "workload"])
            if w not in committed:
                committed[w] = database.commit_workload(record.workload.mod)
            database.commit_tuning_record(compat.TuningRecord(
                record.trace, committed[w], record.run_secs, record.target, record.args_info))
            written += 1
        if (src / "logs").is_dir():  # their TVMScript migrated too: the copy reads as current
            shutil.copytree(src / "logs", tmp / "logs")
            for log in (tmp / "logs").glob("*.log"):
                log.write_text(rules.migrate_script(log.read_text(errors="replace"))[0])
    return MigrationReport(dst, written, migration.migrated if migration else 0,
                           migration.how if migration else "", skipped)


def parse_workload_flags(flags: list[str]) -> dict[int, Any]:
    """``msviz migrate --workload N=WORKLOAD`` flags as ``{N: catalogue name or TVMScript}``."""
    out: dict[int, Any] = {}
    for flag in flags:
        index, sep, value = flag.partition("=")
        if not sep or not index.strip().isdigit() or not value:
            raise WorkDirError(f"--workload {flag!r}: expected N=WORKLOAD (N: the workload's "
                               "0-based line in database_workload.json)")
        path = Path(value)
        out[int(index)] = path.read_text() if path.is_file() else value
    return out
