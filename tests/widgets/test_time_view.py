"""The Time tab draws the profile's figures and MetaSchedule's table; live in a dashboard."""

from __future__ import annotations

import itertools

import pytest

from msviz.records.profile import profile_frame
from msviz.views.profile import profile_batches_figure, profile_info, profile_totals_figure
from msviz.widgets.time_view import TimeView

ROWS = [
    {"task": "m", "batch": None, "stages": {"InitializeTask": 4.0, "other": 1.0}},
    {"task": "A", "batch": 0, "stages": {"SendToBuilder": 3.0, "SendToRunner": 1.0}},
    {"task": "B", "batch": 1, "stages": {"SendToBuilder": 2.0}},
]


def test_time_view_draws_the_info() -> None:
    frame = profile_frame(ROWS)
    view = TimeView(frame)
    info = profile_info(frame)
    assert view.error.text == ""
    batches = profile_batches_figure(info)
    assert [(t.name, list(t.y)) for t in view.batches.data] == [
        (t.name, list(t.y)) for t in batches.data]
    # by hand: three bars (setting up, batch 0 of A, batch 1 of B), a stacked trace per stage
    assert [(t.name, list(t.x), [float(v) for v in t.y]) for t in view.batches.data] == [
        ("InitializeTask", [0, 1, 2], [4.0, 0.0, 0.0]),
        ("SendToBuilder", [0, 1, 2], [0.0, 3.0, 2.0]),
        ("SendToRunner", [0, 1, 2], [0.0, 1.0, 0.0]),
        ("other", [0, 1, 2], [1.0, 0.0, 0.0]),
    ]
    # totals by stage, the biggest on top (plotly draws the last bar at the top; ties keep
    # the stage order)
    assert [float(v) for v in view.totals.data[0].x] == [1.0, 1.0, 4.0, 5.0]
    assert list(view.totals.data[0].y) == ["other", "SendToRunner", "InitializeTask",
                                           "SendToBuilder"]
    assert [float(v) for v in view.tasks.data[0].x] == [2.0, 4.0]
    assert list(view.totals.data[0].x) == list(profile_totals_figure(info).data[0].x)
    assert list(view.tasks.data[0].y) == ["B", "A"]  # B 2 s, A 4 s: the biggest on top
    assert view.tasks_box.layout.display == "flex"  # two tasks: the per-task plot shows
    html = view.table.value
    for stage in ("InitializeTask", "SendToBuilder", "SendToRunner", "other"):
        assert f"<td>{stage}</td>" in html
    assert "<td>0.1833</td><td>11.00</td><td>100%</td>" in html  # Total: 11 s = 0.1833 min

    one = TimeView(profile_frame(ROWS[:2]))  # one task: no per-task plot
    assert one.tasks_box.layout.display == "none"


def test_time_tab_follows_a_session(tuned_session) -> None:
    from msviz.widgets import Dashboard

    dash = Dashboard(tuned_session)
    dash.tabs.selected_index = dash.tabs.titles.index("Time")
    info = dash.time_view.info
    assert info is not None and info.source == "msviz"
    assert info.wall == tuned_session.profile["seconds"].sum()
    # one bar per run of consecutive lines of the same (task, batch), counted here; 16 trials
    # in batches of 8 are batches 0 and 1
    profile = tuned_session.profile
    keys = list(zip(profile["task"].astype(str), profile["batch"].astype(object).fillna(-1),
                    strict=True))
    runs = 1 + sum(a != b for a, b in itertools.pairwise(keys))
    assert {int(b) for b in profile["batch"].dropna()} == {0, 1}
    stages = sorted(set(profile["stage"]))
    traces = dash.time_view.batches.data
    assert sorted(t.name for t in traces) == stages
    assert [len(t.y) for t in traces] == [runs] * len(stages)
    for t in traces:  # each stage's bars add up to its seconds in the profile
        assert sum(t.y) == pytest.approx(profile.loc[profile["stage"] == t.name, "seconds"].sum())
