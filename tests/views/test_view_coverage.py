"""The library coverage view: the whole info against a hand-written one (with and without
untuned times), its figure and HTML, the coverage's dict round trip and malformed input, and
where a trial carried from the library came from."""

from __future__ import annotations

import json
import math
import re
import time

import pandas as pd
import pytest

from msviz.engine.events import Event
from msviz.errors import MsvizWarning
from msviz.records.coverage_types import (
    MATCHES,
    Coverage,
    TaskCoverage,
    coverage_from_dict,
    coverage_to_dict,
)
from msviz.views.coverage import (
    MATCH_COLORS,
    CoverageInfo,
    CoverageRow,
    carried_text,
    coverage_figure,
    coverage_html,
    coverage_info,
    coverage_of_events,
    library_trials,
    library_trials_text,
)
from tests.library_data import COVERAGE, COVERAGE_UNTIMED

PROBLEM = "old_run: database_tuning_record.json line 3 cannot be read"


def test_coverage_info_with_untuned_times(same) -> None:
    expected = CoverageInfo(
        model="mlp", target="llvm -keys=cpu", library=("mlp_v1", "resnet18"),
        rows=(
            CoverageRow(0, "fused_matmul3_add1", 1, "exact", 2.5, "mlp_v1/fused_matmul3_add1",
                        10.0, 10.0 / 120.0),
            CoverageRow(1, "fused_matmul2_add_relu", 2, "anchor", 4.0,
                        "mlp_v1/fused_matmul2_add", 20.0, 40.0 / 120.0),
            CoverageRow(2, "matmul1", 1, "sibling", None, "resnet18/fused_dense_add", 30.0,
                        30.0 / 120.0),
            CoverageRow(3, "matmul", 1, "none", None, None, 40.0, 40.0 / 120.0),
        ),
        counts=(("exact", 1), ("anchor", 1), ("sibling", 1), ("none", 1)),
        library_us=80.5, untuned_us=120.0, covered_share=50.0 / 120.0,
        summary="library covers 1 of 4 tasks exactly, 1 by anchor block, 1 sibling, 1 none; "
                "42% of the untuned latency; estimated 80.5 µs from the library alone against "
                "120 µs untuned",
        problems=(PROBLEM,))
    assert same(coverage_info(COVERAGE), expected)
    # the tasks in any order: the rows in task order
    shuffled = COVERAGE._replace(tasks=tuple(reversed(COVERAGE.tasks)))
    assert same(coverage_info(shuffled), expected)


def test_coverage_info_without_untuned_times(same) -> None:
    expected = CoverageInfo(
        model="mlp", target="llvm -keys=cpu", library=("mlp_v1", "resnet18"),
        rows=(
            CoverageRow(0, "fused_matmul3_add1", 1, "exact", 2.5, "mlp_v1/fused_matmul3_add1",
                        None, None),
            CoverageRow(1, "fused_matmul2_add_relu", 2, "anchor", 4.0,
                        "mlp_v1/fused_matmul2_add", None, None),
            CoverageRow(2, "matmul1", 1, "sibling", None, "resnet18/fused_dense_add", None,
                        None),
            CoverageRow(3, "matmul", 1, "none", None, None, None, None),
        ),
        counts=(("exact", 1), ("anchor", 1), ("sibling", 1), ("none", 1)),
        library_us=None, untuned_us=None, covered_share=None,
        summary="library covers 1 of 4 tasks exactly, 1 by anchor block, 1 sibling, 1 none; "
                "untuned times not measured: no estimate of the model",
        problems=())
    assert same(coverage_info(COVERAGE_UNTIMED), expected)


def _model(counts: dict[str, int]) -> tuple[TaskCoverage, ...]:
    kinds = [m for m in MATCHES for _ in range(counts[m])]
    return tuple(TaskCoverage(i, f"t{i}", 1, "conv2d", m, None, None, None, 0, 200.0)
                 for i, m in enumerate(kinds))


def test_summary_of_a_large_model() -> None:
    tasks = _model({"exact": 12, "anchor": 3, "sibling": 4, "none": 2})
    cov = Coverage("resnet50", "llvm", ("a",), tasks, 612.4, 4210.3, 0.71)
    info = coverage_info(cov)
    assert info.summary == (
        "library covers 12 of 21 tasks exactly, 3 by anchor block, 4 siblings, 2 none; 71% of "
        "the untuned latency; estimated 612 µs from the library alone against 4,210 µs "
        "untuned")
    assert info.counts == (("exact", 12), ("anchor", 3), ("sibling", 4), ("none", 2))


def test_empty_coverage_warns_and_draws_a_note(same) -> None:
    cov = Coverage("mlp", "llvm", (), (), None, None, None)
    with pytest.warns(MsvizWarning, match="lists no task"):
        info = coverage_info(cov)
    assert same(info, CoverageInfo(
        "mlp", "llvm", (), (), (("exact", 0), ("anchor", 0), ("sibling", 0), ("none", 0)),
        None, None, None, "library covers 0 of 0 tasks exactly, 0 by anchor block, 0 "
        "siblings, 0 none; untuned times not measured: no estimate of the model", ()))
    fig = coverage_figure(info)
    assert fig.data == () and fig.layout.title.text == "Library coverage"
    assert fig.layout.annotations[0].text == "the library coverage lists no task"
    assert coverage_figure(None).layout.annotations[0].text.startswith("no library coverage")
    assert coverage_html(None) == ""


def test_figure_bars_per_task_coloured_by_match() -> None:
    fig = coverage_figure(coverage_info(COVERAGE))
    assert fig.layout.title.text == "Library coverage"
    assert [t.name for t in fig.data] == list(MATCHES)
    by_match = {t.name: t for t in fig.data}
    expected = {"exact": ("fused_matmul3_add1", 10.0), "anchor": ("fused_matmul2_add_relu", 40.0),
                "sibling": ("matmul1", 30.0), "none": ("matmul", 40.0)}
    for match, (name, width) in expected.items():
        bar = by_match[match]
        assert bar.orientation == "h" and list(bar.y) == [name] and list(bar.x) == [width]
        assert bar.marker.color == MATCH_COLORS[match]
    assert list(fig.layout.yaxis.categoryarray) == [t.name for t in COVERAGE.tasks]
    assert fig.layout.xaxis.title.text == "weight x untuned latency (µs)"
    # a task without an untuned time is left out, and the note says so
    partial = COVERAGE._replace(tasks=(*COVERAGE.tasks[:3],
                                       COVERAGE.tasks[3]._replace(untuned_us=None)))
    fig = coverage_figure(coverage_info(partial))
    assert [t.name for t in fig.data] == ["exact", "anchor", "sibling"]
    assert "(1 task without an untuned time)" in fig.layout.annotations[0].text


def test_figure_counts_matches_without_untuned_times() -> None:
    fig = coverage_figure(coverage_info(COVERAGE_UNTIMED))
    (bar,) = fig.data
    assert list(bar.x) == list(MATCHES) and list(bar.y) == [1, 1, 1, 1]
    assert list(bar.marker.color) == [MATCH_COLORS[m] for m in MATCHES]
    assert fig.layout.annotations[0].text.startswith("untuned times not measured")
    assert fig.layout.xaxis.visible is not False  # a chart, not a note


def test_html_has_summary_table_and_problems() -> None:
    text = coverage_html(coverage_info(COVERAGE))
    assert "library covers 1 of 4 tasks exactly" in text
    assert "from 2 runs: mlp_v1, resnet18" in text
    assert text.count("msviz-library-row") == 4
    assert ("<td>1</td><td>fused_matmul2_add_relu</td><td>2</td><td style='color:#1f77b4;"
            "font-weight:600'>anchor</td><td>4</td><td>mlp_v1/fused_matmul2_add</td>"
            "<td>20</td><td>33%</td>") in text
    assert "msviz-library-problems" in text and PROBLEM in text
    assert "msviz-library-problems" not in coverage_html(coverage_info(COVERAGE_UNTIMED))


def test_dict_round_trip_through_json() -> None:
    for cov in (COVERAGE, COVERAGE_UNTIMED):
        data = coverage_to_dict(cov)
        assert json.loads(json.dumps(data, allow_nan=False)) == data
        assert coverage_from_dict(json.loads(json.dumps(data))) == cov
    data = coverage_to_dict(COVERAGE)
    assert data["library"] == ["mlp_v1", "resnet18"] and data["problems"] == [PROBLEM]
    assert data["tasks"][2] == {
        "index": 2, "name": "matmul1", "weight": 1, "op": "matmul", "match": "sibling",
        "best_us": None, "source": "resnet18/fused_dense_add", "source_target": None,
        "siblings": 4, "untuned_us": 30.0}
    nan = COVERAGE._replace(library_us=math.nan)
    assert coverage_to_dict(nan)["library_us"] is None  # JSON has no NaN


def test_from_dict_fills_in_what_is_missing() -> None:
    assert coverage_from_dict({}) == Coverage("", "", (), (), None, None, None, ())
    cov = coverage_from_dict({"model": "m", "tasks": [{}, {"name": "x", "match": "exact",
                                                          "index": 5, "future": 1}],
                              "version": 2})
    assert cov.tasks == (TaskCoverage(0, "task 0", 1, None, "none", None, None, None, 0, None),
                         TaskCoverage(5, "x", 1, None, "exact", None, None, None, 0, None))


@pytest.mark.parametrize(("data", "message"), [
    ([1, 2], "a coverage is a dict, not list"),
    ({"tasks": "abc"}, "coverage tasks is 'abc', not a list of dicts"),
    ({"tasks": [5]}, "coverage task 0 is 5, not a dict"),
    ({"tasks": [{"name": "a", "match": "close"}]},
     "coverage task 0 (a): match is 'close', not one of exact, anchor, sibling, none"),
    ({"tasks": [{"name": "a", "best_us": "fast"}]},
     "coverage task 0 (a): best_us is 'fast', not a number"),
    ({"tasks": [{}, {"name": "b", "weight": 1.5}]},
     "coverage task 1 (b): weight is 1.5, not a whole number"),
    ({"tasks": [{"name": 3}]}, "coverage task 0: name is 3, not text"),
    ({"covered_share": 1.5}, "coverage covered_share is 1.5, not a share (0..1)"),
    ({"untuned_us": True}, "coverage untuned_us is True, not a number"),
    ({"library": "mlp_v1"}, "coverage library is 'mlp_v1', not a list of text"),
    ({"library": ["a", 3]}, "coverage library[1] is 3, not text"),
])
def test_from_dict_names_what_is_malformed(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        coverage_from_dict(data)  # type: ignore[arg-type]


def test_coverage_of_events_is_the_last_one() -> None:
    now = time.time()
    first = COVERAGE_UNTIMED
    events = [Event(0, "started", now, "mlp", {"model": "mlp"}),
              Event(1, "library_coverage", now, "mlp", {"coverage": coverage_to_dict(first)}),
              Event(2, "tasks", now, "mlp", {"tasks": []}),
              Event(3, "library_coverage", now, "mlp", {"coverage": coverage_to_dict(COVERAGE)})]
    assert coverage_of_events(events) == COVERAGE
    assert coverage_of_events(events[:3]) == first
    assert coverage_of_events(events[:1]) is None
    plain = [{"kind": e.kind, "data": e.data} for e in events[:2]]  # dicts, as in the tests
    assert coverage_of_events(plain) == first
    bad = Event(4, "library_coverage", now, "mlp", {"coverage": {"tasks": [{"match": "?"}]}})
    with pytest.raises(ValueError, match="match is '\\?'"):
        coverage_of_events([*events, bad])


def test_carried_text() -> None:
    assert carried_text(None, None) == ""
    assert carried_text("mlp_v1/dense trial 12", "exact", "") == (
        "from the library: mlp_v1/dense trial 12")
    assert carried_text("mlp_v1/dense trial 4", "anchor", []) == (
        "from the library: mlp_v1/dense trial 4")
    assert carried_text("resnet18/fused_conv2d_add_relu trial 12", "sibling", "#3, #7") == (
        "carried from resnet18/fused_conv2d_add_relu trial 12, decisions #3 and #7 adjusted")
    assert carried_text("r/t trial 1", "sibling", [3, 5, 7]) == (
        "carried from r/t trial 1, decisions #3, #5 and #7 adjusted")
    assert carried_text("r/t trial 1", "sibling", [2]) == (
        "carried from r/t trial 1, decision #2 adjusted")
    assert carried_text("r/t trial 1", "sibling", "") == "carried from r/t trial 1"
    assert carried_text(None, "sibling") == "carried from the library"


def test_library_trials_counted_by_carry() -> None:
    trials = pd.DataFrame({
        "trial": [0, 1, 2, 3, 4], "task": ["a", "b", "c", "a", "c"],
        "status": ["ok"] * 5, "latency_us": [1.0, 2.0, 3.0, 4.0, 5.0],
        "origin": ["library", "library", "library", "mutated", "library"],
        "carried_from": ["r/a trial 1", "r/b trial 2", "s/c trial 3", None, "s/c trial 9"],
        "carry": ["exact", "anchor", "sibling", None, "sibling"],
        "adjusted": ["", "", "#3, #7", None, ""]})
    carried = library_trials(trials)
    assert list(carried["trial"]) == [0, 1, 2, 4]
    assert list(carried["from"]) == [
        "from the library: r/a trial 1", "from the library: r/b trial 2",
        "carried from s/c trial 3, decisions #3 and #7 adjusted", "carried from s/c trial 9"]
    assert library_trials_text(trials) == (
        "4 trials from the library: 1 exact, 1 anchor, 2 sibling")
    assert library_trials_text(trials.drop(columns="origin")) == "no trial from the library yet"
    assert library_trials_text(trials[trials["origin"] != "library"]) == (
        "no trial from the library yet")
