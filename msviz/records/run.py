"""A finished (or interrupted) tuning run read from its work dir: trials, tasks, best schedules."""

from __future__ import annotations

import contextlib
import functools
import gc
import math
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from msviz import compat
from msviz.errors import MsvizWarning, WorkDirError
from msviz.records import bundle as bundle_files
from msviz.records import database as db_files
from msviz.records import impossible, log_ties, open_cache
from msviz.records import logs as log_files
from msviz.records import row as trial_row
from msviz.records.coverage_types import Coverage, last_coverage
from msviz.records.environment import environments
from msviz.records.migrate_on_read import migrate_on_read
from msviz.records.model_profile import DEFAULT_THRESHOLD, recorded_or_none
from msviz.records.profile import batches_from_logs, profile_frame
from msviz.records.row import TRIAL_COLUMNS, UNSCHEDULED_ERROR
from msviz.records.run_actions import READ_ONLY, RunActions
from msviz.records.sidecar import Sidecar, read_sidecar
from msviz.records.tasks import TASK_COLUMNS, tasks_frame
from msviz.records.trial import Trial
from msviz.workloads import flop_count

__all__ = ["LOG_TASK_COLUMNS", "TASK_COLUMNS", "TRIAL_COLUMNS", "UNSCHEDULED_ERROR", "Run",
           "Trial", "check_work_dir", "open_work_dir", "tasks_frame"]

@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause Python's cycle collector while a work dir is read: reading 100,000 records makes
    millions of small objects (none in a cycle), and each few hundred allocations start a
    collection of the ever larger young heap (a third of the read time). Left as it was on
    exit (another thread may have paused it too)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Run:
    """The records of a MetaSchedule work dir, as tables.

    Parameters
    ----------
    work_dir : str | Path
        A directory holding ``database_workload.json`` and ``database_tuning_record.json``
        (and usually ``logs/``), as written by ``tune_tir``, ``tune_tasks`` or msviz.
    actions : RunActions
        What a trial's check, a fresh model profile and the exports are handed to
        (:mod:`msviz.records.run_actions`): ``msviz.open`` gives the engine's; without it they
        say to open the work dir with ``msviz.open``.

    Attributes
    ----------
    trials, tasks : pandas.DataFrame
        One row per trial (record), one per task.
    end_to_end : dict or None
        The last end-to-end check of a model msviz tuned here (``Session.check_model``):
        ``untuned_us``, ``tuned_us``, ``match``, ``max_abs_diff``, ``fallback``, ``error``,
        ``draws``, ``untuned_draws_us``, ``tuned_draws_us``, ``untuned_spread``,
        ``tuned_spread`` (None in a check recorded before it was timed in several draws),
        ``slow_draws`` (the draws in the machine's slow mode).
    migration : Migration or None
        How records written by a TVM before the ``s_tir`` rename were migrated on read
        (:mod:`msviz.records.migrate_on_read`); None when nothing needed it.
    environment : dict or None
        Where an msviz session tuned this run (versions, CPU, target, seed, preset, knobs,
        rules; see :mod:`msviz.records.environment`): its last ``environment`` sidecar line,
        None for a stock work dir.
    """

    environment: dict | None = None
    #: Every environment line, in order: the one the run started with, one per resume and one
    #: per change of rules while tuning (:meth:`environment_at`).
    environments: list = []  # noqa: RUF012 (read only)
    migration: Any = None  # a LiveRun's session writes with the pinned TVM
    #: The sidecar's lines other than trial rows (environment, end-to-end checks, profiles...).
    sidecar_entries: list = []  # noqa: RUF012 (read only; a LiveRun reads no sidecar)

    def __init__(self, work_dir: str | Path, *, migrate_workloads: Any = None,
                 actions: RunActions = READ_ONLY) -> None:
        self.work_dir = Path(work_dir)
        self.actions = actions
        self._check_layout()
        with _no_cycle_collection():
            self._workloads = db_files.read_workloads(self.work_dir / db_files.WORKLOAD_FILE)
            state, key = (None, None) if migrate_workloads else open_cache.load(self.work_dir)
            if state is not None:
                self._restore(state)
            else:
                with warnings.catch_warnings(record=True) as said:
                    warnings.simplefilter("always")
                    self._read(migrate_workloads)
                for w in said:  # given again as they were, and kept for the next open
                    warnings.warn(w.message, stacklevel=3)
                if key is not None and self.migration is None:  # msviz's own said again
                    open_cache.keep(self.work_dir, key, self._state(
                        [str(w.message) for w in said if isinstance(w.message, MsvizWarning)]))
            sidecar = read_sidecar(self.work_dir)  # msviz engine's extras
            self.trials = self._build_trials(sidecar)
            checks = [e for e in sidecar.other if e.get("kind") == "end_to_end"]
            self.end_to_end = _end_to_end_data(checks[-1]) if checks else None
            self.environments = environments(sidecar)
            self.environment = (self.environments or [None])[-1]
            self._profile_rows = [e for e in sidecar.other if e.get("kind") == "profile"]
            self.sidecar_entries = sidecar.other
            self.tasks = tasks_frame(self.trials, self._task_names, self._flops, self._weights,
                                     task_ids=self._task_ids, done=self._done)

    def environment_at(self, line: int) -> dict | None:
        """The environment the record at ``line`` (1-based) was made in: the last environment
        line whose ``first_line`` is at most ``line``. Lines written before msviz kept
        ``first_line`` (and stock work dirs) give :attr:`environment`, the last one."""
        envs = self.environments
        if not envs or any("first_line" not in e for e in envs):
            return self.environment
        made = [e for e in envs if int(e["first_line"]) <= int(line)]
        return made[-1] if made else envs[0]

    def _adopt(self, base: Run) -> None:
        """Take what ``base`` read of the work dir (a LiveRun starts from one read)."""
        self._workloads, self._records = base._workloads, base._records
        self._task_names, self._flops = dict(base._task_names), dict(base._flops)
        self._weights = dict(base._weights)
        self._task_ids, self._done = dict(base._task_ids), dict(base._done)
        self.task_table, self.total_latency_us = base.task_table, base.total_latency_us
        self._profile_rows = list(base._profile_rows)
        self.environments, self.environment = list(base.environments), base.environment

    def _read(self, migrate_workloads: Any) -> None:
        """Read the records and logs (migrated on read where they are old)."""
        self._records = db_files.read_record_columns(
            self.work_dir / db_files.RECORD_FILE, len(self._workloads)
        )
        self.migration = migrate_on_read(self.work_dir, self._workloads, self._records,
                                         given=migrate_workloads, loaded=self._workload_mods)
        if self.migration is not None:
            self._workloads, self._records = self.migration.workloads, self.migration.records
        self._task_names, self._flops, self._weights, log_trials = self._read_logs()
        self._logged = log_ties.logged_per_record(self._records.workload, log_trials)
        self._impossible = impossible.find_impossible(  # warned: kept in the cache
            self.work_dir / db_files.RECORD_FILE, self._records, self._flops, self._tuning_record)

    def _state(self, said: list[str]) -> open_cache.OpenState:
        return open_cache.OpenState(
            self._records, self._logged, self._task_names, self._flops, self._weights,
            self._task_ids, self._done, self._task_rows, self.total_latency_us, said,
            self._impossible)

    def _restore(self, state: open_cache.OpenState) -> None:
        """What :meth:`_read` computed, from the cache (its warnings given again)."""
        self._records, self._logged = state.records, state.logged
        self._task_names, self._flops, self._weights = state.names, state.flops, state.weights
        self._task_ids, self._done, self._impossible = state.task_ids, state.done, state.impossible
        self._task_rows, self.total_latency_us = state.task_table, state.total_latency_us
        self.task_table = pd.DataFrame([t._asdict() for t in self._task_rows],
                                       columns=LOG_TASK_COLUMNS)
        for message in state.warnings:
            warnings.warn(message, MsvizWarning, stacklevel=4)

    @property
    def impossible(self) -> dict[int, str]:
        """The records that cannot be true (:mod:`msviz.records.impossible`): record line ->
        why; what a merge, a bundle or an export keeps out."""
        return dict(self._impossible)

    def infer_design_spaces(self, rules: Any = None) -> pd.Series:
        """Each trial's design space where the records do not say it (a stock work dir), under
        the target's default rules, labelled ``design_space_inferred`` in :attr:`trials`
        (:mod:`msviz.records.inferred_spaces`)."""
        from msviz.records.inferred_spaces import infer_design_spaces  # heavy: a TuneContext

        return infer_design_spaces(self, rules)

    @property
    def coverage(self) -> Coverage | None:
        """A tuning library's coverage: ``msviz.open(path, library=...)``'s, else the last
        ``library_coverage`` sidecar line (None without; a LiveRun reads none)."""
        other = self.sidecar_entries
        return getattr(self, "library_coverage", None) or last_coverage(other, str(self.work_dir))

    migrated = property(lambda self: self.migration is not None and self.migration.migrated > 0,
                        doc="Whether records written by an older TVM were migrated on read.")

    @property
    def profile(self) -> pd.DataFrame:
        """Where the time went (``task``, ``batch``, ``stage``, ``seconds``): an msviz run's
        profile as its session recorded it, or for a stock work dir the time between batches
        from its logs' stamps (stage ``"logs: time between batches"``)."""
        if self._profile_rows:
            return profile_frame(self._profile_rows)
        return batches_from_logs(self.trials)

    def model_profile(self, model: Any = None, *, refresh: bool = False,
                      threshold: float = DEFAULT_THRESHOLD, **options: Any) -> pd.DataFrame:
        """A tuned model's time per task inside the model against its tuned latency, ``flagged``
        where in-model / tuned > ``threshold``: the profile recorded after tuning (read, never
        compiled), or (with ``refresh=True``, or none recorded) a fresh one built and timed in
        the engine's measuring room. See :func:`msviz.engine.measure.requests.profile_run` for
        ``model`` and ``options`` (``runs``, ``draws``) and the frame's columns."""
        recorded = None if refresh else recorded_or_none(self, threshold)
        if recorded is not None:
            return recorded
        return self.actions.profile(self, model, threshold=threshold, **options)

    def _check_layout(self) -> None:
        check_work_dir(self.work_dir)

    # -- names, FLOPs and error texts from the logs -------------------------------------------

    @functools.cached_property
    def _workload_mods(self) -> dict[int, Any]:
        return {}

    def workload_mod(self, workload: int) -> Any:
        """The IRModule of the workload at line index ``workload`` of the workload file."""
        mods = self._workload_mods
        if workload not in mods:
            entry = self._workloads[workload]
            if entry is None:
                raise WorkDirError(f"workload line {workload + 1} of {self.work_dir} is corrupt")
            mods[workload] = compat.Workload.from_json([entry.shash, entry.payload]).mod
        return mods[workload]

    def workload_key(self, workload: int) -> str:
        """The structural hash MetaSchedule stored for the workload at line index ``workload``
        (the same workload tuned in two work dirs has the same key, whatever its task name)."""
        entry = self._workloads[workload]
        if entry is None:
            raise WorkDirError(f"workload line {workload + 1} of {self.work_dir} is corrupt")
        return str(entry.shash)

    def _used_workloads(self) -> list[int]:
        return sorted(set(self._records.workload))

    def _read_logs(self) -> tuple[dict[int, str], dict[int, float], dict[int, float], dict]:
        """Names, FLOPs, weights and log entries per workload (:func:`log_ties.tie_tasks`)."""
        used = self._used_workloads()
        flops = {w: flop_count(self.workload_mod(w)) for w in used}
        ties = log_ties.tie_tasks(self.work_dir / "logs", used, flops, self._workloads,
                                  self.workload_mod)
        self._task_rows = ties.task_table
        self.task_table = pd.DataFrame([t._asdict() for t in ties.task_table],
                                       columns=LOG_TASK_COLUMNS)
        self.total_latency_us = ties.total_latency_us
        self._task_ids, self._done = ties.task_ids, ties.done
        return ties.names, flops, ties.weights, ties.log_trials

    # -- tables ---------------------------------------------------------------------------------

    def _build_trials(self, sidecar: Sidecar) -> pd.DataFrame:
        """Column by column: log entries and the sidecar's extras matched per record line."""
        records = self._records
        workloads, lines, run_secs = records.workload, records.line, records.run_secs
        task_trial = log_ties.task_trials(workloads)
        logged = self._logged
        empty: dict = {}
        extras = [sidecar.trials.get(line, empty) for line in lines]
        kinds, errors = [], []
        for entry, extra in zip(logged, extras):
            if extra.get("error"):  # the sidecar's text is the runner's own, untruncated
                kinds.append(extra.get("error_kind"))
                errors.append(extra["error"])
            else:
                kinds.append(entry.error_kind if entry else None)
                errors.append(entry.error if entry else None)
        latency = [trial_row.mean_latency_us(secs) for secs in run_secs]
        status = [trial_row.status(*args) for args in zip(run_secs, kinds, errors)]
        trial_row.fail_unscheduled(records.unscheduled, lines, status, latency, errors)
        impossible.fail_impossible(self._impossible, lines, status, latency, errors)
        data: dict[str, list] = {
            "task": [self._task_names[w] for w in workloads],
            "trial": list(range(len(lines))),
            "task_trial": task_trial,
            "status": status,
            "latency_us": latency,
            "gflops": [trial_row.gflops(self._flops.get(w, math.nan), lat)
                       for w, lat in zip(workloads, latency)],
            "run_secs": run_secs,
            "error": errors,
            "workload": workloads,
            "line": lines,
            "logged_at": [entry.time if entry else None for entry in logged],
        }
        for column in trial_row.SIDECAR_COLUMNS[:-1]:  # a stock dir: no sidecar, no lookups
            data[column] = ([extra.get(column) for extra in extras] if sidecar.trials
                            else [None] * len(lines))
        data["timestamp"] = [trial_row.iso_timestamp(v) for v in data["timestamp"]]
        again = sidecar.remeasures
        data["remeasured_secs"] = [
            [e.get("run_secs") for e in again[line]] if line in again else None for line in lines
        ]
        return trial_row.trials_frame(data)

    # -- trials ---------------------------------------------------------------------------------

    def trial(self, index: int) -> Trial:
        """The trial at row ``index`` of :attr:`trials`."""
        if not -len(self.trials) <= index < len(self.trials):
            raise IndexError(f"trial {index} is out of range: this run has {len(self.trials)} "
                             "trials")
        return Trial(self, index % len(self.trials))

    def best(self, task: str | None = None) -> Trial:
        """The record ``compile_tir`` would pick: stock ``Database.get_top_k(workload, 1)``.

        That is the least mean of ``run_secs`` among the task's valid records (some time that
        is not the ``1e10`` failure mark, a trace with a schedule instruction), the first in
        file order among equal means; its ``latency_us`` is that mean (in µs).

        Parameters
        ----------
        task : str, optional
            Which task; may be left out when the run has one task.
        """
        tasks = self.tasks
        if task is None:
            if len(tasks) == 0:
                raise ValueError(
                    f"no tuning records in {self.work_dir}: there is no best trial yet "
                    f"({db_files.RECORD_FILE} holds no readable record)"
                )
            if len(tasks) != 1:
                raise ValueError(
                    f"this run has {len(tasks)} tasks ({', '.join(tasks['task'])}): pass task=..."
                )
            row = tasks.iloc[0]
        else:
            hits = tasks[tasks["task"] == task]
            if hits.empty:
                raise KeyError(f"no task {task!r} in this run; tasks: {', '.join(tasks['task'])}")
            row = hits.iloc[0]
        if row["best_trial"] is None or pd.isna(row["best_trial"]):
            raise ValueError(f"task {row['task']!r} has no successful trial yet")
        return self.trial(int(row["best_trial"]))

    def _record_location(self, index: int) -> tuple[int, int, int]:
        """(record line, its byte offset, workload index) of the trial at row ``index``."""
        records = self._records
        return records.line[index], records.offset[index], records.workload[index]

    def _workload_entry(self, workload: int) -> db_files.WorkloadLine | None:
        return self._workloads[workload]

    def _tuning_record(self, index: int) -> Any:
        line, offset, workload = self._record_location(index)
        path = self.work_dir / db_files.RECORD_FILE
        entry = self._workload_entry(workload)
        try:
            _, record_json = db_files.read_record_json(path, offset)
            if self.migration is not None:
                record_json = self.migration.record_json(record_json)
            workload_obj = compat.Workload.from_json([entry.shash, entry.payload])
            compat.register_intrins_for(record_json)
            return compat.tuning_record_from_json(record_json, workload_obj)
        except Exception as err:  # a line corrupted inside its trace: say where
            raise WorkDirError(
                f"{path} line {line} (trial {index}) cannot be read as a tuning record: "
                f"{str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__}"
            ) from None

    def to_parquet(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the trials (typed, task columns joined) as Parquet; needs ``msviz[parquet]``.
        An existing file is replaced only with ``overwrite=True``, a link, FIFO, device or
        folder never. See :mod:`msviz.archive.export`."""
        return self.actions.export(self, path, fmt="parquet", overwrite=overwrite)

    def to_csv(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write the trials as CSV (lists as JSON text); ``overwrite`` as :meth:`to_parquet`."""
        return self.actions.export(self, path, fmt="csv", overwrite=overwrite)

    def export(self, path: str | Path | None = None, *, overwrite: bool = False) -> Path:
        """Write the trials as Parquet or CSV by ``path``'s suffix (default
        ``WORK_DIR/trials.parquet``; CSV without pyarrow); ``overwrite`` as :meth:`to_parquet`."""
        return self.actions.export(self, path, fmt=None, overwrite=overwrite)

    @property
    def record_targets(self) -> list[str]:
        """Each record's target as the JSON text the database holds (file order)."""
        return list(self._records.target)

    def __len__(self) -> int:
        return len(self.trials)

    def __repr__(self) -> str:
        return f"Run({str(self.work_dir)!r}, tasks={len(self.tasks)}, trials={len(self.trials)})"


#: The fields of an end-to-end check (``Session.check_model``, the ``end_to_end`` event).
END_TO_END_FIELDS = ("untuned_us", "tuned_us", "match", "max_abs_diff", "fallback", "error",
                     "draws", "untuned_draws_us", "tuned_draws_us", "untuned_spread",
                     "tuned_spread", "slow_draws")


def _end_to_end_data(entry: dict) -> dict:
    """A sidecar ``end_to_end`` line as the event's data (NaN stored as null comes back None)."""
    return {key: entry.get(key) for key in END_TO_END_FIELDS}


#: The columns of :attr:`Run.task_table` (the task table MetaSchedule logged last).
LOG_TASK_COLUMNS = list(log_files.LogTask._fields)


def check_work_dir(work_dir: str | Path) -> None:
    """Raise :class:`WorkDirError` unless ``work_dir`` holds both database files."""
    wd = Path(work_dir)
    missing = [n for n in (db_files.WORKLOAD_FILE, db_files.RECORD_FILE)
               if not (wd / n).is_file()]
    if not wd.is_dir() or missing:
        what = "does not exist" if not wd.exists() else (
            "is not a directory" if not wd.is_dir() else f"lacks {', '.join(missing)}"
        )
        raise WorkDirError(
            f"{wd} is not a MetaSchedule work dir: it {what}. A work dir must contain "
            f"{db_files.WORKLOAD_FILE} and {db_files.RECORD_FILE} (and usually logs/)"
        )


def open_work_dir(work_dir: str | Path, *, actions: RunActions = READ_ONLY) -> Run:
    """Open a MetaSchedule work dir without re-tuning.

    Parameters
    ----------
    work_dir : str | Path
        A directory written by ``tune_tir``/``tune_tasks`` or by msviz, or a bundle of one
        (``msviz bundle``'s zip: see :mod:`msviz.records.bundle`).
    actions : RunActions
        What its check, fresh model profile and exports are handed to
        (:mod:`msviz.records.run_actions`; ``msviz.open`` gives the engine's).

    Returns
    -------
    run : Run
    """
    if bundle_files.is_bundle(work_dir):
        return bundle_files.open_bundle(work_dir, functools.partial(Run, actions=actions))
    return Run(work_dir, actions=actions)
