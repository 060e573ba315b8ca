"""What a tuning library covers of a model, before any trial: the summary line, a compact
table per task, a figure, and where a trial carried from the library came from.

The coverage (:class:`~msviz.records.coverage_types.Coverage`) comes from a session's
``library_coverage`` event (:func:`coverage_of_events`) or a work dir's sidecar line of the same
kind (``Run.coverage``). A task's *share* is its part of the model's untuned weighted latency
(weight x untuned latency over the sum); latencies are µs.

The same concept one room down: :mod:`msviz.records.coverage` computes it; ``msviz.coverage``
(:mod:`msviz.workflows.coverage`) measures a model's untuned times for it.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import pandas as pd

from msviz.errors import MsvizWarning
from msviz.records.coverage_types import COVERAGE_KIND, MATCHES, Coverage, coverage_from_dict
from msviz.views._plotly_imports import go
from msviz.views.common import note_figure

__all__ = [
    "MATCH_COLORS",
    "CoverageInfo",
    "CoverageRow",
    "carried_text",
    "coverage_figure",
    "coverage_html",
    "coverage_info",
    "coverage_of_events",
    "library_trials",
    "library_trials_text",
]

#: The colour of each kind of match (the figure's bars, the table's match cells).
MATCH_COLORS = {"exact": "#2ca02c", "anchor": "#1f77b4", "sibling": "#ff7f0e",
                "none": "#9e9e9e"}
#: The kinds of carry a library trial can have, best first.
CARRIES = ("exact", "anchor", "sibling")

_LAYOUT = {"margin": {"l": 60, "r": 20, "t": 60, "b": 45},
           "legend": {"orientation": "h", "y": -0.2}}


class CoverageRow(NamedTuple):
    """One task: what the library holds for it."""

    index: int
    name: str
    weight: int
    match: str  # one of MATCHES
    best_us: float | None  # the library's best (exact or anchor match)
    source: str | None  # "<run>/<task>" of that record (or of the nearest sibling)
    untuned_us: float | None
    share: float | None  # weight x untuned over the model's untuned sum (None: not measured)


class CoverageInfo(NamedTuple):
    """A model's coverage by a library, ready to draw."""

    model: str
    target: str
    library: tuple[str, ...]  # the library's sources (run names)
    rows: tuple[CoverageRow, ...]  # in task order
    counts: tuple[tuple[str, int], ...]  # (match, tasks) for each of MATCHES, in its order
    library_us: float | None  # the model from the library alone (None: untuned not measured)
    untuned_us: float | None  # the model untuned
    covered_share: float | None  # share of the untuned latency with an exact or anchor match
    summary: str  # the counts and the estimate in one line
    problems: tuple[str, ...]  # the library's sources that could not be read


def _us_text(value: float) -> str:
    """``4210.3`` -> ``"4,210"``, ``612.4`` -> ``"612"``, ``12.34`` -> ``"12.3"``."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _summary(counts: Mapping[str, int], cov: Coverage) -> str:
    total, siblings = sum(counts.values()), counts["sibling"]
    text = (f"library covers {counts['exact']} of {total} task{'s' if total != 1 else ''} "
            f"exactly, {counts['anchor']} by anchor block, {siblings} "
            f"sibling{'s' if siblings != 1 else ''}, {counts['none']} none")
    if cov.covered_share is not None:
        text += f"; {cov.covered_share:.0%} of the untuned latency"
    if cov.library_us is not None and cov.untuned_us is not None:
        text += (f"; estimated {_us_text(cov.library_us)} µs from the library alone against "
                 f"{_us_text(cov.untuned_us)} µs untuned")
    elif cov.untuned_us is None:
        text += "; untuned times not measured: no estimate of the model"
    return text


def coverage_info(cov: Coverage) -> CoverageInfo:
    """The rows, counts and summary line of a coverage.

    Parameters
    ----------
    cov : Coverage
        :func:`msviz.records.coverage.coverage`'s result, a ``library_coverage`` event's
        (:func:`coverage_of_events`) or ``Run.coverage``.

    Returns
    -------
    info : CoverageInfo
        Rows in task order; a task's ``share`` is None unless both its untuned time and the
        model's are known. A coverage of no task gives an empty info and a warning.
    """
    if not cov.tasks:
        warnings.warn("the library coverage lists no task", MsvizWarning, stacklevel=2)
    total = cov.untuned_us
    rows = tuple(
        CoverageRow(t.index, t.name, t.weight, t.match, t.best_us, t.source, t.untuned_us,
                    t.weight * t.untuned_us / total
                    if t.untuned_us is not None and total else None)
        for t in sorted(cov.tasks, key=lambda t: t.index))
    counts = cov.counts()
    return CoverageInfo(cov.model, cov.target, tuple(cov.library), rows,
                        tuple((m, counts[m]) for m in MATCHES), cov.library_us, cov.untuned_us,
                        cov.covered_share, _summary(counts, cov), tuple(cov.problems))


def _kind(event: Any) -> str:
    return event.kind if hasattr(event, "kind") else event["kind"]


def _data(event: Any) -> Mapping[str, Any]:
    return event.data if hasattr(event, "data") else event["data"]


def coverage_of_events(events: Iterable[Any]) -> Coverage | None:
    """The coverage of a session's last ``library_coverage`` event (None without one).

    Parameters
    ----------
    events : iterable of Event
        A session's events, or dicts with ``kind`` and ``data``; the event's data is
        ``{"coverage": coverage_to_dict(cov)}``.

    Raises
    ------
    ValueError
        The event's coverage is malformed (:func:`~msviz.records.coverage_types.
        coverage_from_dict` says where).
    """
    last = None
    for event in events:
        if _kind(event) == COVERAGE_KIND:
            last = _data(event)
    if last is None:
        return None
    data = last.get("coverage")
    return coverage_from_dict(data if isinstance(data, Mapping) else last)


def _cell(value: float | None, digits: str = ".4g") -> str:
    return "" if value is None else format(value, digits)


def coverage_html(info: CoverageInfo | None) -> str:
    """The summary line, the library's sources, a compact table (a row per task) and the
    problems, as HTML ("" without a coverage)."""
    if info is None:
        return ""
    parts = ["<div style='font-weight:600;font-size:14px;margin-top:6px'>Library</div>",
             f"<div class='msviz-library-summary'>{html.escape(info.summary)}</div>"]
    if info.library:
        parts.append("<div class='msviz-library-sources' style='color:#555'>from "
                     f"{len(info.library)} run{'s' if len(info.library) != 1 else ''}: "
                     f"{html.escape(', '.join(info.library))}</div>")
    head = "".join(f"<th>{h}</th>" for h in ("ID", "Task", "Weight", "Match",
                                             "Library best (us)", "Source", "Untuned (us)",
                                             "Share"))
    rows = []
    for r in info.rows:
        color = MATCH_COLORS.get(r.match, "#555")
        rows.append(
            f"<tr class='msviz-library-row'><td>{r.index}</td><td>{html.escape(r.name)}</td>"
            f"<td>{r.weight}</td><td style='color:{color};font-weight:600'>{r.match}</td>"
            f"<td>{_cell(r.best_us)}</td><td>{html.escape(r.source or '')}</td>"
            f"<td>{_cell(r.untuned_us)}</td>"
            f"<td>{'' if r.share is None else format(r.share, '.0%')}</td></tr>")
    parts.append(
        "<table class='msviz-library' style='border-collapse:collapse;font-size:12px'>"
        "<style>.msviz-library td,.msviz-library th{border:1px solid #ddd;padding:2px 6px;"
        "text-align:right}.msviz-library td:nth-child(2),.msviz-library td:nth-child(6)"
        "{text-align:left}</style>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    if info.problems:
        items = "".join(f"<li>{html.escape(p)}</li>" for p in info.problems)
        parts.append("<div class='msviz-library-problems' style='color:#b00020'>Could not "
                     f"read:<ul style='margin:0;padding-left:1.5em'>{items}</ul></div>")
    return ("<div class='msviz-library-text' style='font-size:13px;line-height:1.5'>"
            f"{''.join(parts)}</div>")


def coverage_figure(info: CoverageInfo | None) -> Any:
    """A horizontal bar per task of weight x untuned latency (µs), coloured by its match
    (tasks top to bottom in their order); when untuned times were not measured, a bar per
    kind of match of its task count. A coverage of no task (or none at all) draws a note."""
    fig = go.Figure(layout={**_LAYOUT, "title": "Library coverage"})
    if info is None:
        return note_figure(fig, "no library coverage: this session was given no library")
    if not info.rows:
        return note_figure(fig, "the library coverage lists no task")
    timed = [r for r in info.rows if r.untuned_us is not None]
    if info.untuned_us is None or not timed:
        return _counts_figure(fig, info)
    names = [r.name for r in info.rows]
    for match in MATCHES:
        mine = [r for r in timed if r.match == match]
        if not mine:
            continue
        fig.add_trace(go.Bar(
            x=[r.weight * r.untuned_us for r in mine], y=[r.name for r in mine],
            orientation="h", name=match, marker={"color": MATCH_COLORS[match]},
            customdata=[[r.weight, r.untuned_us, "" if r.best_us is None else
                         f"{r.best_us:.4g} µs", r.source or ""] for r in mine],
            hovertemplate="%{y}: %{customdata[0]} x %{customdata[1]:.4g} µs untuned"
                          "<br>library best %{customdata[2]} %{customdata[3]}"
                          f"<extra>{match}</extra>"))
    note = "bar: weight x untuned latency; colour: what the library holds"
    left_out = len(info.rows) - len(timed)
    if left_out:
        note += f" ({left_out} task{'s' if left_out != 1 else ''} without an untuned time)"
    _subtitle(fig, note)
    fig.update_layout(height=max(260, 110 + 22 * len(names)),
                      xaxis={"title": "weight x untuned latency (µs)"},
                      yaxis={"categoryorder": "array", "categoryarray": names,
                             "autorange": "reversed", "automargin": True})
    return fig


def _counts_figure(fig: Any, info: CoverageInfo) -> Any:
    counts = dict(info.counts)
    fig.add_trace(go.Bar(x=list(MATCHES), y=[counts[m] for m in MATCHES],
                         marker={"color": [MATCH_COLORS[m] for m in MATCHES]},
                         name="tasks", showlegend=False,
                         hovertemplate="%{x}: %{y} tasks<extra></extra>"))
    _subtitle(fig, "untuned times not measured: tasks counted by match, not weighted by "
                   "latency")
    fig.update_layout(height=300, xaxis={"title": "match"}, yaxis={"title": "tasks"})
    return fig


def _subtitle(fig: Any, text: str) -> None:
    fig.add_annotation(text=text, x=0, y=1, xref="paper", yref="paper", xanchor="left",
                       yanchor="bottom", yshift=4, showarrow=False,
                       font={"size": 11, "color": "#666"})


def _positions(adjusted: Any) -> list[str]:
    """``"#3, #7"`` or ``[3, 7]`` -> ``["#3", "#7"]``."""
    if adjusted is None:
        return []
    if isinstance(adjusted, str):
        return [p.strip() for p in adjusted.split(",") if p.strip()]
    return [f"#{p}" for p in adjusted]


def carried_text(carried_from: str | None, carry: str | None, adjusted: Any = None) -> str:
    """Where a trial carried from a tuning library came from, in words ("" for a trial that
    was not): an exact or anchor match ``"from the library: <carried_from>"``, a sibling
    ``"carried from <carried_from>, decisions #3 and #7 adjusted"``.

    Parameters
    ----------
    carried_from : str, optional
        The trial's ``carried_from`` (``"resnet18/fused_conv2d_add_relu trial 12"``).
    carry : str, optional
        ``"exact"``, ``"anchor"`` or ``"sibling"``.
    adjusted : str or sequence of int, optional
        The ``adjusted`` column (``"#3, #7"``) or the sidecar's list of trace positions.
    """
    if carried_from is None and carry is None:
        return ""
    source = carried_from or "the library"
    if carry in ("exact", "anchor"):
        return f"from the library: {source}"
    text = f"carried from {source}"
    shown = _positions(adjusted)
    if shown:
        listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
        text += f", decision{'s' if len(shown) > 1 else ''} {listed} adjusted"
    return text


def library_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """The trials carried from a tuning library (``origin`` ``"library"``), with a ``from``
    column saying where each came from (:func:`carried_text`); none when the trials have no
    ``origin`` column."""
    columns = ["trial", "task", "carry", "from", "status", "latency_us"]
    if trials is None or "origin" not in trials.columns:
        return pd.DataFrame(columns=columns)
    mine = trials[trials["origin"] == "library"]

    def column(name: str) -> Sequence[Any]:
        return list(mine[name]) if name in mine.columns else [None] * len(mine)

    came = [carried_text(f, c, a) for f, c, a in zip(
        column("carried_from"), column("carry"), column("adjusted"), strict=True)]
    return pd.DataFrame({"trial": column("trial"), "task": column("task"),
                         "carry": column("carry"), "from": came,
                         "status": column("status"), "latency_us": column("latency_us")},
                        columns=columns)


def library_trials_text(trials: pd.DataFrame) -> str:
    """How many trials came from the library, by kind of carry:
    ``"5 trials from the library: 2 exact, 1 anchor, 2 sibling"``."""
    carried = library_trials(trials)
    if carried.empty:
        return "no trial from the library yet"
    kinds = carried["carry"].fillna("unknown").value_counts()
    order = [*CARRIES, *sorted(set(kinds.index) - set(CARRIES))]
    parts = [f"{int(kinds[k])} {k}" for k in order if k in kinds.index]
    n = len(carried)
    return f"{n} trial{'s' if n != 1 else ''} from the library: {', '.join(parts)}"
