"""The time-to-quality curve in widgets (real widget state): the Tasks tab live from events and
from a stock ``tune_relax`` work dir, and ``msviz.compare`` overlaying two runs."""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path

import pytest

import msviz
from msviz.engine.events import Event
from msviz.widgets import Dashboard
from msviz.widgets.tasks_view import TasksView
from tests.conftest import MODEL_TASKS

TASKS = [{"index": 0, "name": "dense", "flop": 8000.0, "weight": 2, "max_trials": None,
          "pinned": False, "skipped": False},
         {"index": 1, "name": "relu", "flop": 100.0, "weight": 1, "max_trials": None,
          "pinned": False, "skipped": False}]


def _point(trials: int, elapsed: float, estimate: float, untuned: int) -> tuple[str, dict]:
    return ("model_latency", {"batch": None, "trials": trials, "elapsed": elapsed,
                              "paused": 0.0, "started": 1000.0, "estimate_us": estimate,
                              "untuned_tasks": untuned, "untuned_model_us": 50.0,
                              "best_us": [None, None]})


def test_tasks_tab_draws_the_curve_live_from_events() -> None:
    view = TasksView()
    kinds = [("started", {"model": "mlp", "num_tasks": 2}), ("tasks", {"tasks": TASKS}),
             ("untuned", {"tasks": [
                 {"index": 0, "name": "dense", "untuned_us": 20.0, "error": None},
                 {"index": 1, "name": "relu", "untuned_us": 10.0, "error": None}]}),
             _point(0, 4.0, 50.0, 2), _point(4, 9.0, 30.0, 1), _point(8, 15.5, 12.0, 0)]
    now = time.time()
    events = [Event(i, k, now + i, "mlp", d) for i, (k, d) in enumerate(kinds)]
    view.update_from_events(events[:3])
    assert view.quality_box.layout.display == "none"  # no point yet: no empty plot
    view.update_from_events(events)
    assert view.quality_box.layout.display is None
    (trace,) = view.quality.data
    assert (list(trace.x), list(trace.y)) == ([4.0, 9.0, 15.5], [50.0, 30.0, 12.0])
    assert list(trace.customdata) == [2, 1, 0]  # tasks still untuned, in the hover
    assert view.quality.layout.title.text == "Time to quality"
    assert view.quality.layout.xaxis.title.text == "Wall time (s)"
    assert view.error.text == ""


def test_a_stock_work_dirs_curve_in_its_dashboard(stock_model_work_dir: Path) -> None:
    run = msviz.open(stock_model_work_dir)
    view = Dashboard(run).tasks_view
    info = view.quality_info
    assert info.source == "logs" and info.trials[-1] == 16
    # no untuned times in a stock work dir: only the last point is known (every task tuned)
    (trace,) = view.quality.data
    assert list(trace.y) == [pytest.approx(run.total_latency_us, rel=1e-3)]
    assert view.quality_box.layout.display is None


def test_compare_overlays_two_runs_and_lends_untuned_times(stock_model_work_dir: Path,
                                                           tmp_path: Path) -> None:
    """The copy holds an ``untuned`` line (as an msviz session writes it): the stock run of
    the same workloads borrows it, so both curves start at the untuned model."""
    copy = tmp_path / "with_untuned"
    shutil.copytree(stock_model_work_dir, copy)
    untuned = {name: 100.0 + i for i, name in enumerate(MODEL_TASKS)}
    line = {"v": 1, "kind": "untuned", "timestamp": "2026-11-25T10:00:00.000+00:00",
            "tasks": [{"index": i, "name": n, "untuned_us": u, "error": None}
                      for i, (n, u) in enumerate(untuned.items())]}
    with open(copy / "msviz_sidecar.jsonl", "a") as f:
        f.write(json.dumps(line) + "\n")
    view = msviz.compare(stock_model_work_dir, copy, names=["stock", "copy"])
    stock, other = view.quality_infos
    weights = {"fused_matmul2_add_relu": 2.0}
    base = sum(weights.get(n, 1.0) * u for n, u in untuned.items())
    for info in (stock, other):
        assert info.estimate_us[0] == pytest.approx(base) and info.seconds[0] == 0.0
        assert not any(math.isnan(v) for v in info.estimate_us)
    assert stock.estimate_us == other.estimate_us and stock.missing == ()
    assert [t.name for t in view.quality.data] == ["stock", "copy"]
    assert view.quality_box.layout.display is None
    view.x_axis.value = "time"
    assert view.quality.layout.xaxis.title.text == "Wall time (s)"
