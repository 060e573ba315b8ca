"""Tolerant, fast reading of MetaSchedule's stock JSON database files.

``database_tuning_record.json`` holds one line per measured candidate::

    [workload_index, [trace_json, run_secs, target_json, args_info]]

A trace is a few kilobytes; ``json.loads`` of every line costs ~0.4 ms, so 100,000 records would
take ~40 s. The reader therefore parses only the line's tail (``run_secs``, target, ``args_info``)
and keeps the byte offset of each line; the trace is parsed when a trial is opened. A line that is
torn (a crash mid-write) or corrupt is skipped, with one warning per file naming the lines.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import NamedTuple

from msviz.errors import MsvizWarning

__all__ = [
    "RECORD_FILE",
    "WORKLOAD_FILE",
    "RecordLine",
    "WorkloadLine",
    "read_record_json",
    "read_records",
    "read_workloads",
]

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"


class WorkloadLine(NamedTuple):
    """One line of ``database_workload.json``: the module's structural hash and its payload."""

    line: int  # 1-based line number in the file
    shash: str
    payload: str  # base64 of the IRModule JSON, as MetaSchedule writes it


class RecordLine(NamedTuple):
    """One line of ``database_tuning_record.json``, without its (lazily parsed) trace."""

    line: int  # 1-based line number in the file
    offset: int  # byte offset of the line, to re-read the trace on demand
    workload: int  # index into the workload file's lines
    run_secs: tuple[float, ...] | None
    target: str  # the target's JSON text


def _warn_skipped(path: Path, lines: list[int], why: str) -> None:
    shown = ", ".join(map(str, lines[:20])) + (" ..." if len(lines) > 20 else "")
    warnings.warn(
        f"{path}: skipped {len(lines)} {why} line(s) (line {shown}); the other lines were read",
        MsvizWarning,
        stacklevel=3,
    )


def read_workloads(path: Path) -> list[WorkloadLine | None]:
    """Every line of a workload file, ``None`` where a line is torn or corrupt.

    Records refer to workloads by line index, so a bad line keeps its place as ``None``.
    """
    out: list[WorkloadLine | None] = []
    bad: list[int] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                shash, payload = json.loads(text)
                if not isinstance(shash, str) or not isinstance(payload, str):
                    raise ValueError
                out.append(WorkloadLine(number, shash, payload))
            except ValueError:
                out.append(None)
                bad.append(number)
    if bad:
        _warn_skipped(path, bad, "torn or corrupt workload")
    return out


def _parse_run_secs(text: str) -> tuple[float, ...] | None:
    if text == "null":
        return None
    values = json.loads(text)
    if not isinstance(values, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    ):
        raise ValueError("run_secs is not a list of numbers")
    return tuple(float(v) for v in values)


def _parse_line(text: str) -> tuple[int, tuple[float, ...] | None, str]:
    """(workload index, run_secs, target JSON) of a record line; ValueError if malformed."""
    if not (text.startswith("[") and text.endswith("]]")):
        raise ValueError("not a complete record")
    comma = text.index(",", 1)
    workload = int(text[1:comma])
    if not text.startswith("[[", comma + 1):
        raise ValueError("no trace")
    target_end = text.rfind("},[[")
    if target_end < 0:
        raise ValueError("no target")
    args_info = json.loads(text[target_end + 2 : -2])
    if not isinstance(args_info, list):
        raise ValueError("args_info is not a list")
    target_start = text.rfind(",{", comma, target_end)
    if target_start < 0:
        raise ValueError("no target")
    head = text[comma + 1 : target_start]
    if head.endswith("null"):
        run_secs = None
    else:
        run_secs = _parse_run_secs(head[head.rindex("[") :])
    return workload, run_secs, text[target_start + 1 : target_end + 1]


def read_records(path: Path, num_workloads: int) -> list[RecordLine]:
    """Every well-formed record of a tuning-record file, in file order.

    Parameters
    ----------
    path : Path
        The ``database_tuning_record.json`` file.
    num_workloads : int
        Lines in the workload file; a record pointing past it is skipped as corrupt.
    """
    out: list[RecordLine] = []
    bad: list[int] = []
    offset = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            start, offset = offset, offset + len(raw)
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                workload, run_secs, target = _parse_line(text)
                if not 0 <= workload < num_workloads:
                    raise ValueError("unknown workload")
            except ValueError:
                try:  # an unusual but complete line: fall back to the full parser
                    workload, run_secs, target = _parse_full(text, num_workloads)
                except ValueError:
                    bad.append(number)
                    continue
            out.append(RecordLine(number, start, workload, run_secs, target))
    if bad:
        _warn_skipped(path, bad, "torn or corrupt record")
    return out


def _parse_full(text: str, num_workloads: int) -> tuple[int, tuple[float, ...] | None, str]:
    try:
        workload, (trace, run_secs, target, args_info) = json.loads(text)
    except (ValueError, TypeError) as err:
        raise ValueError(str(err)) from None
    if not isinstance(workload, int) or not 0 <= workload < num_workloads:
        raise ValueError("unknown workload")
    if not isinstance(trace, list) or not isinstance(args_info, list):
        raise ValueError("malformed record")
    secs = None if run_secs is None else _parse_run_secs(json.dumps(run_secs))
    return workload, secs, json.dumps(target)


def read_record_json(path: Path, offset: int) -> list:
    """The full JSON of the record line at ``offset`` (``[workload, [trace, ...]]``)."""
    with open(path, "rb") as f:
        f.seek(offset)
        return json.loads(f.readline())
