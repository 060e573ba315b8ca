"""Work dirs written by TVM before the ``s_tir`` rename: migrated on read, or into a new work dir.

:func:`migrate_on_read` is what :class:`msviz.records.run.Run` calls: when a work dir's traces
use ``GetBlock`` (TVM <= 0.23) or its workloads cannot be loaded by the pinned TVM, it returns a
:class:`Migration` that stands in for the old files in memory: each workload rebuilt (from the
TVMScript the per-task log printed, migrated; or from the workload the caller names), each
record's trace and target rewritten as :mod:`msviz.records.s_tir_rename` says. Records that
cannot be migrated are left out, with a warning naming their lines.
:mod:`msviz.archive.migrate` writes the migrated records as a new stock work dir.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msviz import compat
from msviz.errors import MsvizWarning, WorkDirError
from msviz.records import database as db_files
from msviz.records import logs as log_files
from msviz.records import s_tir_rename as rules

__all__ = ["Migration", "migrate_on_read"]

_OLD_TRACE = b'["GetBlock",'


@dataclass
class Migration:
    """How an old work dir was rewritten in memory for the pinned TVM.

    Attributes
    ----------
    workloads : list of WorkloadLine or None
        The workload lines as the pinned TVM writes them (its structural hash, its JSON).
    records : RecordColumns
        The records that could be migrated (targets rewritten), in file order.
    migrated : int
        How many records were rewritten.
    renames : list of str
        Each kind of rewrite applied (``"GetBlock -> GetSBlock"``, ...).
    skipped : dict
        Record line -> why it could not be migrated.
    """

    workloads: list[db_files.WorkloadLine | None]
    records: db_files.RecordColumns
    migrated: int = 0
    renames: list[str] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)
    #: How the workloads were rebuilt (TVMScript renames), apart from the records' renames.
    workload_renames: list[str] = field(default_factory=list)

    def record_json(self, record_json: list) -> list:
        """A record's ``[trace, run_secs, target, args_info]`` rewritten for the pinned TVM."""
        trace, run_secs, target, args_info = record_json
        if rules.trace_needs_migration(trace):
            trace = rules.migrate_trace_json(trace)[0]
        if isinstance(target, dict):
            target = rules.migrate_target(target)[0]
        return [trace, run_secs, target, args_info]

    @property
    def how(self) -> str:
        """The rewrites applied, in words (the records', then the workloads')."""
        return "; ".join(filter(None, [", ".join(self.renames), *self.workload_renames]))

    @property
    def note(self) -> str:
        """The one-line note: how many records were migrated, and how."""
        return f"{self.migrated} records written by an older TVM were migrated ({self.how})"

    def _add(self, renames: list[str], into: list[str] | None = None) -> None:
        into = self.renames if into is None else into
        into += [r for r in renames if r not in into]


def _has_old_traces(path: Path) -> bool:
    """Whether the first record's trace uses ``GetBlock``. Every MetaSchedule trace starts by
    getting a block, and a work dir is written by one TVM (or an old one, then appended to by
    the pinned one): its first line tells, without scanning 100,000 records."""
    if not path.is_file():
        return False
    with open(path, "rb") as f:
        return _OLD_TRACE in f.readline(1 << 20)


def _loads(entry: db_files.WorkloadLine, w: int, loaded: dict[int, Any]) -> bool:
    try:
        loaded[w] = compat.Workload.from_json([entry.shash, entry.payload]).mod
    except Exception:
        return False
    return True


def _signature(record: list) -> tuple[str, frozenset[str]]:
    """What ties a record to its workload's TVMScript: the arguments (shapes, dtypes) and the
    blocks its trace gets by name (two tasks of a model may share their arguments)."""
    trace, _, _, args_info = record
    names = {inst[2][0] for inst in trace[0] if isinstance(inst, list) and len(inst) == 4
             and inst[0] in ("GetBlock", "GetSBlock") and inst[2]}
    return json.dumps(args_info), frozenset(str(n) for n in names)


_BLOCK_NAME = re.compile(r'T\.s?block\("([^"]+)"\)')


def _log_workloads(work_dir: Path) -> list[tuple[str, set[str], Any, list[str]]]:
    """(args signature, block names, IRModule, renames) of each per-task log's workload,
    migrated."""
    logs_dir = work_dir / "logs"
    out = []
    if not logs_dir.is_dir():
        return out
    for _, log in sorted(log_files.read_task_log_files(logs_dir).items()):
        script = log_files.read_task_workload_script(log.path)
        if script is None:
            continue
        text, renames = rules.migrate_script(script)
        try:
            mod = compat.normalize_mod(compat.parse_script(text))
        except Exception:
            continue
        blocks = {"root", *_BLOCK_NAME.findall(text)}
        out.append((_args_signature(mod), blocks, mod, renames))
    return out


def _args_signature(mod: Any) -> str:
    """A workload's arguments (kinds, dtypes, shapes) as its records' ``args_info`` JSON."""
    args = [a.as_json() for a in compat.ArgInfo.from_entry_func(mod, remove_preproc=True)]
    return json.dumps(compat.to_jsonable(args))


def migrate_on_read(work_dir: Path, workloads: list[db_files.WorkloadLine | None],
                    records: db_files.RecordColumns, *,
                    given: Mapping[int, Any] | None = None,
                    loaded: dict[int, Any] | None = None) -> Migration | None:
    """The migrated workloads and records of an old work dir; None if nothing is old.

    Parameters
    ----------
    work_dir : Path
        The work dir (its ``logs/`` give the workloads' TVMScript).
    workloads, records : list of WorkloadLine, RecordColumns
        As :mod:`msviz.records.database` read them.
    given : mapping, optional
        Workload line index (0-based) -> the workload (IRModule, PrimFunc, TVMScript or a
        catalogue name), for an old workload whose log is missing.
    loaded : dict, optional
        Filled with workload index -> IRModule for each workload that loads as it is (the
        caller needs them too: each load costs milliseconds).

    Warns
    -----
    MsvizWarning
        The one-line note (:attr:`Migration.note`), and the records skipped, by line.
    """
    record_path = work_dir / db_files.RECORD_FILE
    used = sorted(set(records.workload))
    loaded = {} if loaded is None else loaded
    unreadable = [w for w in used
                  if workloads[w] is not None and not _loads(workloads[w], w, loaded)]
    if not unreadable and not given and not _has_old_traces(record_path):
        return None
    migration = Migration(list(workloads), db_files.RecordColumns([], [], [], [], []))
    signature_of: dict[int, tuple[str, frozenset[str]]] = {}  # workload -> its first record's
    lines: dict[int, list] = {}
    for line, offset, w in zip(records.line, records.offset, records.workload):
        record = db_files.read_record_json(record_path, offset)[1]
        lines[line] = record
        signature_of.setdefault(w, _signature(record))
    _rebuild_workloads(migration, work_dir, unreadable, signature_of, given or {})
    targets: dict[str, str] = {}
    for k, (line, w) in enumerate(zip(records.line, records.workload)):
        trace, _, target, _ = lines[line]
        try:
            if migration.workloads[w] is None:
                raise rules.MigrationError(
                    f"its workload (line {w + 1} of {db_files.WORKLOAD_FILE}) is in an older "
                    f"TVM's form and no task log prints it: give it as workload {w} (msviz "
                    f"migrate --workload {w}=NAME_OR_SCRIPT, or Run(..., migrate_workloads="
                    f"{{{w}: mod}}))")
            renamed = rules.trace_needs_migration(trace)
            if renamed:
                migration._add(rules.migrate_trace_json(trace)[1])
            if records.target[k] not in targets:  # a record may have no target (null)
                new_target, dropped = (None, []) if target is None else rules.migrate_target(target)
                migration._add(dropped)
                targets[records.target[k]] = json.dumps(new_target, separators=(",", ":"))
        except rules.MigrationError as err:
            migration.skipped[line] = str(err)
            continue
        migration.migrated += bool(renamed) or w in unreadable
        kept = (line, records.offset[k], w, records.run_secs[k], targets[records.target[k]])
        for column, value in zip(migration.records, kept):
            column.append(value)
    if records.unscheduled:
        migration.records = migration.records._replace(
            unscheduled=records.unscheduled.intersection(migration.records.line))
    if migration.migrated:
        warnings.warn(f"{work_dir}: {migration.note}", MsvizWarning, stacklevel=3)
    if migration.skipped:
        shown = "; ".join(f"line {line}: {why}" for line, why in
                          sorted(migration.skipped.items())[:5])
        warnings.warn(f"{record_path}: skipped {len(migration.skipped)} record(s) that cannot be "
                      f"migrated to the pinned TVM ({shown})", MsvizWarning, stacklevel=3)
    return migration


def _rebuild_workloads(migration: Migration, work_dir: Path, unreadable: list[int],
                       signature_of: dict[int, tuple[str, frozenset[str]]],
                       given: Mapping[int, Any]) -> None:
    """Replace each unreadable workload line by the pinned TVM's, from ``given`` or the logs."""
    from msviz.workloads import resolve  # heavy: the catalogue builds TE workloads

    from_logs = _log_workloads(work_dir) if unreadable else []
    taken: set[int] = set()
    for w in sorted(set(unreadable) | set(given)):
        if w in given:
            mod, renames = resolve(given[w]).mod, [f"workload {w} as given"]
            theirs = signature_of.get(w, ("", frozenset()))[0]
            if theirs and _args_signature(mod) != theirs:  # rescaling records: refuse
                named = given[w] if isinstance(given[w], str) else "a module"
                raise WorkDirError(
                    f"workload {w} as given ({named}) is not the one its records were tuned on: "
                    f"its arguments are {_args_signature(mod)}, the records' {theirs} (shapes or "
                    "dtypes differ)")
        else:
            args, names = signature_of.get(w, ("", frozenset()))
            hit = next((k for k, (sig, blocks, _, _) in enumerate(from_logs)
                        if k not in taken and sig == args and names <= blocks), None)
            if hit is None:
                migration.workloads[w] = None
                continue
            taken.add(hit)
            _, _, mod, renames = from_logs[hit]
            renames = [f"workload rebuilt from its log's TVMScript: {', '.join(renames)}"]
        shash, payload = compat.Workload(mod).as_json()
        old = migration.workloads[w]
        migration.workloads[w] = db_files.WorkloadLine(old.line if old else w + 1, str(shash),
                                                        str(payload))
        migration._add(renames, migration.workload_renames)
