"""How per-task logs line up with the database: a log to its workload, an entry to its record.

A per-task log prints its workload first (MetaSchedule's do; msviz's may not) with the same
TVMScript printer the pinned TVM has: its text is compared with each workload's printed text
(milliseconds); a log left over (another TVM's printer) is parsed, at tenths of a second each,
only while a used workload is left untied. A task's log entries line up with its records only
when the log holds exactly as many entries as the task has records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from msviz import compat
from msviz.records import logs as log_files

__all__ = ["logged_per_record", "task_trials", "tie_logs_by_script"]


def tie_logs_by_script(files: dict[int, log_files.TaskLog], used: set[int],
                       workloads: Sequence[Any], workload_mod: Callable[[int], Any]
                       ) -> dict[int, int]:
    """Task id -> workload index, for the per-task logs whose printed workload is one of the
    ``used`` workloads (``workloads``: the workload file's lines, None where corrupt)."""
    if not files:
        return {}
    scripts = {task_id: log_files.read_task_workload_script(log.path)
               for task_id, log in files.items()}
    texts = {task_id: text.strip() for task_id, text in scripts.items() if text}
    if not texts:
        return {}
    by_text = {workload_mod(w).script().strip(): w for w in sorted(used)}
    out: dict[int, int] = {}
    for task_id, text in texts.items():
        w = by_text.get(text)
        if w is not None and w not in out.values():
            out[task_id] = w
    by_hash = {workloads[w].shash: w for w in used
               if w not in out.values() and workloads[w] is not None}
    for task_id, text in texts.items():
        if not by_hash:
            break
        if task_id in out:
            continue
        try:
            shash = str(compat.structural_hash(compat.parse_script(text)))
        except Exception:  # a log printed by another TVM version: tied by FLOP instead
            continue
        w = by_hash.pop(shash, None)
        if w is not None:
            out[task_id] = w
    return out


def task_trials(workloads: Sequence[int]) -> list[int]:
    """Each record's 0-based index among its workload's records (file order)."""
    seen: dict[int, int] = {}
    out = []
    for w in workloads:
        k = seen.get(w, 0)
        seen[w] = k + 1
        out.append(k)
    return out


def logged_per_record(workloads: Sequence[int], log_trials: dict[int, list[log_files.LogTrial]]
                      ) -> list[log_files.LogTrial | None]:
    """Each record's log entry: its task's k-th entry where the task's log lines up."""
    counts: dict[int, int] = {}
    for w in workloads:
        counts[w] = counts.get(w, 0) + 1
    aligned = {w: entries for w, entries in log_trials.items() if len(entries) == counts.get(w)}
    return [aligned[w][k] if w in aligned else None
            for w, k in zip(workloads, task_trials(workloads))]
