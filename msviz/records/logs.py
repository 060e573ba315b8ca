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

_STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? ")
_TRIAL = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\S* \[\w+\] \[[^\]]*\] "
    r"\[Task #(?P<task>\d+): (?P<name>.*?)\] Trial #(?P<trial>\d+): (?P<rest>.*)$"
)
_ROW = re.compile(
    r"^\s*(?P<id>\d+) \|\s*(?P<name>.+?) \|\s*(?P<flop>\d+) \|\s*(?P<weight>[\d.]+) \|"
    r"[^|]*\|[^|]*\|[^|]*\|\s*(?P<trials>\d+) \|"
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
    trials: list[LogTrial] = []
    error_lines: list[str] | None = None
    head: tuple[int, str, str] | None = None

    def flush() -> None:
        if head is not None and error_lines is not None:
            text = "\n".join(error_lines).strip()
            trials.append(LogTrial(head[0], head[1], head[2], text or None))

    for text in path.read_text(errors="replace").splitlines():
        match = _TRIAL.match(text)
        if match:
            flush()
            error_lines, head = None, None
            rest = match["rest"]
            number, time = int(match["trial"]), match["time"]
            if rest.startswith("Error in "):
                kind = "build" if rest.startswith("Error in building") else "run"
                head, error_lines = (number, time, kind), []
            else:
                trials.append(LogTrial(number, time, None, None))
            continue
        if error_lines is not None:
            if _STAMP.match(text) or text.startswith("# from tvm.script"):
                flush()
                error_lines, head = None, None
            else:
                error_lines.append(text)
    flush()
    return trials
