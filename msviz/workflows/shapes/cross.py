"""Cross-measurement: a tuned shape's fastest schedules carried to another shape and measured
there, through a :class:`~msviz.engine.session.Session` of that shape (the engine's measuring
path: its lock, its builder and runner, each result checked).

Each carry maps the decisions that are no longer valid to the nearest valid choice
(:func:`msviz.trace.carry.carry_trace`) and applies the target's postprocs; a carry that does
not replay is counted with its reason and never measured.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, NamedTuple

from msviz.engine.tuning.carried import carried
from msviz.records import database as db_files
from msviz.records.run import Run
from msviz.records.task_match import nearest
from msviz.trace.carry import carry_trace

__all__ = ["CrossResult", "carry_to", "has_records", "measure_on", "own_best", "top_trials"]

#: ``carry`` of a trial measured by cross-measurement (its ``origin`` is ``"library"``).
SHAPE_CARRY = "shape"


class CrossResult(NamedTuple):
    """Per task index of the shape measured on: the fastest carried latency (µs; absent when
    none ran), carries measured, carries that failed, the first reason; tasks with no
    matching task at the source."""

    best_us: dict[int, float]
    measured: dict[int, int]
    failed: dict[int, int]
    error: str | None
    missing: list[int]


def has_records(work_dir: Path) -> bool:
    path = Path(work_dir) / db_files.RECORD_FILE
    return path.is_file() and path.stat().st_size > 0


def record_count(work_dir: Path) -> int:
    """Lines of the work dir's record file (0 when none)."""
    path = Path(work_dir) / db_files.RECORD_FILE
    if not path.is_file():
        return 0
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def run_task_names(run: Run, tasks: list) -> dict[int, str]:
    """Each task's name in the run's trials (a single PrimFunc's is the name its logger
    gives it, e.g. ``GMM_1_128_1_128_``)."""
    names = list(dict.fromkeys(run.trials["task"])) if not run.trials.empty else []
    if len(tasks) == 1 and len(names) == 1:
        return {tasks[0].index: names[0]}
    return {t.index: t.name for t in tasks if t.name in names}


def own_best(work_dir: Path, tasks: list) -> dict[int, float]:
    """Each task's fastest successful trial (µs) of the work dir, leaving out what was carried
    in from other shapes: what its own tuning found."""
    run = Run(work_dir)
    trials = run.trials
    if trials.empty:
        return {}
    ok = trials[(trials["status"] == "ok") & (trials["carry"] != SHAPE_CARRY)]
    by_name = ok.groupby("task")["latency_us"].min().to_dict()
    return {i: float(by_name[name]) for i, name in run_task_names(run, tasks).items()
            if name in by_name}


def top_trials(run: Run, task: str, n: int) -> list[Any]:
    """The ``n`` fastest successful trials of a task (distinct latencies first)."""
    trials = run.trials
    ok = trials[(trials["task"] == task) & (trials["status"] == "ok")]
    ok = ok.sort_values("latency_us", kind="stable")
    return [run.trial(int(i)) for i in list(ok.index)[:n]]


def carry_to(source: str, run: Run, source_tasks: list, tasks: list, target: Any, top: int
             ) -> tuple[dict[int, list], dict[int, int], str | None, list[int]]:
    """The ``top`` fastest schedules of each source task carried to its matching task of
    ``tasks`` (:func:`msviz.records.task_match.nearest`).

    Returns ``(items per task index, failed carries per task index, first reason, task
    indices with no matching source task)``; an item is ``(schedule, lineage info, structural
    hash)`` as :meth:`~msviz.engine.session.Session.measure` takes it.
    """
    names = run_task_names(run, source_tasks)
    candidates = [(t, t.workload.mod) for t in source_tasks if t.index in names]
    items: dict[int, list] = {}
    failed: dict[int, int] = {}
    first_error: str | None = None
    missing: list[int] = []
    for task in tasks:
        src = nearest(task.workload.mod, candidates)
        if src is None:
            missing.append(task.index)
            continue
        seen: set[int] = set()
        for trial in top_trials(run, names[src.index], top):
            carry = carry_trace(trial, task.workload.mod, target)
            if carry.schedule is None:
                failed[task.index] = failed.get(task.index, 0) + 1
                first_error = first_error or f"{source} -> {task.name}: {carry.error}"
                continue
            name = source if len(source_tasks) == 1 else f"{source}/{src.name}"
            one = carried(carry.schedule, SHAPE_CARRY, f"{name} trial {trial.index}",
                          carry.adjusted)
            if one.shash in seen:
                continue
            seen.add(one.shash)
            items.setdefault(task.index, []).append(one)
    return items, failed, first_error, missing


def measure_on(session: Any, items: dict[int, list], measurer: Any = None
               ) -> dict[int, list[dict]]:
    """Measure carried items with ``session`` (not tuning; with ``measurer`` if given); rows
    per task index."""
    if not any(items.values()):
        return {}
    return session.measure(items, measurer=measurer).result()


def summarize(rows: dict[int, list[dict]], failed: dict[int, int], error: str | None,
              missing: list[int]) -> CrossResult:
    """The :class:`CrossResult` of measured rows (a run that failed counts as failed)."""
    best: dict[int, float] = {}
    measured: dict[int, int] = {}
    failed = dict(failed)
    for index, task_rows in rows.items():
        for row in task_rows:
            us = row.get("latency_us")
            if us is not None and math.isfinite(us) and row.get("check") != "wrong":
                measured[index] = measured.get(index, 0) + 1
                best[index] = min(best.get(index, math.inf), float(us))
            else:
                failed[index] = failed.get(index, 0) + 1
                why = row.get("error") or (
                    "wrong result" if row.get("check") == "wrong" else None)
                error = error or (f"{row.get('task')}: {str(why).splitlines()[0][:200]}"
                                  if why else None)
    return CrossResult(best, measured, failed, error, missing)
