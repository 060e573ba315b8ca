"""Preparing a work dir for tuning: repair what a crash left, count what it holds, log to it."""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import Any

from msviz.compat import MS_NAMESPACE
from msviz.errors import WorkDirError
from msviz.records import database as db_files

__all__ = ["count_lines", "repair_torn_tail", "task_logger"]


def repair_torn_tail(path: Path) -> str | None:
    """Cut a torn last line off a stock database file (the stock reader fails on it).

    A ``kill -9`` while MetaSchedule appends a record can leave a last line without its end;
    stock ``JSONDatabase`` then refuses the whole file. The torn text is kept in
    ``msviz_torn_lines.txt`` next to it. A corrupt line *before* the last one is not from a
    crash mid-append and is not repaired (line numbers key the sidecar): that raises.

    Returns
    -------
    torn : str or None
        The text that was cut off, if any.
    """
    if not path.is_file():
        return None
    data = path.read_bytes()
    if not data:
        return None
    lines = data.split(b"\n")
    tail = lines[-1]  # b"" when the file ends with a newline
    complete = lines[:-1]
    torn = tail if tail.strip() else None
    if torn is not None:
        try:
            json.loads(tail)
            torn = None  # a complete last line that only lacks its newline
        except ValueError:
            pass
    if torn is None and complete:
        last = complete[-1]
        try:
            json.loads(last) if last.strip() else None
        except ValueError:
            torn = last
            complete = complete[:-1]
    for number, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        try:
            json.loads(raw)
        except ValueError:
            raise WorkDirError(
                f"{path} line {number} is corrupt (not a torn last line); msviz does not repair "
                "it, because record line numbers key its sidecar. Remove or fix that line by hand"
            ) from None
    if torn is None:
        if tail.strip():  # complete line without newline: add it, so appends start a new line
            with open(path, "ab") as f:
                f.write(b"\n")
        return None
    keep = b"".join(raw + b"\n" for raw in complete)
    with open(path.parent / "msviz_torn_lines.txt", "ab") as f:
        f.write(f"# {time.strftime('%Y-%m-%d %H:%M:%S')} cut from {path.name}:\n".encode())
        f.write(torn + b"\n")
    path.write_bytes(keep)
    return torn.decode("utf-8", errors="replace")


def count_lines(path: Path) -> int:
    """Physical lines of a file (the record reader numbers lines the same way)."""
    if not path.is_file():
        return 0
    with open(path, "rb") as f:
        return f.read().count(b"\n")


def workload_index(work_dir: Path, shash: int) -> int:
    """Line index of a workload in ``database_workload.json`` (its key in record lines)."""
    entries = db_files.read_workloads(work_dir / db_files.WORKLOAD_FILE)
    for i, entry in enumerate(entries):
        if entry is not None and entry.shash == str(shash):
            return i
    return max(0, len(entries) - 1)


class _EventHandler(logging.Handler):
    def __init__(self, emit: Any, task: str) -> None:
        super().__init__(logging.INFO)
        self._emit, self._task = emit, task

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._emit("log", self._task, level=record.levelname, message=record.getMessage())
        except Exception:  # pragma: no cover - never let logging break tuning
            pass


_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def task_logger(work_dir: Path, task_index: int, task: str, emit: Any) -> logging.Logger:
    """A logger for one task: DEBUG into the work dir's log file, INFO and up into events.

    The file has the stock name (``logs/tvm.s_tir.meta_schedule.logging.task_<i>_<task>.log``)
    and line format, so tools that read ``tune_tir`` logs read it too. It never propagates to the
    root logger, so nothing is printed into a notebook cell from the worker thread.
    """
    logs = work_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    name = f"msviz.engine.{id(emit):x}.task_{task_index}"
    logger = logging.getLogger(name)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    path = logs / f"{MS_NAMESPACE}.logging.task_{task_index}_{_SAFE.sub('_', task)}.log"
    file_handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    file_handler.setFormatter(
        logging.Formatter("%(asctime)s.%(msecs)03d [%(levelname)s] %(message)s",
                          datefmt="%Y-%m-%d %H:%M:%S")
    )
    logger.addHandler(file_handler)
    logger.addHandler(_EventHandler(emit, task))
    return logger


def close_logger(logger: logging.Logger) -> None:
    """Close and detach a task logger's handlers."""
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
