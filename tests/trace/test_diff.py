"""Diffs of two schedules' text and of two traces."""

from __future__ import annotations

import re

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
    assert {"same", "only_a", "only_b", "changed", "decision"} & set(table["status"]) - {"same"}
    a_rows = table["index_a"].dropna().astype(int).tolist()
    assert a_rows == list(range(len(space_list[0].trace.insts)))
    b_rows = table["index_b"].dropna().astype(int).tolist()
    assert b_rows == list(range(len(space_list[1].trace.insts)))
