"""What MetaSchedule's log files add to the database: task names, weights, and error texts.

``tune_tir``/``tune_tasks`` write ``logs/<ns>.task_scheduler.log`` (with the task table) and one
``logs/<ns>.task_<i>_<name>.log`` per task, with one ``Trial #n`` entry per measured candidate in
the same order as the task's records. Failed trials carry their builder/runner error there only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

__all__ = ["LogTask", "LogTrial", "read_task_logs", "read_task_table"]

_TRIAL_LINE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\S* \[\w+\] \[[^\]]*\] "
    r"\[Task #(?P<task>\d+): (?P<name>.*?)\] Trial #(?P<trial>\d+): (?P<rest>.*)$",
    re.MULTILINE,
)
_ROW = re.compile(
    r"^\s*(?P<id>\d+) \|\s*(?P<name>.+?) \|\s*(?P<flop>\d+) \|\s*(?P<weight>[\d.]+) \|"
    r"[^|]*\|[^|]*\|[^|]*\|\s*(?P<trials>\d+) \|"
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


class LogTrial(NamedTuple):
    """One ``Trial #n`` entry of a per-task log."""

    trial: int  # 1-based, as MetaSchedule numbers them
    time: str
    error_kind: str | None  # "build" or "run" when the trial failed
    error: str | None


def read_task_table(logs_dir: Path) -> list[LogTask]:
    """The last task table in the task-scheduler log, or [] if there is none."""
    files = sorted(logs_dir.glob("*task_scheduler.log"))
    if not files:
        return []
    table: list[LogTask] = []
    current: list[LogTask] = []
    for text in files[0].read_text(errors="replace").splitlines():
        if text.lstrip().startswith("ID | Name"):
            current = []
            continue
        match = _ROW.match(text)
        if match:
            current.append(
                LogTask(
                    int(match["id"]),
                    match["name"],
                    float(match["flop"]),
                    float(match["weight"]),
                    int(match["trials"]),
                )
            )
            table = current
    return table


def read_task_logs(logs_dir: Path) -> dict[int, tuple[str, list[LogTrial]]]:
    """Per task id: its name and its trial entries in log order."""
    out: dict[int, tuple[str, list[LogTrial]]] = {}
    for path in sorted(logs_dir.glob("*.log")):
        match = _TASK_FILE.search(path.name)
        if not match:
            continue
        out[int(match.group(1))] = (match.group(2), _read_trials(path))
    return out


def _read_trials(path: Path) -> list[LogTrial]:
    """The ``Trial #n`` entries of a task log. A failed trial's error text is the lines after
    its head, up to the next time-stamped line or the ``# from tvm.script`` dump."""
    text = path.read_text(errors="replace")
    heads = list(_TRIAL_LINE.finditer(text))
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
