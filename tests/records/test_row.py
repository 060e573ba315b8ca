"""A trial's row: status, mean latency and GFLOPS, against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from msviz.records import row


@pytest.mark.parametrize(
    ("run_secs", "kind", "error", "expected"),
    [
        ((1e-5, 3e-5), None, None, "ok"),
        ((1e-5,), "run", "ignored: the record has a measurement", "ok"),
        ((1e10,), None, None, "failed"),
        (None, None, None, "failed"),
        ((1e10,), "build", "LocalBuilder: Timeout, killed after 30 seconds", "build_timeout"),
        ((1e10,), "build", "RuntimeError: cannot lower", "build_error"),
        ((1e10,), "run", "LocalRunner: Timeout", "run_timeout"),
        ((1e10,), None, "segfault in kernel", "run_error"),  # text without a kind: the runner
        ((1e10,), "infra", "watchdog: no answer (Timeout)", "infra_error"),
        ((1e10,), "infra", "no CUDA device", "infra_error"),
        ((2e-5, 1e10), None, None, "ok"),  # stock's IsValid: some time is not 1e10
        ((1e10, 1e10), None, None, "failed"),
        ((), None, None, "failed"),
        ((0.0, 2.0), None, None, "ok"),  # stock reads and ranks a 0.0 as it is
        ((1e10,), "wrong", "wrong result: Z differs in 3 of 4 elements", "wrong_result"),
        (None, "wrong", "wrong result: Z differs", "wrong_result"),
    ],
)
def test_status(run_secs, kind, error, expected) -> None:
    assert row.status(run_secs, kind, error) == expected
    assert expected in row.STATUSES


def test_mean_latency_and_gflops() -> None:
    assert row.mean_latency_us((1e-5, 3e-5)) == pytest.approx(20.0, rel=1e-15)
    assert math.isnan(row.mean_latency_us((1e10,)))
    assert math.isnan(row.mean_latency_us(None)) and math.isnan(row.mean_latency_us(()))
    # the mean stock ranks by: a 1e10 among real times counts, a 0.0 too
    assert row.mean_latency_us((3.0, 1e10)) == 5000000001.5 * 1e6
    assert row.mean_latency_us((0.0, 2.0)) == 1e6 and row.mean_latency_us([-1.0]) == -1e6
    # 2 * 128**3 FLOP in 20 us = 209.7152 GFLOPS
    assert row.gflops(2 * 128**3, 20.0) == pytest.approx(209.7152, rel=1e-12)
    assert math.isnan(row.gflops(2 * 128**3, math.nan))
    assert math.isnan(row.gflops(math.nan, 20.0))


def test_valid_run_secs_and_mean_run_secs_as_stock() -> None:
    """``TuningRecordNode::IsValid`` and ``SortTuningRecordByMeanRunSecs::Mean``."""
    assert [row.valid_run_secs(s) for s in (None, (), [1e10], (1e10, 1e10), (3.0, 1e10),
                                            (0.0,), (-1.0,), (2e10,))] == [
        False, False, False, False, True, True, True, True]
    assert row.mean_run_secs(None) == row.mean_run_secs(()) == 1e10
    # summed in order, as the C++ loop does (not compensated, as sum() is on Python >= 3.12)
    assert row.mean_run_secs([0.1, 0.2, 0.3]) == 0.20000000000000004
    assert row.mean_run_secs([0.3, 0.2, 0.1]) == 0.19999999999999998


def test_stored_run_secs_and_timestamps() -> None:
    assert row.stored_run_secs(None) == (1e10,) and row.stored_run_secs([1, 2.5]) == (1.0, 2.5)
    # 2026-01-02 03:04:05.678901 UTC is 1767323045.678901 s since the epoch
    assert row.iso_timestamp(1767323045.678901) == "2026-01-02T03:04:05.678+00:00"
    assert row.iso_timestamp("2026-01-02T03:04:05.678+00:00") == "2026-01-02T03:04:05.678+00:00"
    assert row.iso_timestamp(None) is None and row.iso_timestamp(math.nan) is None


def test_frame_dtypes() -> None:
    frame = row.trials_frame({c: [] for c in row.ALL_COLUMNS})
    assert list(frame.columns) == row.ALL_COLUMNS and len(frame) == 0
    assert str(frame["timestamp"].dtype) == "datetime64[ns, UTC]"
    assert str(frame["batch"].dtype) == "Int64" and frame["latency_us"].dtype == float
