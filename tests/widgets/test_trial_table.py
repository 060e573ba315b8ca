"""TrialTable: paging, sorting, filtering and selection, on real trials."""

from __future__ import annotations

import pandas as pd

from msviz.widgets import Selection, TrialTable


def test_sort_filter_page(stock_run) -> None:
    table = TrialTable(stock_run.trials, page_size=5)
    assert table.total == len(stock_run.trials) == 12 and table.pages == 3 and len(table.rows) == 5
    assert {"build_timeout", "ok"} <= set(table.options["status"])
    assert [r["trial"] for r in table.rows] == [0, 1, 2, 3, 4]
    table.sort_by = "latency_us"
    ok = stock_run.trials.dropna(subset=["latency_us"]).sort_values("latency_us")
    assert [r["trial"] for r in table.rows] == list(ok["trial"][:5])
    table.ascending = False
    assert table.rows[0]["trial"] == int(ok["trial"].iloc[-1])
    table.filters = {"status": "build_timeout"}
    timeouts = int((stock_run.trials["status"] == "build_timeout").sum())
    assert table.total == timeouts >= 4 and table.pages == 1 and table.page == 0
    assert all("LocalBuilder: Timeout" in r["error"] for r in table.rows)
    table.page = 7  # past the end: clamped
    assert table.page == 0


def test_bad_filter_shows_error_and_keeps_rows(stock_run) -> None:
    table = TrialTable(stock_run.trials)
    rows = list(table.rows)
    table.filters = {"nope": 1}
    assert table.error.startswith("[TrialTable] cannot filter by 'nope'")
    assert table.rows == rows


def test_ten_thousand_rows_sync_one_page(stock_run) -> None:
    big = pd.concat([stock_run.trials] * 834, ignore_index=True)
    big["trial"] = range(len(big))
    table = TrialTable(big, page_size=50)
    assert table.total == len(big) > 10_000
    assert len(table.rows) == 50 and table.pages == -(-len(big) // 50)
    table.page = table.pages - 1
    assert table.rows[-1]["trial"] == len(big) - 1


def test_selection_is_linked(stock_run) -> None:
    import traitlets

    table, selection = TrialTable(stock_run.trials), Selection()
    traitlets.link((table, "selected"), (selection, "trial"))
    table.selected = 5  # a click in the page sets this trait
    assert selection.trial == 5
    selection.trial = 2
    assert table.selected == 2
