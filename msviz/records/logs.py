"""What MetaSchedule's log files add to the database: task names, weights, and error texts.

``tune_tir``/``tune_tasks`` write ``logs/<ns>.task_scheduler.log`` (with the task table) and one
``logs/<ns>.task_<i>_<name>.log`` per task, with one ``Trial #n`` entry per measured candidate in
the same order as the task's records. Failed trials carry their builder/runner error there only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "LogTask",
    "LogTrial",
    "TaskLog",
    "TaskTable",
    "read_scheduler_table",
    "read_task_log_files",
    "read_task_logs",
    "read_task_table",
    "read_task_trials",
    "read_task_workload_script",
]

_TRIAL_LINE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\S* \[\w+\] \[[^\]]*\] "
    r"\[Task #(?P<task>\d+): (?P<name>.*?)\] Trial #(?P<trial>\d+): (?P<rest>.*)$",
    re.MULTILINE,
)
_ROW = re.compile(
    r"^\s*(?P<id>\d+) \|\s*(?P<name>.+?) \|\s*(?P<flop>\d+) \|\s*(?P<weight>[\d.]+) \|"
    r"(?P<speed>[^|]*)\|(?P<latency>[^|]*)\|(?P<weighted>[^|]*)\|\s*(?P<trials>\d+) \|"
    r"(?P<done>[^|]*)$"
)
_HEADER = re.compile(r"^\s*ID \|\s*Name \|")
#: What every trial line holds: found by this literal first (a search from each line start
#: is slow on 100,000 lines), then the line is matched whole.
_TRIAL_MARK = "] Trial #"
_TOTAL_TRIALS = re.compile(r"^Total trials: (\d+)\s*$")
_TOTAL_LATENCY = re.compile(r"^Total latency \(us\): (\S+)\s*$")
#: The workload a per-task log prints first: from its ``# from tvm.script`` header up to the
#: next time-stamped line.
_WORKLOAD_SCRIPT = re.compile(
    r"^# from tvm\.script.*?(?=^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\Z)", re.MULTILINE | re.DOTALL
)
#: Where a failed trial's error text ends: a time-stamped line or the printed schedule.
_BODY_END = re.compile(
    r"^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? |# from tvm\.script)", re.MULTILINE
)
_TASK_FILE = re.compile(r"task_(\d+)_(.+)\.log$")


class LogTask(NamedTuple):
    """A row of MetaSchedule's task table (the last one printed)."""

    id: int
    name: str
    flop: float
    weight: float
    trials: int
    speed_gflops: float | None = None  # None where the table prints "N/A"
    latency_us: float | None = None
    weighted_latency_us: float | None = None
    done: bool = False


class TaskTable(NamedTuple):
    """The last task table of the task-scheduler log and the totals printed under it."""

    rows: list[LogTask]
    total_trials: int | None
    total_latency_us: float | None


class TaskLog(NamedTuple):
    """A per-task log file: the task id and name its file name gives, and its path."""

    id: int
    name: str
    path: Path


class LogTrial(NamedTuple):
    """One ``Trial #n`` entry of a per-task log."""

    trial: int  # 1-based, as MetaSchedule numbers them
    time: str
    error_kind: str | None  # "build" or "run" when the trial failed
    error: str | None


def _number(cell: str) -> float | None:
    cell = cell.strip()
    try:
        return float(cell)
    except ValueError:  # "N/A": the task has no valid measurement yet
        return None


def read_scheduler_table(logs_dir: Path) -> TaskTable:
    """The last task table in the task-scheduler log with its totals (empty if none).

    MetaSchedule prints the table (``ID | Name | FLOP | Weight | Speed (GFLOPS) | Latency (us)
    | Weighted Latency (us) | Trials | Done``) after every batch, then ``Total trials: n`` and
    ``Total latency (us): x``; the last complete one is the state at the end of the run.
    """
    files = sorted(logs_dir.glob("*task_scheduler.log"))
    if not files:
        return TaskTable([], None, None)
    text = files[0].read_text(errors="replace")
    # a long run prints thousands of tables: read from the last header on (an earlier one only
    # when the last has no row yet), found from the end of the text
    end, found = len(text), False
    while (at := text.rfind("Name |", 0, end)) >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = start
        # the header's own line: "^" in a pattern matches at a line start only as the string's
        # start, so match(text, start) would fail for every header but the file's first
        if _HEADER.match(text[start:at + len("Name |")]):
            found = True
            table = _last_table(text[start:])
            if table.rows:
                return table
    return TaskTable([], None, None) if found else _last_table(text)


def _last_table(text: str) -> TaskTable:
    """The last table with rows in ``text`` (the log from a header on) and its totals."""
    table = TaskTable([], None, None)
    current: list[LogTask] = []
    trials: int | None = None
    for line in text.splitlines():
        if _HEADER.match(line):
            current, trials = [], None
            continue
        match = _ROW.match(line)
        if match:
            current.append(
                LogTask(
                    int(match["id"]),
                    match["name"],
                    float(match["flop"]),
                    float(match["weight"]),
                    int(match["trials"]),
                    _number(match["speed"]),
                    _number(match["latency"]),
                    _number(match["weighted"]),
                    match["done"].strip() == "Y",
                )
            )
            table = TaskTable(current, None, None)
            continue
        total = _TOTAL_TRIALS.match(line)
        if total and current:
            trials = int(total.group(1))
            continue
        latency = _TOTAL_LATENCY.match(line)
        if latency and current:
            table = TaskTable(current, trials, _number(latency.group(1)))
    return table


def read_task_table(logs_dir: Path) -> list[LogTask]:
    """The last task table in the task-scheduler log, or [] if there is none."""
    return read_scheduler_table(logs_dir).rows


def read_task_log_files(logs_dir: Path) -> dict[int, TaskLog]:
    """Per task id: the per-task log file, named ``<ns>.task_<i>_<name>.log`` by MetaSchedule.

    The file name is what ties a log to its task: two tasks can share a FLOP count, never a
    name (``extract_tasks`` makes names unique: ``matmul``, ``matmul1``...).
    """
    out: dict[int, TaskLog] = {}
    for path in sorted(logs_dir.glob("*.log")):
        match = _TASK_FILE.search(path.name)
        if match:
            out[int(match.group(1))] = TaskLog(int(match.group(1)), match.group(2), path)
    return out


def read_task_workload_script(path: Path) -> str | None:
    """The TVMScript of the task's workload, as the log prints it first ("Initializing Task")."""
    with open(path, errors="replace") as f:
        head = f.read(1 << 20)  # the workload comes first; a huge log need not be read whole
    match = _WORKLOAD_SCRIPT.search(head)
    return match.group(0) if match else None


def read_task_logs(logs_dir: Path) -> dict[int, tuple[str, list[LogTrial]]]:
    """Per task id: its name and its trial entries in log order."""
    return {i: (log.name, read_task_trials(log.path))
            for i, log in read_task_log_files(logs_dir).items()}


def read_task_trials(path: Path) -> list[LogTrial]:
    """The ``Trial #n`` entries of a task log. A failed trial's error text is the lines after
    its head, up to the next time-stamped line or the ``# from tvm.script`` dump."""
    text = path.read_text(errors="replace")
    heads = []
    at, line_end = text.find(_TRIAL_MARK), -1
    while at >= 0:
        if at > line_end:  # one match per line, as a search line by line would give
            start = text.rfind("\n", 0, at) + 1
            line_end = text.find("\n", at)
            line_end = len(text) if line_end < 0 else line_end
            match = _TRIAL_LINE.match(text, start, line_end)
            if match:
                heads.append(match)
        at = text.find(_TRIAL_MARK, at + 1)
    trials: list[LogTrial] = []
    for i, match in enumerate(heads):
        rest = match["rest"]
        number, time = int(match["trial"]), match["time"]
        if not rest.startswith("Error in "):
            trials.append(LogTrial(number, time, None, None))
            continue
        kind = "build" if rest.startswith("Error in building") else "run"
        body_end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[match.end() : body_end]
        stop = _BODY_END.search(body)
        error = (body[: stop.start()] if stop else body).strip()
        trials.append(LogTrial(number, time, kind, error or None))
    return trials
