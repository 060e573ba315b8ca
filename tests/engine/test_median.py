"""Trial times as MetaSchedule's C++ takes them: the median of ``run_secs`` for the task
scheduler and the stock log lines (``GetRunMsMedian``), the mean for the database's ranking."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from msviz.records import row


@pytest.mark.parametrize("secs, us", [([3e-6, 1e-6, 2e-6], 2.0), ([4e-6, 1e-6, 2e-6, 9e-6], 3.0),
                                      ([5e-6], 5.0), ([1e10], float("nan")), (None, float("nan"))])
def test_median_latency_us(secs: Any, us: float) -> None:
    assert row.median_latency_us(secs) == pytest.approx(us, nan_ok=True)


def test_logs_and_scheduler_history_use_the_median(tmp_path: Path, tiny_session: Any) -> None:
    session = tiny_session(tmp_path / "wd", strategy="replay", max_trials=6, trials_per_batch=3,
                           evaluator_config={"number": 1, "repeat": 5, "min_repeat_ms": 0})
    session.start()
    assert session.wait(300) == "finished"
    lines = (session.work_dir / "database_tuning_record.json").read_text().splitlines()
    secs = [json.loads(line)[1][1] for line in lines]  # in the order they were measured
    assert len(secs) == 6 and all(len(s) == 5 for s in secs)
    medians_us = [float(np.median(s)) * 1e6 for s in secs]
    assert medians_us != [float(np.mean(s)) * 1e6 for s in secs]  # 5 repeats differ
    (log,) = (session.work_dir / "logs").glob("*task_0*.log")
    times = [float(t) for t in re.findall(r"Time: ([0-9.]+) us", log.read_text())]
    np.testing.assert_allclose(times, medians_us, atol=1e-4)
    flop = 2.0 * 128**3
    bests = [float(b) for b in re.findall(r"Best GFLOPs: ([0-9.]+)", log.read_text())]
    running = np.minimum.accumulate(medians_us)
    np.testing.assert_allclose(bests, flop / running / 1e3, rtol=1e-6, atol=1e-4)
    # The scheduler's best-latency history: the best median after each batch of 3.
    np.testing.assert_allclose(session.tuners[0].best_history_ms,
                               [running[2] / 1e3, running[5] / 1e3], rtol=1e-9)
