"""Which decision sites mattered for latency, drawn: the importance bars.

The importance itself (PED-ANOVA over a task's decisions) is computed in
:mod:`msviz.analysis.importance`; its names are re-exported here, where the figure's info lives.
"""

from __future__ import annotations

from typing import Any

from msviz.analysis.importance import (
    METHOD,
    MIN_TOP,
    QUANTILE,
    ImportanceInfo,
    SiteImportance,
    importance_info,
    pearson_divergence,
    ped_anova,
    top_mask,
)
from msviz.views.common import note_figure

__all__ = [
    "METHOD",
    "MIN_TOP",
    "QUANTILE",
    "ImportanceInfo",
    "SiteImportance",
    "importance_figure",
    "importance_info",
    "pearson_divergence",
    "ped_anova",
    "top_mask",
]


def importance_figure(info: ImportanceInfo) -> Any:
    """Horizontal bars: each site's importance, the most important on top; the hover lists the
    winners' decisions."""
    import plotly.graph_objects as go

    shown = list(reversed(info.sites))
    hover = ["<br>".join(f"{v}: {c} trials" for v, c in s.winners[:6]) for s in shown]
    fig = go.Figure(go.Bar(
        x=[s.importance for s in shown], y=[s.site for s in shown], orientation="h",
        customdata=hover, hovertemplate="%{y}: %{x:.3f}<br>top trials chose:<br>%{customdata}"
                                        "<extra></extra>"))
    title = "Decision importance" + (f" · {info.task}" if info.task else "")
    detail = info.method + (f", top {info.top} of {info.trials} trials" if info.trials else "")
    fig.update_layout(title={"text": f"{title}<br><sup>{detail}</sup>", "y": 0.93,
                             "yanchor": "bottom"},
                      xaxis_title="importance (share)", xaxis_range=[0, 1],
                      height=max(300, 100 + 28 * len(shown)),
                      margin={"l": 170, "r": 20, "t": 95, "b": 45})
    if not info.sites:
        note_figure(fig, "no successful trial to read decisions from yet")
    elif info.top == info.trials:  # the bars stay readable; the note sits above them
        fig.add_annotation(text=f"all {info.trials} trials of this design space count as "
                           "winners: too few to tell sites apart", x=0, y=1, xref="paper",
                           yref="paper", xanchor="left", yanchor="bottom", yshift=6,
                           showarrow=False, font={"size": 12, "color": "#a33"})
    return fig
