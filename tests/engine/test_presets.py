"""Search knobs are checked when they are made (msviz/engine/search/presets.py), so a
Session refuses a bad one in its constructor instead of ending at start."""

from __future__ import annotations

import re

import pytest

import msviz


@pytest.mark.parametrize(("knob", "value", "message"), [
    ("init_min_unmeasured", 0, "init_min_unmeasured must be an int >= 1, got 0"),
    ("max_fail_count", 0, "max_fail_count must be an int >= 1, got 0"),
    ("population_size", 8.0, "population_size must be an int >= 1, got 8.0"),
    ("eps_greedy", True, "eps_greedy must be a number within [0, 1], got True"),
    ("skip_db_measured", 1, "skip_db_measured must be True or False, got 1"),
])
def test_search_knobs_are_checked_before_start(knob: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match="search knob " + re.escape(message)):
        msviz.Session("GMM-0", **{knob: value})
