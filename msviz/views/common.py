"""What the view functions share: how failures are told apart, and a figure that says in words
why it has no data yet."""

from __future__ import annotations

from typing import Any

__all__ = [
    "INFRA_ERROR",
    "WEBGL_ABOVE",
    "failure_hover",
    "failure_style",
    "is_infra",
    "note_figure",
    "scatter_type",
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
    import plotly.graph_objects as go

    return go.Scattergl if points > WEBGL_ABOVE else go.Scatter


def note_figure(fig: Any, text: str) -> Any:
    """Write ``text`` in the middle of ``fig`` and hide its empty axes."""
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font={"size": 14, "color": "#555"})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig
