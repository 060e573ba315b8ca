"""The model profile view's info, figure, HTML and text, compared whole against hand-written
expectations."""

from __future__ import annotations

import pandas as pd
import pytest

from msviz.check.model_profile import model_profile_frame
from msviz.views.model_profile import (
    FLAGGED_COLOR,
    IN_MODEL_COLOR,
    ModelProfileInfo,
    ProfiledTask,
    model_profile_figure,
    model_profile_html,
    model_profile_info,
    model_profile_text,
)

#: A model of three tasks: dense called twice and slower in place (3x), relu untuned.
DATA = {
    "rows": [
        {"task": "mm", "calls": 1, "in_model_us": 12.0, "tuned_us": 10.0, "ratio": 1.2,
         "fallback": False},
        {"task": "dense", "calls": 2, "in_model_us": 6.0, "tuned_us": 2.0, "ratio": 3.0,
         "fallback": False},
        {"task": "relu", "calls": 1, "in_model_us": 4.0, "tuned_us": None, "ratio": None,
         "fallback": True},
    ],
    "other": [{"call": "vm.builtin.alloc_tensor", "calls": 3.0, "us_per_run": 1.5},
              {"call": "vm.builtin.match_shape", "calls": 1.0, "us_per_run": 0.5}],
    "hook_us": 0.25, "runs": 10, "error": None,
}

EXPECTED = ModelProfileInfo(
    tasks=(ProfiledTask("mm", 1, 12.0, 10.0, 1.2, False, False),
           ProfiledTask("dense", 2, 6.0, 2.0, 3.0, False, True),
           ProfiledTask("relu", 1, 4.0, None, None, True, False)),
    threshold=1.5, flagged=("dense",), fallback=("relu",), tasks_us=12.0 + 2 * 6.0 + 4.0,
    other_us=2.0, hook_us=0.25, runs=10)


def test_info_from_frame_and_event_data() -> None:
    assert model_profile_info(model_profile_frame(DATA)) == EXPECTED
    assert model_profile_info(DATA) == EXPECTED  # a model_profile event's data


def test_threshold_moves_the_flags() -> None:
    low = model_profile_info(model_profile_frame(DATA), threshold=1.1)
    assert low == EXPECTED._replace(
        tasks=tuple(t._replace(flagged=t.task != "relu") for t in EXPECTED.tasks),
        threshold=1.1, flagged=("mm", "dense"))
    assert model_profile_info(DATA, threshold=5.0).flagged == ()


def test_figure_pairs_tuned_and_in_model_bars() -> None:
    fig = model_profile_figure(EXPECTED)
    tuned, in_model = fig.data
    assert list(tuned.y) == list(in_model.y) == ["mm", "dense", "relu (untuned)"]
    assert list(tuned.x) == [10.0, 2.0, None] and list(in_model.x) == [12.0, 6.0, 4.0]
    assert list(in_model.marker.color) == [IN_MODEL_COLOR, FLAGGED_COLOR, IN_MODEL_COLOR]
    assert list(in_model.text) == ["1.20x", "3.00x", "-"]
    assert fig.layout.title.text == "Kernels in the model vs in tuning"
    assert fig.layout.xaxis.range == (0, pytest.approx(1.15 * 12.0))  # room for the ratios


def test_empty_profile_draws_a_note() -> None:
    info = model_profile_info({"rows": [], "other": [], "hook_us": None, "runs": 3})
    assert info == ModelProfileInfo((), 1.5, (), (), 0, 0.0, None, 3)
    fig = model_profile_figure(info)
    assert not fig.data and fig.layout.annotations[0].text == "no model profile"


def test_html_and_text() -> None:
    page = model_profile_html(EXPECTED)
    assert page.count("msviz-profile-row") == 3
    assert page.count("msviz-flagged") == 1 and page.count("msviz-fallback") == 1
    assert "untuned (fallback)" in page and "loses in place" in page
    assert model_profile_html(None) == ""
    assert model_profile_text(EXPECTED).splitlines() == [
        " task  calls in_model_us tuned_us ratio fallback flagged",
        "   mm      1      12.000   10.000 1.20x                 ",
        "dense      2       6.000    2.000 3.00x          FLAGGED",
        " relu      1       4.000        -     - fallback        ",
        "1 of 3 tasks over 1.5x their tuned latency; untuned (no record): relu; tasks 28.000 µs "
        "and other calls 2.000 µs per run (median per call over 10 runs, timing hook's 0.250 "
        "µs taken off)",
    ]


def test_bad_threshold() -> None:
    with pytest.raises(ValueError, match="threshold must be a number > 0"):
        model_profile_frame(DATA, threshold=-1)
    assert isinstance(model_profile_frame(DATA).attrs["other"], pd.DataFrame)
