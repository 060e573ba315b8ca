"""Tolerant, fast reading of MetaSchedule's stock JSON database files.

``database_tuning_record.json`` holds one line per measured candidate::

    [workload_index, [trace_json, run_secs, target_json, args_info]]

A trace is a few kilobytes; ``json.loads`` of every line costs ~0.4 ms, so 100,000 records would
take ~40 s. The reader therefore parses only the line's tail (``run_secs``, target, ``args_info``)
and the first bytes of the trace, and keeps the byte offset of each line; the trace is parsed when
a trial is opened. A line that is torn (a crash mid-write) or corrupt is skipped, with one warning
per file naming the lines. Corrupt: not a record's JSON, a NUL byte (a file pre-allocated or
zeroed by a crash), a workload index the workload file does not hold, or ``run_secs`` that stock
``JSONDatabase`` refuses to read (not numbers, NaN, infinite, beyond a float32's range, or too
small for a double: stock then cannot open the work dir at all).

Every ``run_secs`` stock reads is read as it is, since ``Database.get_top_k`` ranks them as they
are (``0.0``, a negative time, a ``1e10`` among real times): a time below :data:`MIN_RUN_SECS`
(no kernel runs that fast) is kept, with one warning naming the lines. Records whose trace holds
no schedule instruction (nothing before ``EnterPostproc``) are listed in
:attr:`RecordColumns.unscheduled`: ``TuningRecord::IsValid`` is false for them, so stock never
picks them, whatever they measured.
"""

from __future__ import annotations

import json
import mmap
import sys
import warnings
from pathlib import Path
from typing import Any, NamedTuple

from msviz.errors import MsvizError, MsvizWarning

__all__ = [
    "MIN_RUN_SECS",
    "RECORD_FILE",
    "WORKLOAD_FILE",
    "RecordColumns",
    "RecordLine",
    "WorkloadLine",
    "has_schedule",
    "merge_advice",
    "read_record_columns",
    "read_record_json",
    "read_records",
    "read_workloads",
    "refuse_unreadable",
    "stock_unreadable",
]

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"
#: The least run time a kernel plausibly takes: a nanosecond (no kernel launch is faster). A
#: record below it (zero, negative) is read as stock reads it, with a warning naming its line.
MIN_RUN_SECS = 1e-9
#: The range of run_secs stock ``JSONDatabase`` reads: each is a ``FloatImm`` of a float32's
#: range (larger fails its check), parsed by ``std::stod`` (which refuses a subnormal double).
_MOST_RUN_SECS = 3.4028234663852886e38
_LEAST_RUN_SECS = sys.float_info.min
#: How a trace whose first instruction is the postproc marker starts, after ``[[``.
_POSTPROC_FIRST = b'["EnterPostproc"'


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


def _parse_run_secs(text: str) -> tuple[tuple[float, ...] | None, bool]:
    """(run_secs, plausible) of a run_secs JSON text; ValueError if stock cannot read it."""
    if text == "null":
        return None, True
    values = json.loads(text)
    # stock reads a JSON boolean in run_secs as 1.0 or 0.0 (an int to its FloatImm)
    if not isinstance(values, list) or not all(isinstance(v, (int, float)) for v in values):
        raise ValueError("run_secs is not a list of numbers")
    return checked_run_secs(tuple(float(v) for v in values))


def checked_run_secs(values: tuple[float, ...]) -> tuple[tuple[float, ...], bool]:
    """(``values``, whether each is at least :data:`MIN_RUN_SECS`); ValueError where stock
    ``JSONDatabase`` would refuse one (NaN fails every comparison)."""
    if all(MIN_RUN_SECS <= v <= _MOST_RUN_SECS for v in values):  # any real measurement
        return values, True
    if not all(v == 0.0 or _LEAST_RUN_SECS <= abs(v) <= _MOST_RUN_SECS for v in values):
        raise ValueError("run_secs that stock JSONDatabase cannot read")
    return values, False


def has_schedule(trace_json: object) -> bool:
    """Whether a trace's JSON (``[instructions, decisions]``) holds a schedule instruction before
    any ``EnterPostproc``: where it does not, ``TuningRecord::IsValid`` is false."""
    if not isinstance(trace_json, list) or not trace_json or not isinstance(trace_json[0], list):
        return False
    insts = trace_json[0]
    return bool(insts) and not (isinstance(insts[0], list) and insts[0][:1] == ["EnterPostproc"])


_SPACE = b" \t\r"


class _LineParser:
    """Parses record lines in place in the file's buffer; repeated target / args_info texts
    are checked and decoded once."""

    def __init__(self, buf: Any, num_workloads: int) -> None:
        self.buf = buf
        self.num_workloads = num_workloads
        self.targets: dict[bytes, str] = {}
        self.args_ok: set[bytes] = set()

    def parse(self, lo: int, hi: int) -> tuple[int, tuple[float, ...] | None, str, bool, bool]:
        """(workload index, run_secs, target JSON, whether the trace holds a schedule
        instruction, whether run_secs are plausible) of the line ``buf[lo:hi]``; ValueError if
        it is malformed (or unusual: the full parser reads it then)."""
        buf = self.buf
        if buf[lo : lo + 1] != b"[" or buf[hi - 2 : hi] != b"]]":
            raise ValueError("not a complete record")
        comma = buf.find(b",", lo + 1, hi)
        if comma < 0:
            raise ValueError("no workload")
        workload = int(buf[lo + 1 : comma])
        if not 0 <= workload < self.num_workloads:
            raise ValueError("unknown workload")
        # the record, the trace, its instructions: "[]", or "[[" and the first one's kind
        head = buf[comma + 1 : comma + 7]
        if head.startswith(b'[[[["') and head != b'[[[["E':  # "E": maybe EnterPostproc
            scheduled = True
        elif head[:4] == b"[[[]":
            scheduled = False
        elif head == b'[[[["E':
            scheduled = buf[comma + 4 : comma + 4 + len(_POSTPROC_FIRST)] != _POSTPROC_FIRST
        else:
            raise ValueError("no trace, or an unusual one")
        target_end = buf.rfind(b"},[[", comma, hi)
        if target_end < 0:
            raise ValueError("no target")
        args = buf[target_end + 2 : hi - 2]
        if args not in self.args_ok:
            if not isinstance(json.loads(args), list):
                raise ValueError("args_info is not a list")
            self.args_ok.add(args)
        target_start = buf.rfind(b",{", comma, target_end)
        if target_start < 0:
            raise ValueError("no target")
        plausible = True
        if buf[target_start - 4 : target_start] == b"null":
            run_secs = None
        else:
            start = buf.rfind(b"[", comma, target_start)
            if buf[target_start - 1 : target_start] != b"]" or start < 0:
                raise ValueError("no run_secs")
            inner = buf[start + 1 : target_start - 1]
            # float() reads JSON numbers (and refuses true/false/strings): no JSON parse per line
            if inner.strip():
                run_secs, plausible = checked_run_secs(tuple(map(float, inner.split(b","))))
            else:
                run_secs = ()
        raw_target = buf[target_start + 1 : target_end + 1]
        target = self.targets.get(raw_target)
        if target is None:
            target = self.targets[raw_target] = raw_target.decode("utf-8", errors="replace")
        return workload, run_secs, target, scheduled, plausible


class RecordColumns(NamedTuple):
    """The well-formed records of a tuning-record file, column by column (file order)."""

    line: list[int]  # 1-based line numbers
    offset: list[int]  # byte offsets of the lines
    workload: list[int]
    run_secs: list[tuple[float, ...] | None]
    target: list[str]
    #: Lines whose trace holds no schedule instruction (stock never picks them).
    unscheduled: frozenset[int] = frozenset()


def read_records(path: Path, num_workloads: int) -> list[RecordLine]:
    """Every well-formed record of a tuning-record file, in file order.

    Parameters
    ----------
    path : Path
        The ``database_tuning_record.json`` file.
    num_workloads : int
        Lines in the workload file; a record pointing past it is skipped as corrupt.
    """
    columns = read_record_columns(path, num_workloads)
    return [RecordLine(*values) for values in zip(*columns[:len(RecordLine._fields)])]


def read_record_columns(path: Path, num_workloads: int) -> RecordColumns:
    """:func:`read_records` as columns (no object per record: 100,000 records read fast).

    Only each line's tail (``run_secs``, target, ``args_info``) is parsed, in place in a
    memory map of the file: the traces (most of the bytes) are never copied or decoded here.
    A torn or corrupt line is skipped, with one warning naming the lines; run_secs below
    :data:`MIN_RUN_SECS` are read as they are, with another.
    """
    lines: list[tuple[int, int, int, Any, str, bool, bool]] = []
    bad: list[int] = []
    size = path.stat().st_size
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    try:
        parser = _LineParser(buf, num_workloads)
        pos, number = 0, 0
        while pos < size:
            end = buf.find(b"\n", pos)
            if end < 0:
                end = size
            number += 1
            start, lo, hi, pos = pos, pos, end, end + 1
            while hi > lo and buf[hi - 1] in _SPACE:
                hi -= 1
            while lo < hi and buf[lo] in _SPACE:
                lo += 1
            if lo == hi:
                continue
            if buf.find(b"\0", lo, hi) >= 0:  # zeroed by a crash: never a record
                bad.append(number)
                continue
            try:
                lines.append((number, start, *parser.parse(lo, hi)))
            except ValueError:
                try:  # an unusual but complete line: fall back to the full parser
                    text = buf[lo:hi].decode("utf-8", errors="replace")
                    lines.append((number, start, *_parse_full(text, num_workloads)))
                except ValueError:
                    bad.append(number)
    finally:
        if size:
            buf.close()
    out = RecordColumns([], [], [], [], [])
    unscheduled, implausible = [], []
    for number, start, workload, run_secs, target, scheduled, plausible in lines:
        out.line.append(number)
        out.offset.append(start)
        out.workload.append(workload)
        out.run_secs.append(run_secs)
        out.target.append(target)
        if not scheduled:
            unscheduled.append(number)
        if not plausible:
            implausible.append(number)
    if unscheduled:
        out = out._replace(unscheduled=frozenset(unscheduled))
    if bad and num_workloads == 0 and not out.line:
        warnings.warn(
            f"{path.parent / WORKLOAD_FILE} holds no workload (it is empty): none of the "
            f"{len(bad)} record line(s) of {path} can be read",
            MsvizWarning,
            stacklevel=2,
        )
    elif bad:
        _warn_skipped(path, sorted(bad), "torn or corrupt record")
    if implausible:
        shown = ", ".join(map(str, implausible[:20])) + (" ..." if len(implausible) > 20 else "")
        warnings.warn(
            f"{path}: {len(implausible)} record line(s) hold run_secs below 1 ns, zero or "
            f"negative (line {shown}): no kernel runs that fast, but MetaSchedule ranks them "
            "as they are (the least mean is what compile_tir picks); msviz never picks one "
            "faster than the machine can be (status 'impossible')",
            MsvizWarning,
            stacklevel=2,
        )
    return out


def stock_unreadable(work_dir: Path) -> list[str]:
    """What in a work dir's two database files stock ``JSONDatabase`` cannot load, one text per
    file and kind naming the lines (empty when it loads them): a blank line (in the record file
    it crashes the process, a segmentation fault; in the workload file it fails the load), and
    a line msviz's reader skips as torn or corrupt (stock fails on the whole file). msviz's
    readers skip these lines with a warning; what builds a model with ``JSONDatabase``
    (``Model.compile``) must refuse such a work dir first."""
    work_dir = Path(work_dir)
    found = []
    workload_path, record_path = work_dir / WORKLOAD_FILE, work_dir / RECORD_FILE
    with open(workload_path, encoding="utf-8", errors="replace") as f:
        empty = [(n, not text.strip()) for n, text in enumerate(f, start=1)]
    blank = [n for n, e in empty if e]
    kept = [n for n, e in empty if not e]  # the lines read_workloads reads, in its order
    with warnings.catch_warnings():  # said here, by line, instead
        warnings.simplefilter("ignore", MsvizWarning)
        workloads = read_workloads(workload_path)
        records = read_record_columns(record_path, len(workloads))
    corrupt = [line for line, w in zip(kept, workloads) if w is None]
    with open(record_path, "rb") as f:
        lines = [(n, not raw.rstrip(b"\n").strip(_SPACE)) for n, raw in enumerate(f, start=1)]
    record_blank = [n for n, empty in lines if empty]
    read = set(records.line)
    record_bad = [n for n, empty in lines if not empty and n not in read]
    for path, numbers, why in ((workload_path, blank, "blank"),
                               (workload_path, corrupt, "torn or corrupt"),
                               (record_path, record_blank, "blank"),
                               (record_path, record_bad, "torn or corrupt (or of a workload "
                                                         "the workload file does not hold)")):
        if numbers:
            shown = ", ".join(map(str, numbers[:10])) + (" ..." if len(numbers) > 10 else "")
            found.append(f"{path.name} line {shown}: {why}")
    return found


def merge_advice(work_dir: Path, verb: str) -> str:
    """How to get a copy of a work dir without the lines a refusal names (``msviz merge``
    leaves out what stock cannot load and what cannot be true)."""
    return (f"msviz merge {work_dir} -o CLEAN_DIR writes a copy without them; {verb} that "
            "(with model=: the copy names no model)")


def refuse_unreadable(work_dir: Path, verb: str) -> None:
    """Refuse, naming the lines, a work dir whose database stock ``JSONDatabase`` cannot load
    (:func:`stock_unreadable`), before anything builds with it (``verb``: what was asked)."""
    unreadable = stock_unreadable(work_dir)
    if unreadable:
        raise MsvizError(f"{work_dir} cannot be read by stock MetaSchedule's JSONDatabase, "
                         f"which builds the model from it ({'; '.join(unreadable)}): "
                         f"nothing of it was used. {merge_advice(work_dir, verb)}")


def _parse_full(text: str, num_workloads: int
                ) -> tuple[int, tuple[float, ...] | None, str, bool, bool]:
    try:
        workload, (trace, run_secs, target, args_info) = json.loads(text)
    except (ValueError, TypeError) as err:
        raise ValueError(str(err)) from None
    if not isinstance(workload, int) or not 0 <= workload < num_workloads:
        raise ValueError("unknown workload")
    if not isinstance(trace, list) or not isinstance(args_info, list):
        raise ValueError("malformed record")
    secs, plausible = (None, True) if run_secs is None else _parse_run_secs(json.dumps(run_secs))
    return workload, secs, json.dumps(target), has_schedule(trace), plausible


def read_record_json(path: Path, offset: int) -> list:
    """The full JSON of the record line at ``offset`` (``[workload, [trace, ...]]``)."""
    with open(path, "rb") as f:
        f.seek(offset)
        return json.loads(f.readline())
