"""A work dir's tuning-library coverage (``Run.coverage``, the last ``library_coverage``
sidecar line) and the trial columns of trials carried from the library, read from sidecar
lines written with msviz's own writer into a copy of the stock 4-task model's work dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

import msviz
from msviz.archive.sidecar_writer import SidecarWriter
from msviz.errors import MsvizWarning
from msviz.records import row as trial_row
from msviz.records.coverage_types import coverage_to_dict
from msviz.records.sidecar import merge_sidecar
from msviz.views.tables import trial_page_info
from tests.library_data import CARRIED, COVERAGE, COVERAGE_UNTIMED, library_work_dir


@pytest.fixture(scope="module")
def library_dir(stock_model_work_dir: Path, tmp_path_factory: pytest.TempPathFactory
                ) -> tuple[Path, dict[str, int]]:
    dst = tmp_path_factory.mktemp("library") / "mlp"
    return dst, library_work_dir(stock_model_work_dir, dst)


def test_run_coverage_is_the_sidecar_line(library_dir, stock_model_work_dir: Path) -> None:
    work_dir, _ = library_dir
    assert msviz.open(work_dir).coverage == COVERAGE
    assert msviz.open(stock_model_work_dir).coverage is None  # no sidecar at all


def test_the_last_coverage_line_wins(library_dir, tmp_path: Path) -> None:
    work_dir = tmp_path / "wd"
    shutil.copytree(library_dir[0], work_dir)
    with SidecarWriter(work_dir) as writer:  # a resumed session computes it again
        writer.write("library_coverage", coverage=coverage_to_dict(COVERAGE_UNTIMED))
    assert msviz.open(work_dir).coverage == COVERAGE_UNTIMED
    with SidecarWriter(work_dir) as writer:  # the coverage's fields in the line itself
        writer.write("library_coverage", **coverage_to_dict(COVERAGE))
    assert msviz.open(work_dir).coverage == COVERAGE


def test_a_malformed_coverage_line_is_left_out_with_a_warning(library_dir, tmp_path: Path
                                                               ) -> None:
    work_dir = tmp_path / "wd"
    shutil.copytree(library_dir[0], work_dir)
    with SidecarWriter(work_dir) as writer:
        writer.write("library_coverage", coverage={"tasks": [{"name": "a", "match": "close"}]})
    run = msviz.open(work_dir)  # opening is not stopped by it
    with pytest.warns(MsvizWarning) as caught:
        assert run.coverage is None
    assert str(caught[0].message) == (
        f"{work_dir}: its library_coverage line is left out: coverage task 0 (a): match is "
        "'close', not one of exact, anchor, sibling, none")


def test_carried_trials_have_their_columns(library_dir) -> None:
    work_dir, lines = library_dir
    trials = msviz.open(work_dir).trials
    assert list(trials.columns) == trial_row.ALL_COLUMNS
    by_line = trials.set_index("line")
    for task, (carry, source, adjusted) in CARRIED.items():
        row = by_line.loc[lines[task]]
        assert row["task"] == task and row["origin"] == "library"
        assert (row["carry"], row["carried_from"]) == (carry, source)
        assert row["adjusted"] == ("#3, #7" if adjusted else "")
    others = trials[~trials["line"].isin(lines.values())]
    assert len(others) == len(trials) - 3 > 0
    for column in ("origin", "carry", "carried_from", "adjusted"):
        assert others[column].isna().all()


def test_trial_table_lists_the_library_columns(library_dir, stock_model_work_dir: Path
                                               ) -> None:
    work_dir, lines = library_dir
    page = trial_page_info(msviz.open(work_dir).trials, page_size=100)
    assert page.columns == ("trial", "task", "status", "latency_us", "gflops", "origin",
                            "carry", "carried_from", "adjusted", "error")
    rows = {r["trial"]: r for r in page.rows}
    trials = msviz.open(work_dir).trials
    sibling = int(trials.loc[trials["line"] == lines["matmul1"], "trial"].iloc[0])
    assert {k: rows[sibling][k] for k in ("origin", "carry", "carried_from", "adjusted")} == {
        "origin": "library", "carry": "sibling",
        "carried_from": "resnet18/fused_dense_add trial 7", "adjusted": "#3, #7"}
    # a work dir without a library: none of those columns
    plain = trial_page_info(msviz.open(stock_model_work_dir).trials)
    assert not {"origin", "carry", "carried_from", "adjusted"} & set(plain.columns)


def test_adjusted_is_text_in_every_frame(tmp_path: Path) -> None:
    frame = trial_row.trials_frame({"adjusted": [[3, 7], [], None, "#1"]})
    assert list(frame["adjusted"]) == ["#3, #7", "", None, "#1"]
    assert trial_row.adjusted_text([12]) == "#12" and trial_row.adjusted_text(None) is None
    with SidecarWriter(tmp_path) as writer:  # the merge of frames built elsewhere, too
        writer.trial(2, origin="library", carry="sibling", carried_from="r/t trial 1",
                     adjusted=[4])
    merged = merge_sidecar(pd.DataFrame({"line": [1, 2], "status": ["ok", "ok"],
                                         "error": [None, None]}), tmp_path)
    assert list(merged["adjusted"]) == [None, "#4"]
    assert list(merged["carry"]) == [None, "sibling"]
