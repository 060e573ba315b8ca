"""Which decision sites mattered for latency, drawn: the importance bars.

The importance itself (PED-ANOVA over a task's decisions) is computed in
:mod:`msviz.analysis.importance`; its names are re-exported here, where the figure's info lives.

(The same concept one room down: :mod:`msviz.analysis.importance`.)
"""

from __future__ import annotations

import html
from collections.abc import Sequence
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
from msviz.views._plotly_imports import go
from msviz.views.common import note_figure

__all__ = [
    "METHOD",
    "MIN_TOP",
    "QUANTILE",
    "ImportanceInfo",
    "SiteImportance",
    "importance_figure",
    "importance_html",
    "importance_info",
    "importance_text",
    "pearson_divergence",
    "ped_anova",
    "top_mask",
]


def importance_figure(info: ImportanceInfo) -> Any:
    """Horizontal bars: each site's importance, the most important on top; the hover lists the
    winners' decisions."""
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


def _winners_text(site: SiteImportance, shown: int = 3) -> str:
    return ", ".join(f"{v} ({c})" for v, c in site.winners[:shown])


def _few_note(info: ImportanceInfo) -> str:
    """Why the shares cannot be told apart, or ``""``."""
    if info.sites and info.top == info.trials:
        return (f"all {info.trials} trials of this design space count as winners: too few to "
                "tell sites apart")
    return ""


def importance_text(info: ImportanceInfo, changes: Sequence[Any] = ()) -> str:
    """One task's importance as plain text (``msviz show``): its method and winners, a line per
    site (share, site, the winners' commonest decisions), then the proposed rule edits."""
    if not info.sites:
        return f"{info.task}: no successful trial with decisions"
    lines = [f"{info.task}: {info.method} over {info.trials} trials of its best design space, "
             f"winners the fastest {info.top} (up to {info.cutoff_us:.4g} µs)"]
    width = max(len(s.site) for s in info.sites)
    lines += [f"  {s.importance:5.2f}  {s.site:<{width}}  winners chose {_winners_text(s)}"
              for s in info.sites]
    if _few_note(info):
        lines.append(f"  ({_few_note(info)})")
    lines += [f"  proposed: {c}" for c in changes] or ["  proposed: nothing to restrict"]
    return "\n".join(lines)


def importance_html(info: ImportanceInfo, changes: Sequence[Any] = ()) -> str:
    """The proposed rule edits and the winners' decisions per site, as HTML (the report; the
    bars are :func:`importance_figure`)."""
    items = "".join(f"<li>{html.escape(str(c))}</li>" for c in changes)
    proposal = (f"<p>Proposed restriction:</p><ul>{items}</ul>" if changes else
                '<p class="note">Nothing to restrict: the fastest trials used every option the '
                "rules expose.</p>")
    rows = "".join(f"<tr><td>{s.importance:.3f}</td><td class=\"text\">{html.escape(s.site)}"
                   f"</td><td class=\"text\">{html.escape(_winners_text(s, 6))}</td>"
                   f"<td>{s.choices_seen}</td></tr>" for s in info.sites)
    table = ('<table class="msviz"><thead><tr><th>importance</th><th>site</th>'
             "<th>winners chose (trials)</th><th>choices seen</th></tr></thead>"
             f"<tbody>{rows}</tbody></table>")
    note = f'<p class="note">{html.escape(_few_note(info))}</p>' if _few_note(info) else ""
    return proposal + note + table
