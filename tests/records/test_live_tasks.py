"""A live model session's table: the ``tasks`` event gives each task its ID, weight and FLOP."""

from __future__ import annotations

import math
from pathlib import Path

from msviz.engine.events import Event
from msviz.records.live import LiveRun


def _measured(seq: int, task: str, task_index: int, workload: int, line: int,
              secs: list[float]) -> Event:
    row = {"line": line, "task": task, "workload": workload, "task_trial": 0,
           "run_secs": secs, "error_kind": None, "error": None, "timestamp": 1.0e9 + seq}
    return Event(seq, "measured", 1.0e9 + seq, task,
                 {"task_index": task_index, "batch": seq, "trials": [row]})


def test_tasks_event_names_ids_weights_and_flops(tmp_path: Path) -> None:
    live = LiveRun(tmp_path, task="mlp")
    tasks = [{"index": 0, "name": "dense", "flop": 8000.0, "weight": 2, "max_trials": None,
              "pinned": False, "skipped": False},
             {"index": 1, "name": "relu", "flop": 100.0, "weight": 1, "max_trials": None,
              "pinned": False, "skipped": False}]
    live.feed(Event(0, "tasks", 1.0e9, "mlp", {"tasks": tasks}))
    # the database committed relu's workload first: workload 0 is task 1
    live.feed(_measured(1, "relu", 1, 0, 1, [2e-6]))
    live.feed(_measured(2, "dense", 0, 1, 2, [4e-6]))
    frame = live.tasks
    assert list(frame["task"]) == ["dense", "relu"]
    assert list(frame["index"]) == [0, 1] and list(frame["workload"]) == [1, 0]
    assert list(frame["weight"]) == [2.0, 1.0] and list(frame["flop"]) == [8000.0, 100.0]
    assert list(frame["weighted_latency_us"]) == [8.0, 2.0]
    assert list(live.trials["gflops"]) == [100.0 / 2.0 / 1e3, 8000.0 / 4.0 / 1e3]
    assert all(d is None or (isinstance(d, float) and math.isnan(d)) for d in frame["done"])
