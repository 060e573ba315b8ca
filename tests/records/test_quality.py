"""A work dir's time-to-quality batches (:mod:`msviz.records.quality`): a hand-written stock
task-scheduler log, and a real stock ``tune_relax`` work dir against MetaSchedule's own total."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

import msviz
from msviz.errors import MsvizWarning
from msviz.records.quality import QualityBatch, log_batches, run_started, scheduler_log_of
from msviz.views.common import quiet_empty
from msviz.views.quality import run_quality_info

LOG = """\
2026-11-25 10:00:00 [INFO] Logging directory: /x/logs
2026-11-25 10:00:05 [INFO] [task_scheduler.cc:174] Initializing Task #0: "a"
2026-11-25 10:00:05 [INFO] [task_scheduler.cc:174] Initializing Task #1: "b"
2026-11-25 10:00:05 [INFO] [task_scheduler.cc:344]
 ID | Name |  FLOP | Weight | Speed (GFLOPS) | Latency (us) | Weighted Latency (us) | Trials | Done
2026-11-25 10:00:06 [INFO] [task_scheduler.cc:195] TaskScheduler picks Task #0: "a"
2026-11-25 10:00:07 [INFO] [task_scheduler.cc:208] Sending 2 sample(s) to builder
2026-11-25 10:00:09 [INFO] [task_scheduler.cc:218] Sending 1 valid sample(s) to runner
2026-11-25 10:00:10 [INFO] [task_scheduler.cc:195] TaskScheduler picks Task #1: "b"
2026-11-25 10:00:11 [INFO] [task_scheduler.cc:208] Sending 2 sample(s) to builder
2026-11-25 10:00:15 [INFO] [task_scheduler.cc:195] TaskScheduler picks Task #1: "b"
2026-11-25 10:00:16 [INFO] [task_scheduler.cc:208] Sending 1 sample(s) to builder
2026-11-25 10:00:20 [INFO] [task_scheduler.cc:195] TaskScheduler picks Task #0: "a"
2026-11-25 10:00:21 [INFO] [task_scheduler.cc:284] Task #0 has finished. Remaining task(s): 1
2026-11-25 10:00:30 [INFO] [task_scheduler.cc:284] Task #1 has finished. Remaining task(s): 0
"""


def test_batches_from_a_hand_written_scheduler_log(tmp_path: Path) -> None:
    """Each pick's batch takes its task's next records (as many as it sent to the builder,
    whatever the file order of the tasks); it ends when the next pick starts, the last one
    at the log's last stamp; a pick that sent nothing (its search ended) is no batch."""
    log = tmp_path / "tvm.s_tir.meta_schedule.logging.task_scheduler.log"
    log.write_text(LOG)
    # joined out of pick order: b's first batch, a's, b's second
    trials = pd.DataFrame({"task": ["b", "b", "a", "a", "b"],
                           "status": ["ok", "ok", "ok", "build_error", "ok"],
                           "latency_us": [3.0, 4.0, 5.0, math.nan, 2.5]})
    assert log_batches(log, trials, {0: "a", 1: "b"}) == [
        QualityBatch(10.0, "a", 2, (5.0,)),
        QualityBatch(15.0, "b", 2, (3.0, 4.0)),
        QualityBatch(20.0, "b", 1, (2.5,)),
    ]
    # interrupted before b's second batch was stored: that batch is empty
    with pytest.warns(MsvizWarning, match="never stored"):
        cut = log_batches(log, trials.iloc[:4], {0: "a", 1: "b"})
    assert cut[-1] == QualityBatch(20.0, "b", 1, ())


def test_a_stock_tune_relax_work_dir(stock_model_work_dir: Path) -> None:
    """Two stock runs in one work dir (1 failing trial per task, then 3 per task): the curve
    ends at the total latency MetaSchedule logged last."""
    run = msviz.open(stock_model_work_dir)
    assert scheduler_log_of(stock_model_work_dir) is not None
    with quiet_empty():
        info = run_quality_info(run, name="stock")
    assert info.source == "logs" and info.name == "stock"
    assert info.trials == (1, 2, 3, 4, 7, 10, 13, 16)
    assert all(b >= a >= 0 for a, b in zip(info.seconds, info.seconds[1:]))
    # no untuned times: unknown until each task has a successful trial (the second run's 4th)
    assert [math.isnan(v) for v in info.estimate_us] == [True] * 7 + [False]
    assert info.missing == tuple(run.task_table.sort_values("id")["name"])
    # MetaSchedule's own "Total latency (us)" (medians of 1 run each: the means)
    assert math.isclose(info.estimate_us[-1], run.total_latency_us, rel_tol=1e-3)
    # with untuned times given, every point is known and the first is the untuned model
    untuned = {name: 100.0 for name in info.missing}
    with quiet_empty():
        given = run_quality_info(run, untuned_us=untuned)
    weights = run.task_table.set_index("name")["weight"]
    assert given.seconds[0] == 0.0 and given.estimate_us[0] == 100.0 * weights.sum()
    assert not any(math.isnan(v) for v in given.estimate_us)
    assert given.estimate_us[-1] == info.estimate_us[-1]
    assert given.untuned_tasks[0] == 4 and given.untuned_tasks[-1] == 0
    # the report's model section has the curve, and says where it came from
    from msviz.report import render_report

    text = render_report(run)
    start = text.index('id="time-to-quality"')
    section = text[start:start + 2000]  # the heading, its note, the figure's div
    assert "rebuilt from the records and the task-scheduler log" in section
    assert "no untuned time for 4 task(s)" in section
    assert '"title":{"text":"Time to quality"}' in text[start:]


def test_a_runs_start(tmp_path: Path, stock_model_work_dir: Path) -> None:
    """A stock run starts at its task-scheduler log's first stamp (naive, as its logs); an
    msviz run at its sidecar's earliest stamp (tz-aware); a run with neither has none."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "tvm.s_tir.meta_schedule.logging.task_scheduler.log").write_text(
        "\n" + LOG)
    # the two attributes of a Run that run_started reads
    stock = SimpleNamespace(work_dir=tmp_path, sidecar_entries=None)
    assert run_started(stock) == pd.Timestamp("2026-11-25 10:00:00")
    mine = SimpleNamespace(work_dir=tmp_path, sidecar_entries=[
        {"kind": "x", "timestamp": "2026-11-25T10:00:03.5+00:00"},
        {"kind": "environment", "timestamp": "2026-11-25T10:00:01.25+00:00"}])
    assert run_started(mine) == pd.Timestamp("2026-11-25 10:00:01.25", tz="UTC")
    assert run_started(SimpleNamespace(work_dir=tmp_path / "none", sidecar_entries=None)) is None
    first = scheduler_log_of(stock_model_work_dir).read_text().splitlines()[0][:19]
    assert run_started(msviz.open(stock_model_work_dir)) == pd.Timestamp(first)
