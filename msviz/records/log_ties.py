"""How per-task logs line up with the database: a log to its workload, an entry to its record.

A per-task log prints its workload first (MetaSchedule's do; msviz's may not) with the same
TVMScript printer the pinned TVM has: its text is compared with each workload's printed text
(milliseconds); a log left over (another TVM's printer) is parsed, at tenths of a second each,
only while a used workload is left untied. A task's log entries line up with its records only
when the log holds exactly as many entries as the task has records.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from msviz import compat
from msviz.records import logs as log_files

__all__ = ["TaskTies", "logged_per_record", "task_trials", "tie_logs_by_script", "tie_tasks"]


class TaskTies(NamedTuple):
    """Each used workload's task, as the logs name it (:func:`tie_tasks`)."""

    names: dict[int, str]  # workload index -> task name
    weights: dict[int, float]
    log_trials: dict[int, list[log_files.LogTrial]]  # its per-task log's entries
    task_ids: dict[int, int]  # the task's id in the scheduler's table
    done: dict[int, bool]
    task_table: list[log_files.LogTask]  # the task table MetaSchedule logged last
    total_latency_us: float | None


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


def tie_tasks(logs_dir: Path, used: list[int], flops: dict[int, float], workloads: Sequence[Any],
              workload_mod: Callable[[int], Any]) -> TaskTies:
    """Names, weights and log entries of the ``used`` workloads (their FLOPs: ``flops``).

    A per-task log is tied to its workload by the log file's task name and the workload it
    prints first (its structural hash is the workload's key in the database); FLOP counts
    tie only what that leaves over (two tasks can share a FLOP count: ``matmul`` and
    ``matmul1`` of a model, say).
    """
    scheduler = (log_files.read_scheduler_table(logs_dir) if logs_dir.is_dir()
                 else log_files.TaskTable([], None, None))
    table = scheduler.rows
    files = log_files.read_task_log_files(logs_dir) if logs_dir.is_dir() else {}
    by_id = {t.id: t for t in table}
    names: dict[int, str] = {}
    weights: dict[int, float] = {}
    log_trials: dict[int, list[log_files.LogTrial]] = {}
    task_ids: dict[int, int] = {}
    done: dict[int, bool] = {}

    def tie(w: int, task_id: int, name: str, weight: float | None) -> None:
        names[w], task_ids[w] = name, task_id
        if weight is not None:
            weights[w] = weight
        if task_id in by_id:
            done[w] = by_id[task_id].done
        if task_id in files:
            log_trials[w] = log_files.read_task_trials(files[task_id].path)

    ties = tie_logs_by_script(files, set(used), workloads, workload_mod)
    for task_id, w in ties.items():
        row = by_id.get(task_id)
        tie(w, task_id, row.name if row else files[task_id].name, row.weight if row else None)
    unmatched = [t for t in table if t.id not in task_ids.values()]
    if not table and len(used) == 1 and len(files) == 1 and used[0] not in names:
        (log,) = files.values()
        unmatched = [log_files.LogTask(log.id, log.name, flops[used[0]], 1.0, 0)]
    for w in used:  # what the names left over: by FLOP count, in order
        if w in names:
            continue
        hit = next(
            (t for t in unmatched if len(used) == 1 or math.isclose(t.flop, flops[w])), None
        )
        if hit is None:
            names[w] = "main" if len(used) == 1 else f"workload_{w}"
            continue
        unmatched.remove(hit)
        tie(w, hit.id, hit.name, hit.weight)
    return TaskTies(names, weights, log_trials, task_ids, done, table,
                    scheduler.total_latency_us)
