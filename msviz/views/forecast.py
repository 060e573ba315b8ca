"""The forecast task scheduler's view: why it picked each task, each task's best latency with
its forecast band, the model at the end of the time budget, and how well the forecasts held.

A session with ``task_scheduler="forecast"`` emits a ``scheduled`` event before each batch (its
``reason`` says in words why that task) and a ``forecast`` event after each joined batch: per
task the forecast of its next batch and its curve so far (``history_s``: seconds spent on the
task after each of its batches, ``history_ms``: its best latency then) with the band carried on
(``curve``: as if the rest of the budget went to that task); ``inside`` of ``total`` past
forecasts whose outcome fell inside their band; with a time budget, the model's weighted latency
forecast at its end (``at_budget``). Times are the session's tuning seconds (paused time not
counted), latencies µs here (the events carry ms).

The same concept in the engine: :mod:`msviz.engine.task_scheduler.forecast` is the scheduler.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from msviz.views._plotly_imports import go, qualitative
from msviz.views.common import log_axis, note_figure

__all__ = [
    "AtBudget",
    "ForecastInfo",
    "Pick",
    "TaskForecast",
    "forecast_figure",
    "forecast_html",
    "forecast_info",
    "shown_tasks",
]

#: How many of the last picks :attr:`ForecastInfo.picks` keeps.
LAST_PICKS = 5
#: How many tasks the figure draws (the largest weight x best latency), besides a focused one.
MOST_TASKS = 6

_LAYOUT = {"height": 400, "margin": {"l": 60, "r": 20, "t": 70, "b": 45},
           "legend": {"orientation": "h", "y": -0.18}}


class Pick(NamedTuple):
    """One pick of the scheduler: the batch it starts, the task, and why."""

    batch: int
    task: str
    reason: str


class TaskForecast(NamedTuple):
    """One task's forecast (µs); the ``None`` and empty fields: no valid best latency yet."""

    index: int
    name: str
    weight: float  # from the ``tasks`` event (1 when unknown)
    best_us: float | None  # best so far
    expected_us: float | None  # expected best after its next batch
    low_us: float | None  # the band of that
    high_us: float | None
    history_s: tuple[float, ...]  # seconds spent on the task after each of its batches
    history_us: tuple[float, ...]  # its best latency then
    curve_s: tuple[float, ...]  # the band carried on: task seconds (from the last of history_s)
    mean_us: tuple[float, ...]
    curve_low_us: tuple[float, ...]
    curve_high_us: tuple[float, ...]


class AtBudget(NamedTuple):
    """The model's weighted latency (sum of weight x best, µs) forecast at the end of the
    time budget."""

    end_s: float  # session seconds at the end of the budget
    left_s: float  # seconds left then
    now_us: float
    mean_us: float
    low_us: float
    high_us: float
    unknown: tuple[str, ...]  # tasks left out of the sums (no valid best latency yet)


class ForecastInfo(NamedTuple):
    """The last pick's reason, the last few picks, the forecasts' calibration, the model at
    the end of the budget, and each task's curve."""

    reason: str | None  # the last pick's reason
    picks: tuple[Pick, ...]  # the last few, oldest first
    inside: int  # past forecasts whose outcome fell inside their band
    total: int  # past forecasts with an outcome
    band: float  # the band's probability (0.8: an 80% band)
    seconds: float  # session tuning seconds at the last forecast
    calibration: str  # inside of total in words
    at_budget: AtBudget | None  # None: no time budget
    at_budget_text: str | None
    tasks: tuple[TaskForecast, ...]


def _kind(event: Any) -> str:
    return event.kind if hasattr(event, "kind") else event["kind"]


def _data(event: Any) -> Mapping[str, Any]:
    return event.data if hasattr(event, "data") else event["data"]


def _us(value: Any) -> float | None:
    return None if value is None else float(value) * 1e3


def _all_us(values: Iterable[Any] | None) -> tuple[float, ...]:
    return tuple(float(v) * 1e3 for v in values or ())


def duration_text(seconds: float) -> str:
    """``600`` -> ``"10m"``, ``577.3`` -> ``"9m37s"``, ``42.4`` -> ``"42s"``."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if v)


def calibration_text(inside: int, total: int, band: float) -> str:
    """``"12 of 15 outcomes inside the 80% band (80%)"``, or why there is none yet."""
    if not total:
        return (f"no forecast checked yet (a pick's {band:.0%} band is checked once its batch "
                "has joined)")
    return (f"{inside} of {total} outcome{'s' if total != 1 else ''} inside the {band:.0%} "
            f"band ({inside / total:.0%})")


def at_budget_text(at: AtBudget, band: float) -> str:
    """``"at the end of the budget (10m, in 9m37s): 2.74 µs (80% band 1.33 to 6.08 µs; now
    16.8 µs)"``."""
    text = (f"at the end of the budget ({duration_text(at.end_s)}, in "
            f"{duration_text(at.left_s)}): {at.mean_us:.3g} µs ({band:.0%} band "
            f"{at.low_us:.3g} to {at.high_us:.3g} µs; now {at.now_us:.3g} µs)")
    if at.unknown:
        text += (f", leaving out {len(at.unknown)} task{'s' if len(at.unknown) != 1 else ''} "
                 f"with no latency yet")
    return text


def _task(row: Mapping[str, Any], weight: float) -> TaskForecast:
    curve = row.get("curve") or {}
    return TaskForecast(
        int(row["index"]), str(row["name"]), weight, _us(row.get("best_ms")),
        _us(row.get("expected_ms")), _us(row.get("low_ms")), _us(row.get("high_ms")),
        tuple(float(s) for s in row.get("history_s") or ()), _all_us(row.get("history_ms")),
        tuple(float(s) for s in curve.get("seconds") or ()), _all_us(curve.get("mean_ms")),
        _all_us(curve.get("low_ms")), _all_us(curve.get("high_ms")))


def forecast_info(events: Iterable[Any]) -> ForecastInfo | None:
    """What the forecast scheduler said so far, from a session's events.

    Parameters
    ----------
    events : iterable of Event
        A session's events (``Session.events.snapshot()``), or dicts with ``kind`` and
        ``data``: the last ``tasks`` event gives the weights, the last ``scheduled`` events the
        picks, the last ``forecast`` event the rest.

    Returns
    -------
    info : ForecastInfo or None
        None when no ``forecast`` event came (a scheduler that does not forecast, or before
        the first batch joined).
    """
    tasks = forecast = None
    scheduled: list[Mapping[str, Any]] = []
    for event in events:
        kind = _kind(event)
        if kind == "tasks":
            tasks = _data(event)
        elif kind == "forecast":
            forecast = _data(event)
        elif kind == "scheduled":
            scheduled = [*scheduled[-(LAST_PICKS - 1):], _data(event)]
    if forecast is None:
        return None
    weights = {int(t.get("index", i)): float(t.get("weight") or 1)
               for i, t in enumerate((tasks or {}).get("tasks") or ())}
    picks = tuple(Pick(int(s.get("batch", -1)),
                       str(s.get("pick_name") or f"task {s.get('pick')}"),
                       str(s.get("reason") or "no reason given")) for s in scheduled)
    rows = tuple(_task(row, weights.get(int(row["index"]), 1.0))
                 for row in forecast.get("tasks") or ())
    band = float(forecast.get("band", 0.8))
    inside, total = int(forecast.get("inside") or 0), int(forecast.get("total") or 0)
    seconds = float(forecast.get("seconds") or 0.0)
    at = forecast.get("at_budget")
    at_budget = None
    if at is not None:
        names = {t.index: t.name for t in rows}
        at_budget = AtBudget(seconds + float(at["horizon_s"]), float(at["horizon_s"]),
                             float(at["now_us"]), float(at["mean_us"]), float(at["low_us"]),
                             float(at["high_us"]),
                             tuple(names.get(int(i), f"task {i}") for i in at.get("unknown")
                                   or ()))
    return ForecastInfo(
        picks[-1].reason if picks else None, picks, inside, total, band, seconds,
        calibration_text(inside, total, band), at_budget,
        None if at_budget is None else at_budget_text(at_budget, band), rows)


def shown_tasks(info: ForecastInfo, focus: str | None = None, most: int = MOST_TASKS
                ) -> list[str]:
    """The tasks worth drawing, in their order: the ``most`` largest by weight x best latency
    (those with a curve), and ``focus`` if it has one. A 25-task model stays readable."""
    drawn = [t for t in info.tasks if t.history_s]
    top = sorted(drawn, key=lambda t: -(t.weight * (t.best_us or 0.0)))[:most]
    names = {t.name for t in top} | ({focus} if focus else set())
    return [t.name for t in drawn if t.name in names]


def _rgba(color: str, alpha: float) -> str:
    color = color.lstrip("#")
    r, g, b = (int(color[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _colors(indexes: Sequence[int]) -> dict[int, str]:
    """A colour per task: the one its index has in plotly's palette (as the task's line in the
    trials-per-task plot), else, when two drawn tasks share it, the next one free."""
    palette = qualitative.Plotly
    out: dict[int, str] = {}
    for index in indexes:
        free = [c for c in palette if c not in out.values()] or palette
        own = palette[index % len(palette)]
        out[index] = own if own in free else free[0]
    return out


def forecast_figure(info: ForecastInfo | None, tasks: Sequence[str] | None = None) -> Any:
    """Each task's best latency (µs) against the seconds spent on it: measured (solid), the
    forecast mean (dashed) and band (shaded) carried to the end of the budget, as if the rest
    went to that task; both axes log (the first seconds and the end of the budget, a latency
    that fell 10x).

    Parameters
    ----------
    info : ForecastInfo or None
        :func:`forecast_info` (None: a note says the scheduler does not forecast).
    tasks : sequence of str, optional
        The tasks to draw; by default :func:`shown_tasks`.
    """
    fig = go.Figure(layout={**_LAYOUT, "title": "Forecast per task",
                            "xaxis": {"title": "seconds spent on the task"},
                            "yaxis": {"title": "best latency (µs)"}})
    if info is None:
        return note_figure(fig, "no forecast: this session's task scheduler does not "
                                "forecast (task_scheduler='forecast' does)")
    names = set(shown_tasks(info) if tasks is None else tasks)
    chosen = [t for t in info.tasks if t.name in names and t.history_s]
    if not chosen:
        return note_figure(fig, "no forecast yet: a task's first batch has not joined")
    colors = _colors([t.index for t in chosen])
    xs: list[float] = []
    ys: list[float] = []
    for t in chosen:
        color = colors[t.index]
        if t.curve_s:
            fig.add_trace(go.Scatter(
                x=[*t.curve_s, *reversed(t.curve_s)],
                y=[*t.curve_high_us, *reversed(t.curve_low_us)], fill="toself",
                fillcolor=_rgba(color, 0.15), mode="lines",
                line={"width": 0.75, "color": _rgba(color, 0.5)},  # overlapping bands: edges
                hoverinfo="skip", showlegend=False, name=f"{t.name} {info.band:.0%} band",
                legendgroup=t.name))
            fig.add_trace(go.Scatter(
                x=list(t.curve_s), y=list(t.mean_us), mode="lines", showlegend=False,
                line={"color": color, "dash": "dash", "width": 1.5},
                name=f"{t.name} forecast", legendgroup=t.name,
                hovertemplate="forecast %{y:.3g} µs after %{x:.3g} s<extra>%{fullData.name}"
                              "</extra>"))
            xs += t.curve_s
            ys += [*t.curve_low_us, *t.curve_high_us]
        fig.add_trace(go.Scatter(
            x=list(t.history_s), y=list(t.history_us), mode="lines+markers",
            line={"color": color, "shape": "hv", "width": 2}, marker={"size": 6},
            name=t.name, legendgroup=t.name,
            hovertemplate="best %{y:.3g} µs after %{x:.3g} s<extra>%{fullData.name}</extra>"))
        xs += t.history_s
        ys += t.history_us
    fig.add_annotation(
        text=f"solid: best so far · dashed: forecast · shaded: {info.band:.0%} band, "
             "as if the rest of the budget went to the task",
        x=0, y=1, xref="paper", yref="paper", xanchor="left", yanchor="bottom", yshift=4,
        showarrow=False, font={"size": 11, "color": "#666"})
    fig.update_xaxes(**log_axis(xs))
    fig.update_yaxes(**log_axis(ys))
    return fig


def forecast_html(info: ForecastInfo | None) -> str:
    """The last pick's reason, how well the forecasts held, the model at the end of the
    budget, and the picks before it, as HTML ("" without a forecast)."""
    if info is None:
        return ""
    lines = ["<div style='font-weight:600;font-size:14px;margin-top:6px'>Forecast</div>"]
    if info.picks:
        last = info.picks[-1]
        lines.append(f"<div class='msviz-forecast-reason'><b>Last pick</b> "
                     f"(batch {last.batch}): {html.escape(_pick_text(last))}</div>")
    lines.append(f"<div class='msviz-forecast-calibration'><b>Forecasts held</b>: "
                 f"{html.escape(info.calibration)}</div>")
    if info.at_budget_text is not None:
        lines.append(f"<div class='msviz-forecast-budget'><b>Model</b>: "
                     f"{html.escape(info.at_budget_text)}</div>")
    earlier = info.picks[:-1]
    if earlier:
        items = "".join(f"<li>batch {p.batch}: {html.escape(_pick_text(p))}</li>"
                        for p in reversed(earlier))
        lines.append("<div class='msviz-forecast-picks' style='color:#555'>Picks before: "
                     f"<ul style='margin:0;padding-left:1.5em'>{items}</ul></div>")
    return ("<div class='msviz-forecast-text' style='font-size:13px;line-height:1.5'>"
            f"{''.join(lines)}</div>")


def _pick_text(pick: Pick) -> str:
    """The reason, with the task named when the reason does not name it."""
    return pick.reason if pick.task in pick.reason else f"{pick.task}: {pick.reason}"

