"""A stock work dir's profile read from its log stamps (``batches_from_logs``)."""

from __future__ import annotations

import pandas as pd
import pandas.testing as pdt

from msviz.records.profile import LOGS_STAGE, batches_from_logs, profile_frame


def test_a_models_batches_take_turns() -> None:
    """Two tasks taking turns: each batch lasts from the batch before it (of any task), not
    from its own task's previous batch (that would count the other task's batches too)."""
    stamps = [("a", "10:00:00"), ("a", "10:00:00"), ("b", "10:00:05"), ("a", "10:00:07"),
              ("b", "10:00:12"), ("b", "10:00:12")]  # batches end at 0, 5, 7 and 12 s
    trials = pd.DataFrame({"task": [t for t, _ in stamps],
                           "logged_at": [f"2026-11-23 {s}" for _, s in stamps]})
    expected = profile_frame([
        {"task": "b", "batch": 0, "stages": {LOGS_STAGE: 5.0}},
        {"task": "a", "batch": 1, "stages": {LOGS_STAGE: 2.0}},
        {"task": "b", "batch": 1, "stages": {LOGS_STAGE: 5.0}},
    ])
    pdt.assert_frame_equal(batches_from_logs(trials), expected)
    assert batches_from_logs(trials)["seconds"].sum() == 12.0  # the run's span, once


def test_one_task_and_no_stamps() -> None:
    trials = pd.DataFrame({"task": ["a"] * 3,
                           "logged_at": ["2026-11-23 10:00:00", "2026-11-23 10:00:04",
                                         "2026-11-23 10:00:10"]})
    pdt.assert_frame_equal(batches_from_logs(trials), profile_frame([
        {"task": "a", "batch": 1, "stages": {LOGS_STAGE: 4.0}},
        {"task": "a", "batch": 2, "stages": {LOGS_STAGE: 6.0}}]))
    assert batches_from_logs(pd.DataFrame({"task": []})).empty
