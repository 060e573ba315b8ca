"""What the view functions share: how failures are told apart, a figure that says in words
why it has no data yet, round ticks on log axes, and quiet empty-data warnings.

The same concept one room up: :mod:`msviz.widgets.common` is what the widgets share."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from msviz.errors import MsvizWarning
from msviz.views._plotly_imports import go

__all__ = [
    "INFRA_ERROR",
    "WEBGL_ABOVE",
    "failure_hover",
    "failure_style",
    "is_infra",
    "log_axis",
    "note_figure",
    "quiet_empty",
    "scatter_type",
    "step_points",
]

#: Status of a trial whose measuring infrastructure failed (not the candidate).
INFRA_ERROR = "infra_error"
#: Above this many points a scatter draws with WebGL (fast, but its points are not SVG).
WEBGL_ABOVE = 2000


def is_infra(status: str) -> bool:
    """Whether ``status`` blames the measuring infrastructure rather than the candidate
    (``device_lost``: its RPC server died, is one such failure)."""
    return status in (INFRA_ERROR, "device_lost")


def failure_style(status: str) -> tuple[str, dict]:
    """Legend name and marker of a failed trial: candidate failures as red crosses,
    infrastructure failures as grey open diamonds, wrong results (result check) as orange
    hexagrams."""
    if status == "wrong_result":  # it ran, fast or not: its output was wrong
        return "wrong result", {"symbol": "hexagram-open", "color": "#e67e00", "size": 9}
    if is_infra(status):
        return "infrastructure failure", {"symbol": "diamond-open", "color": "#7f7f7f",
                                          "size": 8}
    return "failed", {"symbol": "x", "color": "crimson", "size": 8}


def failure_hover(statuses: list[str], head: str = "%{x}") -> dict:
    """Hover settings naming each failed trial's status: a per-point text only when the trace
    mixes statuses (thousands of strings cost more to check and send than the points)."""
    kinds = set(statuses)
    if len(kinds) == 1:
        return {"hovertemplate": f"{head}: {next(iter(kinds))}"}
    return {"text": list(statuses), "hovertemplate": f"{head}: %{{text}}"}


def scatter_type(points: int) -> Any:
    """``go.Scatter`` (SVG) for small plots, ``go.Scattergl`` above :data:`WEBGL_ABOVE`."""
    return go.Scattergl if points > WEBGL_ABOVE else go.Scatter


def step_points(values: Any) -> Any:
    """Indices where a step series (a best so far) changes, plus its first and last point:
    with the ``hv`` line shape these draw the same steps as every point, in a few points
    (NaN before the first value stays a gap)."""
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return np.arange(0)
    same = (values[1:] == values[:-1]) | (np.isnan(values[1:]) & np.isnan(values[:-1]))
    keep = np.concatenate([[True], ~same])
    keep[-1] = True
    return np.flatnonzero(keep)


def note_figure(fig: Any, text: str) -> Any:
    """Write ``text`` in the middle of ``fig`` and hide its empty axes."""
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font={"size": 14, "color": "#555"})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


#: Log-axis margin above and below the data, as a share of its span in decades (plotly fits
#: lines edge to edge: the lowest line would lie on the axis, half its markers cut off).
LOG_MARGIN = 0.06
#: Above this many ticks at 1, 2 and 5 x 10^k, a log axis has ticks at powers of ten only.
MOST_LOG_TICKS = 12


def log_axis(values: Any) -> dict:
    """Settings of a log axis that shows ``values`` (array-like): its type, a range with a
    margin, and round ticks written out.

    The ticks are at 1, 2 and 5 times a power of ten; at powers of ten only over many decades;
    at every digit 1..9 in a range too narrow for two of 1, 2, 5; plotly's own (none given)
    narrower still (plotly labels a log axis under two decades with every digit 2..9, a
    clutter). NaN and values not above zero (which a log axis cannot show) are left out;
    without any value left only the type is set.
    """
    data = np.asarray(values, dtype=float)
    data = data[np.isfinite(data) & (data > 0)]
    if not len(data):
        return {"type": "log"}
    lo, hi = math.log10(float(data.min())), math.log10(float(data.max()))
    pad = LOG_MARGIN * (hi - lo) if hi > lo else 0.05
    lo, hi = lo - pad, hi + pad

    def at(mantissas: Iterable[int]) -> list[float]:
        # parsed from text: 5e-3 is the double nearest 0.005, 5 * 10.0**-3 is not
        return [float(f"{m}e{k}") for k in range(math.floor(lo), math.ceil(hi) + 1)
                for m in mantissas if lo <= math.log10(m) + k <= hi]

    ticks = at((1, 2, 5))
    if len(ticks) > MOST_LOG_TICKS:
        ticks = at((1,))
    elif len(ticks) < 2:
        ticks = at(range(1, 10))
    axis: dict[str, Any] = {"type": "log", "range": [lo, hi]}
    if len(ticks) < 2:
        return axis  # narrower still: plotly's own ticks
    return {**axis, "tickvals": ticks, "ticktext": [f"{v:g}" for v in ticks]}


@contextmanager
def quiet_empty() -> Iterator[None]:
    """Silence msviz's warnings (empty data, a stock work dir) while drawing: the figures say
    in words what is missing."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MsvizWarning)
        yield
