"""The sidecar: append, read back tolerant of torn lines, merge into Run.trials."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from msviz.archive.sidecar_writer import SidecarWriter
from msviz.errors import MsvizWarning
from msviz.records.sidecar import (
    SIDECAR_COLUMNS,
    SIDECAR_FILE,
    merge_sidecar,
    read_sidecar,
)


def test_round_trip(tmp_path: Path) -> None:
    with SidecarWriter(tmp_path) as w:
        w.trial(1, batch=0, generation=0, predicted_score=0.5, design_space=2,
                mutator="MutateTileSize", parent=3, error=None, run_secs=(1e-5,))
        w.trial(2, batch=0, generation=0, predicted_score=math.nan, error="LocalBuilder: x",
                error_kind="build")
        w.remeasure(1, [1.1e-5, 1.2e-5], repeats=2)
        w.remeasure(1, [1.0e-5], repeats=1)
        w.remeasure(None, [2e-5])
    side = read_sidecar(tmp_path)
    assert side.trials[1]["mutator"] == "MutateTileSize" and side.trials[1]["run_secs"] == [1e-5]
    assert side.trials[2]["predicted_score"] is None  # NaN is stored as null
    assert [e["run_secs"] for e in side.remeasures[1]] == [[1.1e-5, 1.2e-5], [1.0e-5]]
    assert len(side.other) == 1
    with pytest.raises(ValueError, match="closed"):
        w.trial(3)


def test_torn_tail_is_cut_and_corrupt_lines_warn(tmp_path: Path) -> None:
    with SidecarWriter(tmp_path) as w:
        w.trial(1, batch=0)
    path = tmp_path / SIDECAR_FILE
    with open(path, "a") as f:
        f.write('{"v":1,"kind":"trial","line":2,"ba')  # killed mid-write
    with pytest.warns(MsvizWarning) as caught:
        assert list(read_sidecar(tmp_path).trials) == [1]
    assert len(caught) == 1
    assert str(caught[0].message) == (
        f"{path}: skipped its torn last line (line 2, no newline: cut by a crash, or still "
        "being written)")
    with SidecarWriter(tmp_path) as w:  # a new writer cuts it off
        assert w.repaired == len('{"v":1,"kind":"trial","line":2,"ba')
        w.trial(2, batch=1)
    assert list(read_sidecar(tmp_path).trials) == [1, 2]  # no warning: nothing torn now
    with open(path, "a") as f:
        f.write("not json\n")
        f.write('{"v":1,"kind":"trial","line":3}\n')
        f.write("[1, 2]\n")  # JSON, but not an entry
        f.write("7, 8\n")  # two values
        f.write('{"v":1,"kind":"trial","line":4}\n')
    with pytest.warns(MsvizWarning) as caught:
        assert list(read_sidecar(tmp_path).trials) == [1, 2, 3, 4]
    assert len(caught) == 1
    assert str(caught[0].message) == f"{path}: skipped 3 corrupt sidecar line(s) (line 3, 5, 6)"


def test_event_timestamp_is_stored_in_milliseconds(tmp_path: Path) -> None:
    with SidecarWriter(tmp_path) as w:
        w.trial(1, timestamp=1767323045.678901)  # 2026-01-02 03:04:05.678901 UTC
        w.trial(2)
    side = read_sidecar(tmp_path)
    assert side.trials[1]["timestamp"] == "2026-01-02T03:04:05.678+00:00"
    assert side.trials[2]["timestamp"].endswith("+00:00")


def test_merge_adds_columns_and_error_text(tmp_path: Path) -> None:
    with SidecarWriter(tmp_path) as w:
        w.trial(2, batch=1, generation=3, predicted_score=0.25, error="LocalRunner: Timeout",
                error_kind="run", origin="mutated", parent=4)
        w.remeasure(2, [3e-6])
    trials = pd.DataFrame({"line": [1, 2], "status": ["ok", "failed"],
                           "error": [None, None]})
    merged = merge_sidecar(trials, tmp_path)
    assert set(SIDECAR_COLUMNS) <= set(merged.columns)
    assert list(merged["status"]) == ["ok", "run_timeout"]
    assert str(merged["timestamp"].dtype) == "datetime64[ns, UTC]"
    assert merged["error"].iloc[1] == "LocalRunner: Timeout" and merged["error"].iloc[0] is None
    assert merged["batch"].iloc[1] == 1 and pd.isna(merged["batch"].iloc[0])
    assert merged["predicted_score"].iloc[1] == 0.25
    assert merged["remeasured_secs"].iloc[1] == [[3e-6]]
    assert merged["remeasured_secs"].iloc[0] is None
    assert pd.isna(merged["timestamp"].iloc[0]) and merged["timestamp"].iloc[1].year >= 2024


def test_merge_marks_infrastructure_failures(tmp_path: Path) -> None:
    with SidecarWriter(tmp_path) as w:
        w.trial(1, error="watchdog: the runner did not answer in 60 s (Timeout)",
                error_kind="infra")
        w.trial(2, error="LocalBuilder: Timeout, killed after 30 seconds", error_kind="build")
    trials = pd.DataFrame({"line": [1, 2, 3], "status": ["failed"] * 3, "error": [None] * 3})
    merged = merge_sidecar(trials, tmp_path)
    assert list(merged["status"]) == ["infra_error", "build_timeout", "failed"]


def test_no_sidecar_gives_empty_columns(tmp_path: Path) -> None:
    merged = merge_sidecar(pd.DataFrame({"line": [1], "status": ["ok"], "error": [None]}),
                           tmp_path)
    assert merged["mutator"].iloc[0] is None and pd.isna(merged["predicted_score"].iloc[0])
