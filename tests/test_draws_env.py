"""``$MSVIZ_DRAWS`` (the default draws of an end-to-end check, the suite's knob for the
tutorials) read as a count, a bad value named in a warning and never an import error."""

from __future__ import annotations

import pytest

from msviz.bench.draws import _draws_from_env
from msviz.errors import MsvizWarning


@pytest.mark.parametrize(("text", "expected"), [("", 3), ("  ", 3), ("1", 1), ("5", 5)])
def test_a_count_is_taken(text: str, expected: int) -> None:
    assert _draws_from_env(text) == expected


@pytest.mark.parametrize("text", ["abc", "0", "-2", "1.5", "21"])
def test_a_bad_value_is_named_and_three_used(text: str) -> None:
    with pytest.warns(MsvizWarning, match=f"MSVIZ_DRAWS={text!r}"):
        assert _draws_from_env(text) == 3
