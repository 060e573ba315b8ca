"""What a shape cover found, ready to draw: the summary line, a row per shape (its dispatched
schedule, latency and regret), the regret heat map (each tuned shape's schedules on every
shape), the dispatched-against-own bars and the dispatch table.

The cover (:class:`~msviz.records.shape_cover.ShapeCover`) comes from
``ShapeTuning.cover`` or ``msviz.open_shapes(root)``. Latencies are µs; a *ratio* is a cell's
latency over the best known for its shape (the dispatched one): 1.0 is the best.

The same concept tuned and typed: :mod:`msviz.workflows.shapes`, :mod:`msviz.cli.shapes`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from msviz.records.shape_cover import ShapeCover, dispatch_ranges
from msviz.views._plotly_imports import go
from msviz.views.common import log_axis, note_figure

__all__ = [
    "HeatCell",
    "ShapeCoverInfo",
    "ShapeRow",
    "coverage_bars",
    "dispatch_text",
    "ratio_text",
    "regret_heatmap",
    "shape_cover_html",
    "shape_cover_info",
    "shape_progress_text",
    "shape_warnings",
]

#: The heat map's colours: 1.0 (the best) green, through yellow, to red at :data:`WORST_SHOWN`
#: (or at 2x when no cell is slower: a 1.3x cell is not painted as the worst).
RATIO_COLORS = [[0.0, "#1a9850"], [0.25, "#a6d96a"], [0.5, "#fee08b"], [0.75, "#f46d43"],
                [1.0, "#a50026"]]
#: Ratios at or above this have the reddest colour (the cell's text gives the number).
WORST_SHOWN = 4.0
#: The height of a figure that holds only a note (no data yet).
NOTE_HEIGHT = 200
_LAYOUT = {"margin": {"l": 70, "r": 20, "t": 70, "b": 55}}


class ShapeRow(NamedTuple):
    """One shape of the family: what it dispatches to."""

    label: str
    weight: float
    tuned: bool
    source: str | None  # the tuned shape its dispatched schedule came from
    us: float | None  # the dispatched (fastest known) latency
    own_us: float | None  # its own tuning's best (tuned shapes)
    regret: float | None  # us / own_us
    estimated: float | None  # the estimated regret of an untuned shape


class HeatCell(NamedTuple):
    """The schedules tuned at ``source`` measured on ``shape``."""

    source: str
    shape: str
    us: float | None  # None: nothing ran (``note`` says why)
    ratio: float | None  # us over the shape's best known
    measured: int
    failed: int
    note: str  # "" when all ran; else what did not (and the first reason)


class ShapeCoverInfo(NamedTuple):
    """A shape cover, ready to draw."""

    family: str
    dim: str
    state: str  # running (a live snapshot), finished, stopped, failed
    summary: str
    labels: tuple[str, ...]  # every shape, by size (the heat map's columns)
    chosen: tuple[str, ...]  # the tuned shapes, in tuning order (its rows)
    rows: tuple[ShapeRow, ...]  # one per label
    cells: tuple[tuple[HeatCell, ...], ...]  # chosen x labels
    regret_known: float | None  # weighted geometric mean over shapes with an own best
    regret_estimated: float | None  # over all shapes (estimated where unknown)
    seconds: float
    cross_seconds: float
    ranges: tuple[tuple[str, str, str], ...]  # (first, last, source) of the dispatch


def _us_text(value: float) -> str:
    """``4210.3`` -> ``"4,210"``, ``12.34`` -> ``"12.3"``."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def ratio_text(ratio: float | None) -> str:
    """``1.0`` -> ``"1.00"`` (the best), ``2.366`` -> ``"2.37x"``, ``23.3`` -> ``"23.3x"``,
    ``0.97`` -> ``"0.97x"`` (a regret: a carried schedule beat the shape's own tuning),
    None -> ``""``."""
    if ratio is None:
        return ""
    if abs(ratio - 1.0) < 0.005:
        return "1.00"
    if ratio >= 100:
        return f"{ratio:,.0f}x"
    return f"{ratio:.1f}x" if ratio >= 10 else f"{ratio:.2f}x"


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


def _note(cell: Any, source: str, shape: str, state: str = "finished") -> str:
    if cell is None:
        if state == "running":
            return "not measured yet: its schedules are carried here next"
        return "not measured: no schedule was carried here (the tuning stopped first)"
    if source == shape:
        return ""
    parts = []
    if cell.us is None:
        reason = "nothing ran"
        if cell.failed:
            reason += f": {_plural(cell.failed, 'carry', 'carries')} failed"
        elif not cell.measured:
            reason += ": no schedule could be carried"
        parts.append(reason)
    elif cell.failed:
        parts.append(f"{_plural(cell.failed, 'carry', 'carries')} of "
                     f"{cell.failed + cell.measured} failed")
    if cell.error:
        parts[-1:] = [f"{parts[-1]} ({cell.error})" if parts else cell.error]
    if cell.missing:
        parts.append(f"{_plural(cell.missing, 'task')} with no carry that ran (its own "
                     "fastest counted)")
    return "; ".join(parts)


def _summary(cover: ShapeCover, known: float | None, est: float | None) -> str:
    fam, labels, chosen = cover.family, cover.labels, cover.chosen
    text = f"{fam['name']} over {fam['dim']}: "
    if not chosen:
        text += f"nothing tuned yet (0 of {_plural(len(labels), 'shape')})"
    else:
        text += (f"tuned {len(chosen)} of {_plural(len(labels), 'shape')} "
                 f"({', '.join(chosen)})")
        if known is not None:
            text += f"; weighted regret {known:.2f}x on the tuned shapes"
            if known < 0.995:
                text += " (below 1: carried schedules beat their own tuning)"
        if est is not None and len(chosen) < len(labels):
            text += f", {est:.2f}x estimated over all"
    text += (f"; {cover.seconds:,.1f} s in all, {cover.cross_seconds:,.1f} s of it "
             "cross-measuring")
    if cover.state != "finished":
        text += f" ({cover.state})"
    return text


def shape_cover_info(cover: ShapeCover) -> ShapeCoverInfo:
    """The summary, rows, heat-map cells and dispatch ranges of a cover.

    Parameters
    ----------
    cover : ShapeCover
        ``ShapeTuning.cover`` or ``msviz.open_shapes(root)``; a stopped or failed cover draws
        what it measured.

    Returns
    -------
    info : ShapeCoverInfo
        Rows by size; cells with a row per tuned shape (in tuning order) and a column per
        shape, their ratio over the best known latency of the column (the dispatched one,
        else the column's fastest cell).
    """
    weights = cover.weights
    tuned = set(cover.chosen)
    by_shape = {d.shape: d for d in cover.dispatch}
    rows = []
    for label in cover.labels:
        d = by_shape.get(label)
        rows.append(ShapeRow(label, weights.get(label, 0.0), label in tuned,
                             d.source if d else None, d.us if d else None,
                             d.own_us if d else None, d.regret if d else None,
                             d.estimated if d else None))
    cells = []
    for source in cover.chosen:
        line = []
        for shape in cover.labels:
            cell = cover.cell(source, shape)
            us = cell.us if cell is not None else None
            column = [c.us for s in cover.chosen if (c := cover.cell(s, shape)) is not None
                      and c.us is not None]
            best = (by_shape[shape].us if shape in by_shape and by_shape[shape].us
                    else min(column, default=None))
            line.append(HeatCell(source, shape, us,
                                 us / best if us is not None and best else None,
                                 cell.measured if cell else 0, cell.failed if cell else 0,
                                 _note(cell, source, shape, cover.state)))
        cells.append(tuple(line))
    regret = cover.weighted_regret()
    return ShapeCoverInfo(
        str(cover.family["name"]), str(cover.family["dim"]), cover.state,
        _summary(cover, regret["known"], regret["estimated"]), tuple(cover.labels),
        tuple(cover.chosen), tuple(rows), tuple(cells), regret["known"], regret["estimated"],
        float(cover.seconds), float(cover.cross_seconds),
        tuple(dispatch_ranges(cover)) if cover.dispatch else ())


def _regret_title(info: ShapeCoverInfo) -> str:
    if info.regret_estimated is None and info.regret_known is None:
        return "Regret: schedules tuned at one shape, run at another"
    parts = []
    if info.regret_known is not None:
        parts.append(f"{info.regret_known:.2f}x on the tuned shapes")
    if info.regret_estimated is not None and len(info.chosen) < len(info.labels):
        parts.append(f"{info.regret_estimated:.2f}x estimated over all")
    return "Weighted regret " + ", ".join(parts)


def _empty_text(info: ShapeCoverInfo | None) -> str | None:
    if info is None:
        return "no shape cover yet: drawn once the first shape is tuned"
    if not info.chosen:
        return (f"nothing tuned ({info.state}): no shape's schedules to carry to the "
                f"{len(info.labels)} shapes")
    return None


def regret_heatmap(info: ShapeCoverInfo | None) -> Any:
    """Tuned shape (rows, in tuning order) x shape run at (columns, by size); colour and text
    the latency over the column's best (``"1.00"``: the best, ``"2.37x"``), the µs in the
    hover; a tuned shape's own cell outlined; cells where nothing ran grey, saying why."""
    fig = go.Figure(layout={**_LAYOUT, "title": {"text": "Regret"}})
    empty = _empty_text(info)
    if empty is not None:
        fig.update_layout(height=NOTE_HEIGHT)
        return note_figure(fig, empty)
    assert info is not None
    z = [[c.ratio for c in line] for line in info.cells]
    text = [[ratio_text(c.ratio) for c in line] for line in info.cells]
    hover = [[_hover(c) for c in line] for line in info.cells]
    worst = max((r for line in z for r in line if r is not None), default=1.0)
    fig.add_trace(go.Heatmap(
        z=z, x=list(info.labels), y=list(info.chosen), text=text, texttemplate="%{text}",
        customdata=hover, hovertemplate="%{customdata}<extra></extra>", xgap=2, ygap=2,
        colorscale=RATIO_COLORS, zmin=1.0, zmax=max(2.0, min(worst, WORST_SHOWN)),
        colorbar={"title": {"text": "x best"}, "thickness": 12}, textfont={"size": 13}))
    for line in info.cells:
        for c in line:
            if c.us is None:  # a gap in the heat map: say what happened there
                fig.add_annotation(x=c.shape, y=c.source, text="failed" if c.failed else
                                   "not run", showarrow=False, hovertext=c.note,
                                   font={"size": 11, "color": "#444"})
            if c.source == c.shape:
                fig.add_shape(type="rect", x0=info.labels.index(c.shape) - 0.5,
                              x1=info.labels.index(c.shape) + 0.5,
                              y0=info.chosen.index(c.source) - 0.5,
                              y1=info.chosen.index(c.source) + 0.5,
                              line={"color": "#222", "width": 2})
    tuned = set(info.chosen)
    fig.update_layout(
        title={"text": _regret_title(info)}, plot_bgcolor="#e6e6e6",
        height=max(240, 150 + 48 * len(info.chosen)),
        xaxis={"title": {"text": f"run at ({info.dim})"}, "type": "category",
               "tickmode": "array", "tickvals": list(info.labels),
               "ticktext": [f"<b>{x}</b>" if x in tuned else x for x in info.labels],
               "showgrid": False},
        yaxis={"title": {"text": "tuned at"}, "type": "category", "autorange": "reversed",
               "ticksuffix": " ",
               "showgrid": False})
    fig.add_annotation(text="outlined: a shape's own tuning; bold: a tuned shape",
                       x=0, y=1, xref="paper", yref="paper", xanchor="left",
                       yanchor="bottom", yshift=4, showarrow=False,
                       font={"size": 11, "color": "#666"})
    return fig


def _hover(c: HeatCell) -> str:
    head = f"tuned at {c.source}, run at {c.shape}"
    if c.us is None:
        return f"{head}<br>{html.escape(c.note)}"
    text = f"{head}<br>{_us_text(c.us)} µs, {ratio_text(c.ratio)} the best known"
    if c.source == c.shape:
        text += f"<br>its own tuning ({_plural(c.measured, 'trial')})"
    else:
        text += f"<br>{_plural(c.measured, 'carry', 'carries')} measured"
    if c.note:
        text += f"<br>{html.escape(c.note)}"
    return text


def coverage_bars(info: ShapeCoverInfo | None) -> Any:
    """A pair of bars per shape (log µs): the dispatched latency, and the shape's own tuned
    best where it was tuned; the weight, source and regret in the hover."""
    fig = go.Figure(layout={**_LAYOUT, "title": {"text": "Dispatched against own tuning"}})
    empty = _empty_text(info)
    if empty is not None:
        fig.update_layout(height=NOTE_HEIGHT)
        return note_figure(fig, empty)
    assert info is not None
    ran = [r for r in info.rows if r.us is not None]
    if not ran:
        fig.update_layout(height=NOTE_HEIGHT)
        return note_figure(fig, "no schedule ran on any shape")

    def hover(r: ShapeRow) -> str:
        text = f"weight {r.weight:.3g}; schedules tuned at {r.source}"
        if r.regret is not None:
            text += f"; regret {ratio_text(r.regret)}"
        elif r.estimated is not None:
            text += f"; estimated regret {ratio_text(r.estimated)}"
        return text

    fig.add_trace(go.Bar(
        x=[r.label for r in ran], y=[r.us for r in ran], name="dispatched",
        marker={"color": "#1f77b4"}, customdata=[hover(r) for r in ran],
        text=[_us_text(r.us) for r in ran if r.us is not None], textposition="outside",
        hovertemplate="%{x}: %{y:.4g} µs dispatched<br>%{customdata}<extra></extra>"))
    own = [r for r in info.rows if r.own_us is not None]
    fig.add_trace(go.Bar(
        x=[r.label for r in own], y=[r.own_us for r in own], name="own tuning",
        marker={"color": "#9e9e9e"}, customdata=[f"weight {r.weight:.3g}" for r in own],
        text=[_us_text(r.own_us) for r in own if r.own_us is not None], textposition="outside",
        hovertemplate="%{x}: %{y:.4g} µs, its own tuning<br>%{customdata}<extra></extra>"))
    untuned = [r.label for r in info.rows if not r.tuned]
    if untuned:
        fig.add_annotation(text=f"not tuned (no own bar): {', '.join(untuned)}", x=0, y=1,
                           xref="paper", yref="paper", xanchor="left", yanchor="bottom",
                           yshift=4, showarrow=False, font={"size": 11, "color": "#666"})
    values = [v for r in info.rows for v in (r.us, r.own_us) if v]
    # round ticks; below the shortest bar room for it to show, above the tallest for its text
    yaxis = {**log_axis([min(values) / 2, *values, max(values) * 1.8]),
             "title": {"text": "latency (µs)"}}
    fig.update_layout(
        barmode="group", height=340, legend={"orientation": "h", "y": -0.25},
        xaxis={"title": {"text": info.dim}, "type": "category",
               "categoryorder": "array", "categoryarray": list(info.labels)},
        yaxis=yaxis)
    return fig


def dispatch_text(info: ShapeCoverInfo | None) -> str:
    """The dispatch as text: a line per run of neighbouring shapes with the same schedules
    (``"M=1 .. M=16 -> schedules tuned at M=16"``)."""
    if info is None:
        return "no shape cover yet"
    if not info.ranges:
        return f"{info.family} over {info.dim}: nothing dispatched yet"
    lines = [f"{info.family} over {info.dim}: {_plural(len(info.ranges), 'range')}"]
    for first, last, source in info.ranges:
        span = first if first == last else f"{first} .. {last}"
        lines.append(f"  {span:<28} -> {_runs(source)}")
    return "\n".join(lines)


def _runs(source: str) -> str:
    """What a dispatch range runs (``dispatch_ranges`` names a range where nothing ran
    ``"nothing"``)."""
    return "nothing ran here" if source == "nothing" else f"schedules tuned at {source}"


def _cell(value: float | None, fmt: Any = _us_text) -> str:
    return "" if value is None else fmt(value)


def shape_cover_html(info: ShapeCoverInfo | None, *, summary: bool = True) -> str:
    """The summary (unless ``summary=False``), the dispatch ranges and a row per shape
    (weight, dispatched source, µs, own µs, regret or estimated regret), as HTML."""
    if info is None:
        return ("<div class='msviz-shapes-text'><i>no shape cover yet: drawn when the shape "
                "tuning writes it (when it ends)</i></div>")
    esc = html.escape
    parts = [f"<div class='msviz-shapes-summary' style='font-weight:600'>"
             f"{esc(info.summary)}</div>"] if summary else []
    if info.ranges:
        items = "".join(
            f"<li><code>{esc(a if a == b else f'{a} .. {b}')}</code> &rarr; "
            + ("<i>nothing ran here</i>" if s == "nothing" else
               f"schedules tuned at <b>{esc(s)}</b>") + "</li>"
            for a, b, s in info.ranges)
        parts.append(f"<div>Dispatch:</div><ul class='msviz-shapes-ranges' "
                     f"style='margin:0;padding-left:1.5em'>{items}</ul>")
    head = "".join(f"<th>{h}</th>" for h in ("Shape", "Weight", "Tuned", "Dispatched from",
                                             "Latency (µs)", "Own (µs)", "Regret"))
    body = []
    for r in info.rows:
        regret = (ratio_text(r.regret) if r.regret is not None else
                  f"~{ratio_text(r.estimated)} (estimated)" if r.estimated is not None else "")
        body.append(f"<tr class='msviz-shapes-row'><td>{esc(r.label)}</td><td>{r.weight:.3g}</td>"
                    f"<td>{'yes' if r.tuned else ''}</td><td>{esc(r.source or '')}</td>"
                    f"<td>{_cell(r.us)}</td><td>{_cell(r.own_us)}</td><td>{regret}</td></tr>")
    parts.append(
        "<table class='msviz-shapes-table' style='border-collapse:collapse;font-size:12px'>"
        "<style>.msviz-shapes-table td,.msviz-shapes-table th{border:1px solid #ddd;"
        "padding:2px 8px;text-align:right}.msviz-shapes-table td:first-child{text-align:left}"
        f"</style><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
    return ("<div class='msviz-shapes-text' style='font-size:13px;line-height:1.5'>"
            f"{''.join(parts)}</div>")


def shape_progress_text(events: Iterable[Mapping[str, Any]]) -> str:
    """Where a live cover stands, from its events (``ShapeTuning.events``): the shapes tuned,
    the one being tuned, the shapes cross-measured, how it ended (its warnings:
    :func:`shape_warnings`)."""
    tuned, crossed, current, end = [], 0, None, None
    for e in events:
        kind = e.get("kind")
        if kind == "picked":
            current = e.get("shape")
        elif kind == "tuned":
            tuned.append(f"{e.get('shape')} ({_plural(int(e.get('trials', 0)), 'trial')}, "
                         f"{float(e.get('seconds', 0.0)):.1f} s)")
            current = None
        elif kind == "crossed":
            crossed += 1
        elif kind in ("finished", "failed"):
            end = e.get("state", "finished") if kind == "finished" else \
                f"failed: {e.get('error')}"
    parts = [f"tuned {', '.join(tuned)}" if tuned else "nothing tuned yet"]
    if current is not None and end is None:
        parts.append(f"tuning {current}")
    if crossed:
        parts.append(f"{_plural(crossed, 'shape')} cross-measured")
    parts.append(end if end is not None else "running")
    return "; ".join(parts)


def shape_warnings(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """The warnings of a live cover's events (``ShapeTuning.events``), in order."""
    return [str(e.get("message")) for e in events if e.get("kind") == "warning"]
