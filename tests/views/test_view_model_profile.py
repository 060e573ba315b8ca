"""The model profile view's info, figure, HTML and text, compared whole against hand-written
expectations; a profile of two draws (fresh processes), where a task slower in place in one
draw only is ``disputed``, not ``flagged``."""

from __future__ import annotations

import pandas as pd
import pytest

from msviz.records.model_profile import MODEL_PROFILE_COLUMNS, model_profile_frame
from msviz.views.model_profile import (
    DISPUTED_COLOR,
    FLAGGED_COLOR,
    IN_MODEL_COLOR,
    ModelProfileInfo,
    ProfiledTask,
    model_profile_figure,
    model_profile_html,
    model_profile_info,
    model_profile_text,
)

#: A model of four tasks timed in two draws: mm 1.2x its tuned time in one draw and 1.8x in the
#: other (disputed at 1.5), dense called twice and 3x slower in place in both (flagged), relu
#: untuned, add as tuned.
DATA = {
    "rows": [
        {"task": "mm", "calls": 1, "in_model_us": 12.0, "in_model_draws_us": [12.0, 18.0],
         "tuned_us": 10.0, "ratio": 1.2, "fallback": False},
        {"task": "dense", "calls": 2, "in_model_us": 6.0, "in_model_draws_us": [7.5, 6.0],
         "tuned_us": 2.0, "ratio": 3.0, "fallback": False},
        {"task": "relu", "calls": 1, "in_model_us": 4.0, "in_model_draws_us": [4.0, 5.0],
         "tuned_us": None, "ratio": None, "fallback": True},
        {"task": "add", "calls": 1, "in_model_us": 1.0, "in_model_draws_us": [1.0, 1.0],
         "tuned_us": 1.0, "ratio": 1.0, "fallback": False},
    ],
    "other": [{"call": "vm.builtin.alloc_tensor", "calls": 3.0, "us_per_run": 1.5},
              {"call": "vm.builtin.match_shape", "calls": 1.0, "us_per_run": 0.5}],
    "hook_us": 0.25, "runs": 10, "draws": 2, "error": None,
}

EXPECTED = ModelProfileInfo(
    tasks=(ProfiledTask("mm", 1, 12.0, 18.0, 1.5, 10.0, 1.2, False, False, True),
           ProfiledTask("dense", 2, 6.0, 7.5, 1.25, 2.0, 3.0, False, True, False),
           ProfiledTask("relu", 1, 4.0, 5.0, 1.25, None, None, True, False, False),
           ProfiledTask("add", 1, 1.0, 1.0, 1.0, 1.0, 1.0, False, False, False)),
    threshold=1.5, flagged=("dense",), disputed=("mm",), fallback=("relu",),
    tasks_us=12.0 + 2 * 6.0 + 4.0 + 1.0, other_us=2.0, hook_us=0.25, runs=10, draws=2,
    spread=1.5)


def test_frame_of_two_draws() -> None:
    frame = model_profile_frame(DATA)
    expected = pd.DataFrame({
        "task": pd.Series(["mm", "dense", "relu", "add"], dtype="string"),
        "calls": pd.Series([1, 2, 1, 1], dtype="int64"),
        "in_model_us": [12.0, 6.0, 4.0, 1.0],
        "in_model_max_us": [18.0, 7.5, 5.0, 1.0],
        "spread": [1.5, 1.25, 1.25, 1.0],
        "tuned_us": [10.0, 2.0, float("nan"), 1.0],
        "ratio": [1.2, 3.0, float("nan"), 1.0],
        "fallback": [False, False, True, False],
        "flagged": [False, True, False, False],
        "disputed": [True, False, False, False],
    })
    assert list(frame.columns) == MODEL_PROFILE_COLUMNS
    pd.testing.assert_frame_equal(frame, expected)
    assert (frame.attrs["draws"], frame.attrs["runs"], frame.attrs["hook_us"],
            frame.attrs["threshold"]) == (2, 10, 0.25, 1.5)


def test_info_from_frame_and_event_data() -> None:
    assert model_profile_info(model_profile_frame(DATA)) == EXPECTED
    assert model_profile_info(DATA) == EXPECTED  # a model_profile event's data
    # data without ``draws`` (an older Tasks tab kept only these four): the rows' draws count
    bare = {k: DATA[k] for k in ("rows", "other", "hook_us", "runs")}
    assert model_profile_info(bare) == EXPECTED


def test_threshold_moves_the_flags() -> None:
    low = model_profile_info(model_profile_frame(DATA), threshold=1.1)
    assert low == EXPECTED._replace(
        tasks=tuple(t._replace(flagged=t.task in ("mm", "dense"), disputed=False)
                    for t in EXPECTED.tasks),
        threshold=1.1, flagged=("mm", "dense"), disputed=())
    # at 3.5 dense is slower than that in one draw (7.5 / 2) but not in the other (6 / 2)
    high = model_profile_info(DATA, threshold=3.5)
    assert (high.flagged, high.disputed) == ((), ("dense",))
    assert model_profile_info(DATA, threshold=5.0)[2:4] == ((), ())


def test_a_profile_recorded_before_draws_reads_as_one() -> None:
    old = {"rows": [{"task": "mm", "calls": 1, "in_model_us": 12.0, "tuned_us": 10.0,
                     "ratio": 1.2, "fallback": False},
                    {"task": "dense", "calls": 2, "in_model_us": 6.0, "tuned_us": 2.0,
                     "ratio": 3.0, "fallback": False}],
           "other": [], "hook_us": 0.25, "runs": 10, "error": None}
    assert model_profile_info(old) == ModelProfileInfo(
        tasks=(ProfiledTask("mm", 1, 12.0, 12.0, 1.0, 10.0, 1.2, False, False, False),
               ProfiledTask("dense", 2, 6.0, 6.0, 1.0, 2.0, 3.0, False, True, False)),
        threshold=1.5, flagged=("dense",), disputed=(), fallback=(), tasks_us=24.0,
        other_us=0.0, hook_us=0.25, runs=10, draws=1, spread=1.0)


def test_a_call_no_faster_than_the_hook_has_no_spread() -> None:
    """A call whose least draw is 0 once the hook's cost is taken off: its spread is unknown
    (not infinite), its error bar still reaches the slowest draw."""
    data = {"rows": [{"task": "tiny", "calls": 1, "in_model_us": 0.0,
                      "in_model_draws_us": [0.5, 0.0], "tuned_us": 0.2, "ratio": 0.0,
                      "fallback": False}],
            "other": [], "hook_us": 0.5, "runs": 10, "draws": 2}
    info = model_profile_info(data)
    assert info == ModelProfileInfo(
        tasks=(ProfiledTask("tiny", 1, 0.0, 0.5, None, 0.2, 0.0, False, False, True),),
        threshold=1.5, flagged=(), disputed=("tiny",), fallback=(), tasks_us=0.0,
        other_us=0.0, hook_us=0.5, runs=10, draws=2, spread=None)
    in_model = model_profile_figure(info).data[1]
    assert list(in_model.error_x.array) == [0.5] and list(in_model.customdata) == ["-"]


def test_figure_pairs_tuned_and_in_model_bars() -> None:
    fig = model_profile_figure(EXPECTED)
    tuned, in_model = fig.data
    assert list(tuned.y) == list(in_model.y) == ["mm", "dense", "relu (untuned)", "add"]
    assert list(tuned.x) == [10.0, 2.0, None, 1.0] and list(in_model.x) == [12.0, 6.0, 4.0, 1.0]
    assert list(in_model.marker.color) == [DISPUTED_COLOR, FLAGGED_COLOR, IN_MODEL_COLOR,
                                           IN_MODEL_COLOR]
    # the error bar reaches the slowest draw
    assert in_model.error_x.visible and list(in_model.error_x.array) == [6.0, 1.5, 1.0, 0.0]
    assert list(in_model.text) == ["1.20x", "3.00x", "-", "1.00x"]
    assert list(in_model.customdata) == ["1.50x", "1.25x", "1.25x", "1.00x"]
    assert in_model.name == ("in the model (red: over 1.5x tuned in every draw, amber: in some; "
                             "least of 2 draws)")
    assert fig.layout.title.text == "Kernels in the model vs in tuning"
    assert fig.layout.xaxis.range == (0, pytest.approx(1.15 * 18.0))  # room for the ratios


def test_empty_profile_draws_a_note() -> None:
    info = model_profile_info({"rows": [], "other": [], "hook_us": None, "runs": 3})
    assert info == ModelProfileInfo((), 1.5, (), (), (), 0, 0.0, None, 3, 1, None)
    fig = model_profile_figure(info)
    assert not fig.data and fig.layout.annotations[0].text == "no model profile"


def test_html_and_text() -> None:
    page = model_profile_html(EXPECTED)
    assert page.count("msviz-profile-row") == 4
    assert page.count("msviz-flagged") == 1 and page.count("msviz-fallback") == 1
    assert page.count("msviz-disputed") == 1
    assert "untuned (fallback)" in page and "loses in place" in page
    assert "loses in some draws" in page and "<th>Spread</th>" in page
    assert model_profile_html(None) == ""
    assert model_profile_text(EXPECTED).splitlines() == [
        " task  calls in_model_us spread tuned_us ratio fallback  flagged",
        "   mm      1      12.000  1.50x   10.000 1.20x          disputed",
        "dense      2       6.000  1.25x    2.000 3.00x           FLAGGED",
        " relu      1       4.000  1.25x        -     - fallback         ",
        "  add      1       1.000  1.00x    1.000 1.00x                  ",
        "1 of 4 tasks over 1.5x their tuned latency in every draw; in some draws only: mm; "
        "untuned (no record): relu; tasks 29.000 µs and other calls 2.000 µs per run (median "
        "per call over 10 runs in each of 2 fresh processes, the least kept, spread up to "
        "1.50x, timing hook's 0.250 µs taken off)",
    ]


def test_bad_threshold() -> None:
    with pytest.raises(ValueError, match="threshold must be a number > 0"):
        model_profile_frame(DATA, threshold=-1)
    assert isinstance(model_profile_frame(DATA).attrs["other"], pd.DataFrame)
