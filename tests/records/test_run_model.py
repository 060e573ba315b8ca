"""msviz.open on a stock ``tune_relax`` work dir of 4 tasks: each task its own trials and error
texts, logs tied by task name (not FLOP), and MetaSchedule's logged task table."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest

import msviz
from msviz.records.database import RECORD_FILE, WORKLOAD_FILE
from tests.conftest import MODEL_TASKS

_TRIAL = re.compile(r"\[Task #(\d+): (\S+)\] Trial #\d+: (?:GFLOPs: \S+ Time: (\S+) us|Error)")


def _logged_trials(work_dir: Path) -> dict[str, list[float | None]]:
    """Per task name (from the log file's name): each trial's logged latency (None: failed)."""
    out = {}
    for path in sorted((work_dir / "logs").glob("*task_[0-9]*_*.log")):
        name = re.search(r"task_\d+_(.+)\.log$", path.name).group(1)
        out[name] = [float(m.group(3)) if m.group(3) else None
                     for m in _TRIAL.finditer(path.read_text())]
    return out


def _trials_by_task(run: msviz.Run) -> dict[str, list[float | None]]:
    out: dict[str, list] = {}
    for task, lat in zip(run.trials["task"], run.trials["latency_us"], strict=True):
        out.setdefault(task, []).append(None if math.isnan(lat) else round(lat, 4))
    return out


def test_open_lists_each_task_with_its_own_trials(stock_model_work_dir: Path) -> None:
    run = msviz.open(stock_model_work_dir)
    assert list(run.tasks["task"]) == list(MODEL_TASKS)
    assert list(run.tasks["index"]) == [0, 1, 2, 3]
    assert list(run.tasks["weight"]) == [1.0, 2.0, 1.0, 1.0]
    assert list(run.tasks["trials"]) == [4, 4, 4, 4]  # 1 failed + 3 of the second run
    assert list(run.tasks["failed"]) == [1, 1, 1, 1]
    # each task's trials are the ones its own log lists, in order (latencies as logged)
    logged = _logged_trials(stock_model_work_dir)
    assert _trials_by_task(run) == {k: [None if v is None else round(v, 4) for v in vals]
                                    for k, vals in logged.items()}
    # error texts: every failed trial carries its own task's build error
    failed = run.trials[run.trials["status"] != "ok"]
    assert sorted(failed["task"]) == sorted(MODEL_TASKS)
    assert all("Timeout" in e for e in failed["error"])
    assert run.trials["logged_at"].notna().all()
    flops = dict(zip(run.tasks["task"], run.tasks["flop"], strict=True))
    assert flops["matmul"] == flops["matmul1"] == 2 * 64 * 128


def test_logged_task_table_and_total_latency(stock_model_work_dir: Path) -> None:
    run = msviz.open(stock_model_work_dir)
    table = run.task_table
    assert list(table["name"]) == list(MODEL_TASKS)
    assert list(table.columns) == ["id", "name", "flop", "weight", "trials", "speed_gflops",
                                   "latency_us", "weighted_latency_us", "done"]
    assert list(table["trials"]) == [3, 3, 3, 3]  # the last run's table
    assert list(table["done"]) == [True] * 4
    # the logged latencies are the best of each task's records (printed to 4 decimals)
    best = dict(zip(run.tasks["task"], run.tasks["best_latency_us"], strict=True))
    for row in table.itertuples():
        assert row.latency_us == pytest.approx(best[row.name], abs=5e-5)
        assert row.weighted_latency_us == pytest.approx(row.weight * best[row.name], abs=5e-4)
    expected_total = sum(w * b for w, b in zip(run.tasks["weight"],
                                               run.tasks["best_latency_us"], strict=True))
    assert run.total_latency_us == pytest.approx(expected_total, abs=5e-3)
    assert run.tasks["weighted_latency_us"].sum() == pytest.approx(expected_total, rel=1e-12)
    assert list(run.tasks["done"]) == [True] * 4


def _swap_workloads(src: Path, dst: Path, a: int, b: int) -> None:
    """Copy a work dir with workload lines ``a`` and ``b`` swapped (records remapped): the
    same database, as a work dir that had tuned task ``b`` first would hold it."""
    shutil.copytree(src, dst)
    lines = (src / WORKLOAD_FILE).read_text().splitlines()
    lines[a], lines[b] = lines[b], lines[a]
    (dst / WORKLOAD_FILE).write_text("\n".join(lines) + "\n")
    swap = {a: b, b: a}
    out = []
    for line in (src / RECORD_FILE).read_text().splitlines():
        w, record = json.loads(line)
        out.append(json.dumps([swap.get(w, w), record]))
    (dst / RECORD_FILE).write_text("\n".join(out) + "\n")


def _flop_tie(run: msviz.Run) -> dict[int, str]:
    """The old tie: each workload, in file order, takes the first logged task of its FLOP."""
    unmatched = list(run.task_table.itertuples())
    out = {}
    by_workload = run.tasks.sort_values("workload")
    for w, flop in zip(by_workload["workload"], by_workload["flop"], strict=True):
        hit = next(t for t in unmatched if math.isclose(t.flop, flop))
        unmatched.remove(hit)
        out[int(w)] = hit.name
    return dict(sorted(out.items()))


def test_equal_flop_tasks_are_tied_by_name(stock_model_work_dir: Path, tmp_path: Path) -> None:
    run = msviz.open(stock_model_work_dir)
    workload = dict(zip(run.tasks["task"], run.tasks["workload"], strict=True))
    a, b = workload["matmul1"], workload["matmul"]
    _swap_workloads(stock_model_work_dir, tmp_path / "swapped", a, b)
    swapped = msviz.open(tmp_path / "swapped")
    # tied by name: each task keeps its own trials (as its own log lists them)
    assert _trials_by_task(swapped) == _trials_by_task(run)
    names = dict(zip(swapped.tasks["workload"], swapped.tasks["task"], strict=True))
    assert names[a] == "matmul" and names[b] == "matmul1"
    assert list(swapped.tasks["task"]) == list(MODEL_TASKS)  # rows in task-table order
    # the FLOP tie would have swapped the two 16,384-FLOP tasks' names and trials
    old = _flop_tie(swapped)
    assert old[a] == "matmul1" and old[b] == "matmul"
    assert old != {int(w): n for w, n in sorted(names.items())}
