"""Diffs of two schedules' text and of two traces."""

from __future__ import annotations

import re

import pandas as pd

from msviz.trace import (
    decision_sites,
    script_diff,
    side_by_side_html,
    trace_diff,
    with_decisions,
)
from msviz.trace.diff import TRACE_DIFF_COLUMNS


def _edited(gmm_best):
    tiles = [s for s in decision_sites(gmm_best) if s.kind == "SamplePerfectTile" and s.count > 1]
    site = tiles[0]
    new = next(c for c in site.choices if c != site.decision)
    return site, with_decisions(gmm_best, {site.index: new})


def test_script_diffs(gmm_best):
    _, edited = _edited(gmm_best)
    same = with_decisions(gmm_best)
    assert script_diff(gmm_best, same) == ""
    diff = script_diff(gmm_best, edited, names=("best", "edited"))
    assert diff.startswith("--- best\n+++ edited\n")
    assert any(ln.startswith("-    ") for ln in diff.splitlines())
    assert any(ln.startswith("+    ") for ln in diff.splitlines())
    html = side_by_side_html(gmm_best, edited, names=("best", "edited"))
    assert html.lstrip().startswith("<table") and "best" in html
    assert re.search("diff_(add|chg|sub)", html)
    page = side_by_side_html(gmm_best, edited, full_page=True, context=None)
    assert "<html" in page
    assert script_diff("a\nb\n", "a\nc\n") == "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    assert script_diff(gmm_best, edited, what="lowered") != ""


def test_trace_diff_shows_the_edited_decision(gmm_best):
    site, edited = _edited(gmm_best)
    table = trace_diff(gmm_best, edited)
    assert list(table.columns) == TRACE_DIFF_COLUMNS
    changed = table[table["status"] == "decision"]
    assert list(changed["index_a"]) == [site.index] == list(changed["index_b"])
    assert changed.iloc[0]["decision_b"] != changed.iloc[0]["decision_a"] == site.decision
    # the replayed postproc part may differ in length; everything before it lines up
    before = table[table["index_a"] < site.index]
    assert set(before["status"]) == {"same"}


def test_trace_diff_of_two_design_spaces(spaces):
    _, space_list = spaces["CBR"]
    table = trace_diff(space_list[0], space_list[1])
    # by hand from the two traces (rand_state 1): space 1 fuses relu into the conv's tile (one
    # reverse_compute_at more, after get_consumers); the unroll and PadInput's compute location
    # were sampled differently; all else is the same instruction
    def index(value: object) -> int | None:
        return None if value is pd.NA else int(value)

    assert [(r.status, index(r.index_a), index(r.index_b)) for r in table.itertuples()] == [
        *(("same", i, i) for i in range(22)), ("only_b", None, 22), ("same", 22, 23),
        ("same", 23, 24), ("decision", 24, 25), ("same", 25, 26), ("decision", 26, 27),
        ("same", 27, 28)]
    python_b = space_list[1].trace.as_python()
    assert python_b[22].startswith("sch.reverse_compute_at(block=b55,")
    a_rows = table["index_a"].dropna().astype(int).tolist()
    assert a_rows == list(range(len(space_list[0].trace.insts)))
    b_rows = table["index_b"].dropna().astype(int).tolist()
    assert b_rows == list(range(len(space_list[1].trace.insts)))
