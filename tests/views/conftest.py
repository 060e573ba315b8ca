"""Helpers for the view-info tests: hand-built trials and a comparison that sees NaN and
float rounding the same way on both sides."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest


def canon(value: Any) -> Any:
    """``value`` with NaN as the text ``"nan"`` and floats rounded to 12 digits, recursively
    (NamedTuples keep their type name), so two infos compare with ``==``."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (type(value).__name__, *(canon(v) for v in value))
    if isinstance(value, (tuple, list)):
        return tuple(canon(v) for v in value)
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    if isinstance(value, float):
        return "nan" if math.isnan(value) else round(value, 12)
    return value


@pytest.fixture
def same() -> Any:
    """``same(a, b)``: whether two infos are equal (NaN equals NaN)."""
    return lambda a, b: canon(a) == canon(b)


#: Six trials of two tasks: A succeeds four times, B fails twice (a build error and an
#: infrastructure failure). FLOP of A: 200,000, so GFLOPS = 200 / latency_us.
ROWS = [
    # task, trial, task_trial, status, latency_us, gflops, seconds, batch, generation, score
    ("A", 0, 0, "ok", 100.0, 2.0, 0.0, 0, 0, 0.5),
    ("B", 1, 0, "build_error", math.nan, math.nan, 1.5, 0, 0, 0.9),
    ("A", 2, 1, "ok", 50.0, 4.0, 3.0, 0, 0, 0.5),
    ("B", 3, 1, "infra_error", math.nan, math.nan, 4.0, 1, 1, 0.2),
    ("A", 4, 2, "ok", 80.0, 2.5, 6.0, 1, 1, 0.7),
    ("A", 5, 3, "ok", 40.0, 5.0, 10.0, 1, 1, 0.7),
]
START = pd.Timestamp("2026-11-22T10:00:00", tz="UTC")


@pytest.fixture
def trials() -> pd.DataFrame:
    """The six trials as ``Run.trials`` has them (sidecar timestamps tz-aware, µs)."""
    frame = pd.DataFrame(ROWS, columns=[
        "task", "trial", "task_trial", "status", "latency_us", "gflops", "seconds", "batch",
        "generation", "predicted_score"])
    frame["timestamp"] = START + pd.to_timedelta(frame.pop("seconds"), unit="s")
    frame["batch"] = frame["batch"].astype("Int64")
    frame["generation"] = frame["generation"].astype("Int64")
    frame["error"] = pd.Series([None, "Traceback (most recent call last):\n  File x\n"
                                "ValueError: bad tile", None,
                                "watchdog: the runner did not answer in 60 s", None, None],
                               dtype=object)
    return frame
