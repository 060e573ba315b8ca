"""msviz.compare on real work dirs: a stock tune_tir run and an msviz session of GMM-0."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest

import msviz


def test_compare_stock_and_msviz_runs(stock_run: msviz.Run, tuned_session: Any) -> None:
    view = msviz.compare(stock_run, tuned_session, names=["stock", "msviz"])
    runs = {"stock": stock_run.trials, "msviz": tuned_session.open().trials}
    # independently: the running minimum of each run's successful latencies, in trial order
    for curve, (name, trials) in zip(view.info.runs, runs.items(), strict=True):
        assert curve.name == name and curve.trial == tuple(range(len(trials)))
        running = np.fmin.accumulate(trials["latency_us"].to_numpy(dtype=float))
        np.testing.assert_allclose(curve.best_us, running)
    finals = {name: np.nanmin(t["latency_us"]) for name, t in runs.items()}
    summary = {s.name: s for s in view.info.summary}
    assert summary["stock"].trials == 12 and summary["stock"].failed == 4
    assert summary["msviz"].trials == 16
    assert summary["msviz"].speedup == pytest.approx(finals["stock"] / finals["msviz"])
    assert [t.name for t in view.figure.data] == ["stock", "msviz"]
    assert view.figure.layout.xaxis.title.text == "Trial"
    view.x_axis.value = "time"  # the same widget redraws against wall time
    assert view.figure.layout.xaxis.title.text == "Wall time (s)"
    # seconds since each run's start, not ms or us: each curve spans its trials' stamps (msviz's
    # own, else the log's: stock's GMM dir holds two runs, minutes apart on a loaded host)
    for trace, trials in zip(view.figure.data, runs.values(), strict=True):
        column = next(c for c in ("timestamp", "logged_at") if trials[c].notna().any())
        stamps = pd.to_datetime(trials[column]).dropna()
        assert np.nanmax(trace.x) - np.nanmin(trace.x) == pytest.approx(
            (stamps.max() - stamps.min()).total_seconds(), abs=1e-3)
    # the msviz run's start is its sidecar's environment line, written before its first batch
    # was searched, built and run: that batch's trials come after it, never at 0 s
    sidecar = [json.loads(line) for line in (tuned_session.work_dir / "msviz_sidecar.jsonl")
               .read_text().splitlines() if line.strip()]
    start = pd.Timestamp(min(e["timestamp"] for e in sidecar if e.get("timestamp")))
    first = pd.Timestamp(runs["msviz"]["timestamp"].min())
    msviz_curve = view.info.runs[1]
    assert msviz_curve.seconds[0] == pytest.approx((first - start).total_seconds(), abs=1e-3)
    # setting up, one batch: told apart from 0 s (by more than the 1e-3 above) on any host
    assert msviz_curve.seconds[0] > 0.01
    table = view.table.value
    assert "Speedup over stock" in table and "<td>msviz</td>" in table and "<td>16</td>" in table
    assert "NA" not in table and "nan" not in table


def test_compare_by_work_dir_and_bad_sources(stock_run: msviz.Run, tuned_session: Any) -> None:
    view = msviz.compare(stock_run.work_dir, str(tuned_session.work_dir))
    assert [c.name for c in view.info.runs] == [stock_run.work_dir.name,
                                               tuned_session.work_dir.name]
    with pytest.raises(TypeError, match="source 1 is a int"):
        msviz.compare(stock_run, 3)
    with pytest.raises(ValueError, match="2 different names"):
        msviz.compare(stock_run, stock_run, names=["a", "a"])
    with pytest.raises(ValueError, match="at least one"):
        msviz.compare()
