"""The shared view helpers: log-axis ticks against lists written out by hand, and the quiet
empty-data warnings."""

from __future__ import annotations

import math
import warnings

import pytest

from msviz.errors import MsvizWarning
from msviz.views.common import log_axis, quiet_empty

NAN = math.nan


def ticks(*values: float) -> list[float]:
    return log_axis(values).get("tickvals", [])


@pytest.mark.parametrize(("values", "expected"), [
    ((40, 100), [50, 100]),  # within a decade and a bit: 1, 2, 5 x 10^k
    ((25, 550), [50, 100, 200, 500]),
    ((1, 10), [1, 2, 5, 10]),
    ((0.3, 3), [0.5, 1, 2]),
    ((0.002, 0.009), [0.002, 0.005]),  # exact decimals, not 5 * 10.0**-3
    ((3, 4000), [2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]),  # several decades
    ((1, 1e6), [1, 10, 100, 1000, 1e4, 1e5, 1e6]),  # many decades: powers of ten
    ((35, 75), [40, 50, 60, 70]),  # one of 1, 2, 5 only: every digit
    ((41, 44), []),  # not even two digits: plotly's own
    ((50,), []),
])
def test_log_ticks_are_round_numbers_in_range(values: tuple, expected: list) -> None:
    assert ticks(*values) == expected


def test_log_axis_range_has_a_margin_and_written_out_labels() -> None:
    axis = log_axis([NAN, 0.0, -1.0, 40.0, 100.0])  # what a log axis cannot show is left out
    lo, hi = axis.pop("range")
    span = math.log10(100 / 40)
    assert lo == pytest.approx(math.log10(40) - 0.06 * span)
    assert hi == pytest.approx(2 + 0.06 * span)
    assert axis == {"type": "log", "tickvals": [50.0, 100.0], "ticktext": ["50", "100"]}
    assert log_axis([1, 1e6])["ticktext"] == ["1", "10", "100", "1000", "10000", "100000",
                                              "1e+06"]
    assert log_axis([50])["range"] == pytest.approx([math.log10(50) - 0.05,
                                                     math.log10(50) + 0.05])
    assert log_axis([]) == log_axis([NAN, 0.0]) == {"type": "log"}


def test_quiet_empty_silences_only_msviz_warnings() -> None:
    with quiet_empty():
        warnings.warn("no trials yet", MsvizWarning, stacklevel=1)
    with pytest.warns(UserWarning, match="other"), quiet_empty():
        warnings.warn("other", UserWarning, stacklevel=1)
    with pytest.warns(MsvizWarning):  # as before, once out of the block
        warnings.warn("no trials yet", MsvizWarning, stacklevel=1)
