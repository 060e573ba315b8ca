"""The Time view's info, computed by hand for a small profile; the figures and the table."""

from __future__ import annotations

import pandas as pd
import pandas.testing as pdt
import pytest

from msviz.errors import MsvizWarning
from msviz.records.profile import profile_frame
from msviz.views.profile import (
    ProfileInfo,
    profile_batches_figure,
    profile_info,
    profile_table_text,
    profile_tasks_figure,
    profile_totals_figure,
)

ROWS = [
    {"task": "m", "batch": None, "stages": {"InitializeTask": 4.0, "other": 1.0}},
    {"task": "A", "batch": 0, "stages": {"EvoSearch/Evolve/Mutation": 2.0, "SendToBuilder": 3.0,
                                         "SendToRunner": 1.0}},
    {"task": "B", "batch": 1, "stages": {"SendToBuilder": 2.0, "msviz/Paused": 6.0}},
    {"task": "A", "batch": 2, "stages": {"SendToBuilder": 1.0}},
    {"task": "m", "batch": None, "stages": {"msviz/EndToEndCheck": 5.0}},
]


def test_profile_info_by_hand() -> None:
    info = profile_info(profile_frame(ROWS))
    stages = ("InitializeTask", "EvoSearch/Evolve/Mutation", "SendToBuilder", "SendToRunner",
              "msviz/Paused", "msviz/EndToEndCheck", "other")  # a batch's order, other last
    assert info.source == "msviz"
    assert info.stages == stages
    assert info.wall == 25.0
    expected_rows = pd.DataFrame({
        "label": ["setup", "A #0", "B #1", "A #2", "end-to-end check"],
        "task": ["m", "A", "B", "A", "m"],
        "batch": pd.array([None, 0, 1, 2, None], dtype="Int64"),
        "wall": [5.0, 6.0, 8.0, 1.0, 5.0],
        "InitializeTask": [4.0, 0, 0, 0, 0], "EvoSearch/Evolve/Mutation": [0, 2.0, 0, 0, 0],
        "SendToBuilder": [0, 3.0, 2.0, 1.0, 0], "SendToRunner": [0, 1.0, 0, 0, 0],
        "msviz/Paused": [0, 0, 6.0, 0, 0], "msviz/EndToEndCheck": [0, 0, 0, 0, 5.0],
        "other": [1.0, 0, 0, 0, 0],
    })
    pdt.assert_frame_equal(info.rows, expected_rows, check_dtype=False, check_names=False)
    expected_totals = pd.DataFrame({
        "stage": ["SendToBuilder", "msviz/Paused", "msviz/EndToEndCheck", "InitializeTask",
                  "EvoSearch/Evolve/Mutation", "SendToRunner", "other"],
        "seconds": [6.0, 6.0, 5.0, 4.0, 2.0, 1.0, 1.0],
    })
    expected_totals["share"] = expected_totals["seconds"] / 25.0
    pdt.assert_frame_equal(info.totals, expected_totals)
    expected_tasks = pd.DataFrame({"task": ["A", "B"], "seconds": [7.0, 8.0]})
    expected_tasks["share"] = expected_tasks["seconds"] / 25.0
    pdt.assert_frame_equal(info.tasks, expected_tasks)


def test_profile_table_and_figures() -> None:
    info = profile_info(profile_frame(ROWS))
    lines = profile_table_text(info).splitlines()
    assert lines[0].split("|")[1].strip() == "Name"
    assert lines[2].split() == ["|", "Total", "|", "0.4167", "|", "100.0000"]
    assert lines[3].split() == ["0", "|", "SendToBuilder", "|", "0.1000", "|", "24.0000"]
    batches = profile_batches_figure(info)
    assert [t.name for t in batches.data] == list(info.stages)  # one stacked bar per stage
    assert batches.layout.barmode == "stack"
    assert list(batches.data[2].y) == [0, 3.0, 2.0, 1.0, 0]  # SendToBuilder per row
    totals = profile_totals_figure(info)
    assert list(totals.data[0].y) == list(info.totals["stage"])[::-1]
    assert list(totals.data[0].text)[-1] == "24.0%"
    assert list(profile_tasks_figure(info).data[0].y) == ["A", "B"]


def _empty(*columns: str) -> pd.DataFrame:
    return pd.DataFrame({c: [] for c in columns})


#: The whole info of an empty profile, by hand: no stage, no row, no total, no task, 0 s.
EMPTY = ProfileInfo("none", (), _empty("label", "task", "batch", "wall"),
                    _empty("stage", "seconds", "share"), _empty("task", "seconds", "share"), 0.0)


def _same_profile_info(info: ProfileInfo, expected: ProfileInfo) -> None:
    """Every field of ``info`` equal to ``expected``'s (the frames by their columns and values:
    an empty frame's dtypes say nothing)."""
    assert type(info) is ProfileInfo and info._fields == expected._fields
    for field, got, want in zip(expected._fields, info, expected, strict=True):
        if isinstance(want, pd.DataFrame):
            pdt.assert_frame_equal(got, want, check_dtype=False, check_index_type=False,
                                   obj=field)
        else:
            assert (field, got) == (field, want)


@pytest.mark.parametrize("profile", [[], None], ids=["no rows", "none"])
def test_empty_profile_warns_and_draws_a_note(profile: list | None) -> None:
    with pytest.warns(MsvizWarning) as caught:
        info = profile_info(None if profile is None else profile_frame(profile))
    assert [str(w.message) for w in caught] == ["no profile yet: nothing to show"]
    _same_profile_info(info, EMPTY)
    for fig, note in ((profile_batches_figure(info), "no profile yet"),
                      (profile_totals_figure(info), "no profile yet"),
                      (profile_tasks_figure(info), "no batch yet")):
        assert [a.text for a in fig.layout.annotations] == [note], fig.layout.title.text
        assert [len(t.x) for t in fig.data if t.x is not None] in ([], [0])
    assert profile_totals_figure(info).layout.title.text == "Where the time went: 0.0 s in all"
    assert profile_table_text(info).splitlines()[2].split() == [
        "|", "Total", "|", "0.0000", "|", "100.0000"]
    assert len(profile_table_text(info).splitlines()) == 3  # the header, the rule, the total


def test_many_batches_share_bars(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above MOST_BARS rows, consecutive batches are summed into one bar (k a bar)."""
    import msviz.views.profile as P

    monkeypatch.setattr(P, "MOST_BARS", 2)  # 5 rows, at most 2 bars: 3 rows a bar
    fig = profile_batches_figure(profile_info(profile_frame(ROWS)))
    assert fig.layout.title.text == "Seconds per 3 batches, by stage"
    assert fig.layout.xaxis.title.text == "batch of the run (3 a bar)"
    by_stage = {t.name: list(t.y) for t in fig.data}
    assert list(fig.data[0].customdata) == ["setup … B #1", "A #2 … end-to-end check"]
    assert by_stage["SendToBuilder"] == [5.0, 1.0]  # 0 + 3 + 2, then 1 + 0
    assert by_stage["msviz/EndToEndCheck"] == [0.0, 5.0]  # in the second bar
    assert list(fig.layout.xaxis.ticktext) == ["#0", "#3"]
    # every stage had some time here: none left out
    assert list(by_stage) == list(profile_info(profile_frame(ROWS)).stages)


def test_binned_bars_leave_out_stages_without_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import msviz.views.profile as P

    monkeypatch.setattr(P, "MOST_BARS", 2)
    rows = [*ROWS[:-1], {"task": "A", "batch": 3, "stages": {"msviz/Commands": 0.0,
                                                             "SendToBuilder": 1.0}}]
    info = profile_info(profile_frame(rows))
    assert "msviz/Commands" in info.stages
    names = [t.name for t in profile_batches_figure(info).data]
    assert "msviz/Commands" not in names and "SendToBuilder" in names
