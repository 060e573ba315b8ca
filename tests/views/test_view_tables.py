"""Table infos against frames written out by hand: task table, trials table, one page of it,
failure triage (infrastructure failures apart from the candidate's)."""

from __future__ import annotations

import math

import pandas as pd

from msviz.views.tables import (
    TableInfo,
    TrialPageInfo,
    failure_triage_info,
    task_table_info,
    trial_page_info,
    trial_table_info,
)

NAN = math.nan


def _assert_table(info: TableInfo, frame: pd.DataFrame, note: str) -> None:
    assert info.note == note
    pd.testing.assert_frame_equal(info.frame.reset_index(drop=True), frame, check_dtype=False)


def test_failure_triage(trials) -> None:
    more = pd.DataFrame({
        "task": ["B", "B", "A"], "trial": [6, 7, 8], "status": ["build_error"] * 2 + ["failed"],
        "error": ["Traceback:\n  File y\nValueError: bad tile", "ValueError: bad tile", None],
    })
    expected = pd.DataFrame({
        "status": ["build_error", "infra_error", "failed"],
        "fault": ["candidate", "infrastructure", "candidate"],
        "cause": ["ValueError: bad tile", "watchdog: the runner did not answer in 60 s",
                  "(no error text: the stock database keeps only run_secs=[1e10])"],
        "count": [3, 1, 1],
        "trials": ["1, 6, 7", "3", "8"],
    })
    _assert_table(failure_triage_info(pd.concat([trials, more], ignore_index=True)),
                  expected, "")


def test_failure_triage_without_failures(trials) -> None:
    info = failure_triage_info(trials[trials["status"] == "ok"])
    assert list(info.frame.columns) == ["status", "fault", "cause", "count", "trials"]
    assert info.frame.empty and info.note == ""


def test_task_table() -> None:
    tasks = pd.DataFrame({"task": ["A", "B"], "flop": [200000.0, NAN], "weight": [2.0, NAN],
                          "best_gflops": [5.0, NAN], "best_latency_us": [40.0, NAN],
                          "trials": [4, 2], "failed": [0, 2]})
    expected = pd.DataFrame({
        "Name": ["A", "B"], "FLOP": ["200,000", "?"], "Weight": [2.0, NAN],
        "Speed (GFLOPS)": [5.0, NAN], "Latency (us)": [40.0, NAN],
        "Weighted Latency (us)": [80.0, NAN], "Trials": [4, 2], "Failed": [0, 2],
    })
    expected.index.name = "ID"
    info = task_table_info(tasks)
    pd.testing.assert_frame_equal(info.frame, expected)
    assert info.note == ""


def test_trial_table_under_and_over_the_limit(trials) -> None:
    columns = ["task", "trial", "task_trial", "status", "latency_us", "gflops", "error"]
    _assert_table(trial_table_info(trials), trials[columns], "")
    # limit 4: two of the failures (limit // 2), then the two fastest, in trial order
    info = trial_table_info(trials, limit=4)
    _assert_table(info, trials.loc[[1, 2, 3, 5], columns].reset_index(drop=True),
                  "showing 4 of 6 trials: the 2 fastest and 2 of 2 failures")


def test_trial_page_sorted_filtered(trials) -> None:
    info = trial_page_info(trials, sort_by="latency_us", filters={"task": "A"}, page=1,
                           page_size=3)
    columns = ("trial", "task", "status", "latency_us", "gflops", "generation", "batch",
               "predicted_score", "error")
    row = {"trial": 4, "task": "A", "status": "ok", "latency_us": 80.0, "gflops": 2.5,
           "generation": 1, "batch": 1, "predicted_score": 0.7, "error": None}
    options = {"task": ["A", "B"], "status": ["build_error", "infra_error", "ok"],
               "generation": [0, 1], "batch": [0, 1]}
    # task A sorted by latency: 40 (5), 50 (2), 80 (4), 100 (0); page 1 of size 3 holds one row
    assert info == TrialPageInfo(columns, ({**row, "trial": 0, "latency_us": 100.0,
                                            "gflops": 2.0, "generation": 0, "batch": 0,
                                            "predicted_score": 0.5},), 4, 1, 2, options)
    first = trial_page_info(trials, sort_by="latency_us", ascending=False, page_size=2)
    assert [r["trial"] for r in first.rows] == [0, 4] and first.pages == 3
    failed_last = trial_page_info(trials, sort_by="latency_us", page_size=6)
    assert [r["trial"] for r in failed_last.rows] == [5, 2, 4, 0, 1, 3]


def test_trial_page_clamps_and_names_bad_input(trials) -> None:
    import pytest

    assert trial_page_info(trials, page=99, page_size=4).page == 1
    with pytest.raises(ValueError, match="'error'"):
        trial_page_info(trials, filters={"error": "x"})
    with pytest.raises(ValueError, match="'speed'"):
        trial_page_info(trials, sort_by="speed")
