"""The sources of a merge read record by record: a work dir's (or a bundle's) workloads and
records, each one that cannot be read, is malformed, names an instruction this TVM does not
know, or cannot be true (:func:`impossible_records`, as ``msviz.open`` marks them) set aside
with its reason. :mod:`msviz.archive.merge` merges what is left."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, NamedTuple

from msviz import compat
from msviz.errors import MsvizError, MsvizWarning
from msviz.records import database as db_files
from msviz.records.run import Run

__all__ = ["Record", "Source", "impossible_records", "known_instruction", "last_line",
           "read_record", "read_source", "readable_run_secs", "well_formed"]


class Record(NamedTuple):
    """A readable record of a source work dir."""

    line: int  # its line in the record file (1-based)
    shash: int  # the workload's structural hash, recomputed as JSONDatabase does on load
    workload: Any  # the stock Workload
    body: list  # [trace, run_secs, target, args_info], as the file holds it
    target: Any  # its tvm.target.Target
    target_text: str  # TVM's text of it (the same for every spelling of one target)


class Source(NamedTuple):
    workloads: list[tuple[int, Any, str] | None]  # (shash, Workload, payload) per workload line
    records: list[Record]


def read_source(work_dir: Path, skipped: dict[tuple[Path, str], list[int]]) -> Source:
    """Every readable workload and record of a work dir; the rest goes into ``skipped``.

    Each workload is loaded and each distinct target built by TVM once; a record's trace is
    checked for its JSON shape and its instruction kinds here, not parsed (TVM parses a trace
    in ~3 ms: 5 minutes for 100,000 records); :func:`database` parses the traces it keeps.
    """
    wl_path, rec_path = work_dir / db_files.WORKLOAD_FILE, work_dir / db_files.RECORD_FILE
    workloads: list[tuple[int, Any, str] | None] = []
    for entry in db_files.read_workloads(wl_path):  # warns about torn lines itself
        if entry is None:
            workloads.append(None)
            continue
        try:
            workload = compat.Workload.from_json([entry.shash, entry.payload])
            workloads.append((int(compat.structural_hash(workload.mod)), workload, entry.payload))
        except Exception as err:  # TVM's own error types: a payload it cannot load
            workloads.append(None)
            skipped.setdefault((wl_path, f"workload cannot be read ({last_line(err)})"),
                               []).append(entry.line)
    targets: dict[str, tuple[Any, str]] = {}
    records = []
    impossible = impossible_records(work_dir)
    with open(rec_path, encoding="utf-8", errors="replace") as f:
        for number, text in enumerate(f, start=1):
            if not text.strip():
                continue
            record, why = read_record(number, text, workloads, targets)
            if record is None:
                skipped.setdefault((rec_path, why), []).append(number)
            elif number in impossible:  # open flags it; stock would rank it first
                skipped.setdefault((rec_path, f"cannot be true ({impossible[number]})"),
                                   []).append(number)
            else:
                records.append(record)
    return Source(workloads, records)


def impossible_records(work_dir: Path) -> dict[int, str]:
    """The records of a work dir that cannot be true, as :func:`msviz.open` flags them:
    ``{record line: why}`` (not warned here: the caller names them as it keeps them out)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MsvizWarning)
        try:
            return Run(work_dir).impossible
        except (MsvizError, OSError, ValueError):  # what cannot be read is named line by line
            return {}


def well_formed(index: Any, trace: Any, run_secs: Any, target: Any, args_info: Any) -> bool:
    """The JSON shape stock ``JSONDatabase`` loads: ``[workload, [[insts, decisions],
    run_secs or null, {target}, [args]]]``."""
    return (isinstance(index, int) and isinstance(trace, list) and len(trace) == 2
            and all(isinstance(part, list) for part in trace) and isinstance(target, dict)
            and isinstance(args_info, list)
            and (run_secs is None or readable_run_secs(run_secs)))


def readable_run_secs(run_secs: Any) -> bool:
    """Whether stock ``JSONDatabase`` reads these run_secs (as the work-dir reader reads them:
    ``true`` is 1.0, zero and negative times are kept; NaN, infinities and values beyond a
    float32 make stock refuse the whole file)."""
    if not isinstance(run_secs, list) or not all(isinstance(v, (int, float)) for v in run_secs):
        return False
    try:
        db_files.checked_run_secs(tuple(float(v) for v in run_secs))
    except (ValueError, OverflowError):
        return False
    return True


def read_record(number: int, text: str, workloads: list, targets: dict[str, tuple[Any, str]]
                 ) -> tuple[Record | None, str]:
    try:
        index, body = json.loads(text)
        trace, run_secs, target, args_info = body
        ok = well_formed(index, trace, run_secs, target, args_info)
    except (ValueError, TypeError):
        ok = False
    if not ok:
        return None, "not a tuning record (torn or corrupt line)"
    if not 0 <= index < len(workloads) or workloads[index] is None:
        return None, "its workload cannot be read"
    shash, workload, _ = workloads[index]
    unknown = next((inst[0] for inst in trace[0] if not known_instruction(inst)), None)
    if unknown is not None:
        return None, (f"its trace uses the instruction {unknown!r}, which this TVM does not "
                      "know (a record of another TVM version)")
    key = json.dumps(target, sort_keys=True)
    if key not in targets:
        try:
            built = compat.target_from_json(target)
            targets[key] = (built, str(built))
        except Exception as err:  # TVM's own error types: unknown kind or attribute
            targets[key] = (None, f"its target cannot be read ({last_line(err)})")
    built, target_text = targets[key]
    if built is None:
        return None, target_text
    return Record(number, shash, workload, body, built, target_text), ""


_INSTRUCTIONS: dict[str, bool] = {}


def known_instruction(inst: Any) -> bool:
    """Whether a trace's instruction ``[kind, inputs, attrs, outputs]`` names a kind this TVM
    has registered (each kind name asked once)."""
    if not isinstance(inst, list) or not inst or not isinstance(inst[0], str):
        return False
    name = inst[0]
    if name not in _INSTRUCTIONS:
        try:
            compat.tir_schedule.InstructionKind.get(name)
            _INSTRUCTIONS[name] = True
        except Exception:  # TVM raises AttributeError (a failed check) for an unknown kind
            _INSTRUCTIONS[name] = False
    return _INSTRUCTIONS[name]


def last_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[-1] if lines else type(err).__name__
