"""Merging work dirs by target, and a stock database of one target's records.

MetaSchedule's databases ignore the target when they are queried: ``Database.QueryTuningRecord``
(``src/s_tir/meta_schedule/database/database.cc``) returns ``GetTopK(workload, 1)``, the fastest
record of the workload whatever its target, and ``compile_tir`` / ``compile_relax`` (through
``MetaScheduleApplyDatabase``) query that way. So a work dir that holds the records of two
targets gives both targets the faster one. msviz therefore

* merges work dirs into one stock work dir that keeps each record's target
  (:func:`merge`; with ``target=`` it keeps that target's records only, a dir stock
  ``JSONDatabase`` can compile from directly), and
* opens a work dir as a stock in-memory database of one target's records
  (:func:`database`), to pass to ``compile_tir`` / ``compile_relax``.

Records are read line by line; one whose workload or target cannot be read, or whose trace is
malformed or names an instruction this TVM does not know, is reported (a warning naming the file
and lines) and skipped, never merged blindly: stock ``JSONDatabase`` refuses a whole file for
one bad line. Reading the sources record by record is :mod:`msviz.archive.merge_sources`'.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from msviz import compat
from msviz.archive.merge_sources import (
    Record,
    Source,
    impossible_records,
    last_line,
    read_source,
)
from msviz.archive.writer import output_dir
from msviz.errors import MsvizWarning, TargetError, WriteError
from msviz.records import bundle as bundle_files
from msviz.records import database as db_files
from msviz.records import row as trial_row
from msviz.records.run import Run, check_work_dir
from msviz.records.targets import record_target, same_target

__all__ = ["MergeResult", "database", "impossible_records", "merge", "merge_text"]


class MergeResult(NamedTuple):
    """What :func:`merge` wrote.

    Attributes
    ----------
    work_dir : Path
        The merged work dir.
    workloads, records : int
        Lines written to its workload and tuning-record files.
    duplicates : int
        Records dropped as exact duplicates (same workload, trace, target and run_secs).
    other_target : int
        Records left out because their target is not the one asked for.
    skipped : tuple of str
        The records that could not be read (``"FILE line N: why"``), also warned about.
    targets : dict[str, int]
        Records written per target (TVM's text of the target).
    """

    work_dir: Path
    workloads: int
    records: int
    duplicates: int
    other_target: int
    skipped: tuple[str, ...]
    targets: dict[str, int]


def _report(skipped: dict[tuple[Path, str], list[int]], names: dict[Path, Path] | None = None,
            stacklevel: int = 3) -> tuple[str, ...]:
    """Warn of the skipped records (a bundle's files named by the bundle, through ``names``)."""
    names = names or {}
    out = []
    for (path, why), lines in skipped.items():
        shown = ", ".join(map(str, lines[:20])) + (" ..." if len(lines) > 20 else "")
        where = path if names.get(path.parent, path.parent) == path.parent else \
            f"{names[path.parent]} ({path.name})"
        text = f"{where} line {shown}: {why}"
        warnings.warn(f"skipped {len(lines)} record(s): {text}", MsvizWarning,
                      stacklevel=stacklevel)
        out.append(text)
    return tuple(out)


def _task_names(work_dir: Path, source: Source) -> dict[str, int]:
    """Task name -> workload hash of a work dir (names from its logs, as ``Run`` reads them)."""
    with warnings.catch_warnings():  # the same torn lines are reported by the merge
        warnings.simplefilter("ignore", MsvizWarning)
        tasks = Run(work_dir).tasks
    out = {}
    for name, w in zip(tasks["task"], tasks["workload"], strict=True):
        entry = source.workloads[int(w)]
        if entry is not None:
            out[str(name)] = entry[0]
    return out


def _check_output(out: Path) -> None:
    if out.is_symlink() or (out.exists() and not (out.is_dir() and not any(out.iterdir()))):
        raise WriteError(f"cannot merge into {out}: it exists and is not an empty directory "
                         "(name a new directory)")


def merge(work_dirs: Iterable[str | Path], out: str | Path, *, target: Any = None
          ) -> MergeResult:
    """Merge work dirs into one stock work dir, keeping each record's target.

    Workloads are merged by structural hash (one task name used for two different workloads
    in two work dirs stays two workloads, with a warning); exact duplicate records (same
    workload, trace, target and run_secs) are written once; a record whose workload or target
    cannot be read, or whose trace is malformed or uses an instruction this TVM does not know,
    is skipped with a warning naming its file and line.

    Stock ``compile_tir`` on the merged dir picks the fastest record of any target: compile
    from ``msviz.database(merged, target=...)``, or merge with ``target=``.

    Parameters
    ----------
    work_dirs : iterable of str or Path
        The work dirs, in order (records keep their order within and across them); a bundle
        (``msviz bundle``'s zip) is read as its work dir (extracted to a temporary folder,
        removed when the merge ends).
    out : str | Path
        A new directory (or an empty one); written under a temporary name, then renamed.
    target : str | dict | tvm.target.Target, optional
        Keep only the records of this target (structurally equal Targets; ``"llvm"`` is this
        machine's CPU, as everywhere in msviz).

    Returns
    -------
    result : MergeResult

    Raises
    ------
    msviz.errors.WorkDirError
        When a source is neither a work dir nor a bundle (:class:`BundleError` for a bundle
        that cannot be read).
    msviz.errors.WriteError
        When ``out`` exists (not empty) or cannot be written; nothing is left behind.
    """
    if isinstance(work_dirs, (str, os.PathLike)):
        work_dirs = [work_dirs]  # one work dir, not the characters of its name
    sources = [Path(d) for d in work_dirs]
    if not sources:
        raise ValueError("merge needs at least one work dir")
    for work_dir in sources:
        if not bundle_files.is_bundle(work_dir):
            check_work_dir(work_dir)
    out = Path(out)
    _check_output(out)
    keep = _target_filter(target)
    with tempfile.TemporaryDirectory(prefix="msviz-merge-") as unpacked:
        dirs = [bundle_files.extract_bundle(d, Path(unpacked) / str(i))[0]
                if bundle_files.is_bundle(d) else d for i, d in enumerate(sources)]
        return _merge(dirs, out, keep, dict(zip(dirs, sources, strict=True)))


def _merge(sources: list[Path], out: Path, keep: Any, names: dict[Path, Path]) -> MergeResult:
    """:func:`merge` of work dirs (a bundle's extracted; ``names``: each dir as the user named
    it, for the messages)."""
    skipped: dict[tuple[Path, str], list[int]] = {}
    workload_index: dict[int, int] = {}
    workload_lines: list[str] = []
    record_lines: list[str] = []
    seen: set[tuple] = set()
    named: dict[str, tuple[int, Path]] = {}
    duplicates = other = 0
    targets: dict[str, int] = {}
    for work_dir in sources:
        source = read_source(work_dir, skipped)
        for name, shash in _task_names(work_dir, source).items():
            first = named.setdefault(name, (shash, work_dir))
            if first[0] != shash:
                warnings.warn(
                    f"task {name!r} is a different workload in {names[first[1]]} and "
                    f"{names[work_dir]} "
                    f"(structural hash {first[0]} and {shash}): kept apart by structural hash",
                    MsvizWarning, stacklevel=3)
        for rec in source.records:
            if not keep(rec.target_text, rec.target):
                other += 1
                continue
            trace, run_secs, _, _ = rec.body
            text = rec.target_text
            key = (rec.shash, json.dumps(trace), text,
                   None if run_secs is None else tuple(run_secs))
            if key in seen:
                duplicates += 1
                continue
            seen.add(key)
            if rec.shash not in workload_index:
                workload_index[rec.shash] = len(workload_lines)
                payload = next(w[2] for w in source.workloads if w and w[0] == rec.shash)
                workload_lines.append(json.dumps([str(rec.shash), payload]))
            record_lines.append(json.dumps([workload_index[rec.shash], rec.body],
                                           separators=(",", ":")))
            targets[text] = targets.get(text, 0) + 1
    _write_work_dir(out, workload_lines, record_lines)
    return MergeResult(out, len(workload_lines), len(record_lines), duplicates, other,
                       _report(skipped, names, stacklevel=4), targets)


def _target_filter(target: Any) -> Any:
    """``keep(text, target)``: whether a record of that target is kept (each text decided once)."""
    want = None if target is None else record_target(target)
    decided: dict[str, bool] = {}

    def keep(text: str, record_target: Any) -> bool:
        if want is None:
            return True
        if text not in decided:
            decided[text] = same_target(record_target, want)
        return decided[text]

    return keep


def merge_text(result: MergeResult) -> str:
    """What a merge wrote, in a few lines (``msviz merge`` prints it)."""
    lines = [f"wrote {result.work_dir}: {result.workloads} workload(s), {result.records} "
             f"record(s); dropped {result.duplicates} exact duplicate(s)"
             + (f", {result.other_target} record(s) of other targets" if result.other_target
                else "")
             + (f", skipped {len(result.skipped)} unreadable group(s)" if result.skipped else "")]
    lines += [f"  {count} record(s) of {text}" for text, count in result.targets.items()]
    return "\n".join(lines)


def _write_work_dir(out: Path, workload_lines: list[str], record_lines: list[str]) -> None:
    """Both database files into a temporary directory next to ``out``, then renamed to it."""
    with output_dir(out, empty_ok=True) as tmp:
        for name, lines in ((db_files.WORKLOAD_FILE, workload_lines),
                            (db_files.RECORD_FILE, record_lines)):
            with open(tmp / name, "w", encoding="utf-8") as f:
                f.write("".join(line + "\n" for line in lines))


def database(work_dir: str | Path, *, target: Any = None, top_k: int | None = 1) -> Any:
    """A stock MetaSchedule database of a work dir's records of one target.

    Pass it to ``compile_tir`` / ``compile_relax`` (or ``with db:`` around
    ``MetaScheduleApplyDatabase``): they then pick ``target``'s best record, not the fastest
    record of any target, as a ``JSONDatabase`` of a mixed work dir would.

    TVM parses each trace it holds (3 to 15 ms a record: minutes for tens of thousands), so by
    default it holds only what those queries use, each workload's fastest valid record.

    Parameters
    ----------
    work_dir : str | Path
        A work dir (e.g. one written by :func:`merge`).
    target : str | dict | tvm.target.Target, optional
        Whose records to keep (structurally equal Targets; ``"llvm"``: this machine's CPU).
        None keeps every record.
    top_k : int, optional
        The fastest valid records kept per workload (by mean ``run_secs``, as
        ``Database.GetTopK`` sorts; failed records are never among them); None keeps every
        record of the target, failed ones too (e.g. to seed a new tuning run).

    Returns
    -------
    database : tvm.s_tir.meta_schedule.database.MemoryDatabase

    Raises
    ------
    msviz.errors.TargetError
        When no readable record has ``target`` (the message lists the targets there are).
    """
    work_dir = Path(work_dir)
    check_work_dir(work_dir)
    keep = _target_filter(target)
    skipped: dict[tuple[Path, str], list[int]] = {}
    source = read_source(work_dir, skipped)
    matching = [r for r in source.records if keep(r.target_text, r.target)]
    if target is not None and not matching:
        _report(skipped)
        present = sorted({rec.target_text for rec in source.records})
        raise TargetError(f"{work_dir} holds no record of target {record_target(target)}; its "
                          f"records' targets: {', '.join(present) or 'none'}")
    db = compat.ms.database.MemoryDatabase()
    record_path = work_dir / db_files.RECORD_FILE
    readable = []
    for rec in matching:  # what would kill TVM's reader, said and left out before ranking
        problem = compat.zero_tile_decision(rec.body[0]) if rec.body else None
        if problem:
            why = f"its trace cannot be read ({problem})"
            skipped.setdefault((record_path, why), []).append(rec.line)
        else:
            readable.append(rec)
    for rec in _fastest(readable, top_k):
        try:
            compat.register_intrins_for(rec.body)
            record = compat.tuning_record_from_json(rec.body, rec.workload)
        except Exception as err:  # TVM's own error types: a trace it cannot replay
            why = f"its trace cannot be read ({last_line(err)})"
            skipped.setdefault((record_path, why), []).append(rec.line)
            continue
        db.commit_tuning_record(compat.TuningRecord(
            record.trace, db.commit_workload(rec.workload.mod), record.run_secs, record.target,
            record.args_info))
    _report(skipped)
    return db


def _fastest(records: list[Record], top_k: int | None) -> list[Record]:
    """The ``top_k`` fastest valid records of each workload (all records when None), in file
    order. Valid as ``TuningRecord::IsValid``: some run_secs is not the 1e10 failure mark and
    the trace holds a schedule instruction; ranked by the mean as ``GetTopK`` ranks."""
    if top_k is None:
        return records
    by_workload: dict[int, list[tuple[float, int]]] = {}
    for i, rec in enumerate(records):
        trace, secs = rec.body[0], rec.body[1]
        if trial_row.valid_run_secs(secs) and db_files.has_schedule(trace):
            by_workload.setdefault(rec.shash, []).append((trial_row.mean_run_secs(secs), i))
    chosen = sorted(i for ranked in by_workload.values() for _, i in sorted(ranked)[:top_k])
    return [records[i] for i in chosen]
