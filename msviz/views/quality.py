"""Time to quality: a model's estimated end-to-end latency against wall time, for one run or
several on one plot (msviz against stock, two presets, two seeds).

The estimate after a batch is the sum over tasks of weight x best latency, a task not tuned yet
counting at its untuned time (:func:`msviz.records.quality.model_estimate`). The curve of a
session comes from its ``model_latency`` events, that of a work dir from its sidecar lines, or,
for a stock work dir, from its records and its task-scheduler log
(:mod:`msviz.records.quality`). A stock work dir has no untuned times: pass them
(``untuned=``), or borrow another run's of the same workloads (:func:`borrow_untuned`);
without them the estimate is unknown until every task has a successful trial.

The same concept as stored: :mod:`msviz.records.quality`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from msviz.errors import MsvizWarning
from msviz.records import quality as Q
from msviz.views._plotly_imports import go
from msviz.views.common import log_axis, note_figure

__all__ = [
    "TimeToQualityInfo", "borrow_untuned", "events_quality_info", "run_quality_info",
    "time_to_quality_figure", "time_to_quality_info", "time_to_reach",
]

_LAYOUT = {"height": 380, "margin": {"l": 60, "r": 20, "t": 50, "b": 45},
           "legend": {"orientation": "h", "y": -0.22}}


class TimeToQualityInfo(NamedTuple):
    """One run's estimated model latency after each batch, against wall time."""

    name: str
    seconds: tuple[float, ...]  # wall time since the run started
    trials: tuple[int, ...]  # trials measured so far
    estimate_us: tuple[float, ...]  # NaN while some task has neither a trial nor untuned time
    untuned_tasks: tuple[int, ...]  # tasks still counted at their untuned time
    untuned_us: float | None  # every task at its untuned time (None: some untuned time unknown)
    missing: tuple[str, ...]  # tasks with no untuned time known
    source: str  # "session" (events), "sidecar" (recorded lines), "logs" (stock), "none"
    # the forecast scheduler's model at the end of the time budget: (seconds, mean, low, high)
    forecast: tuple[float, float, float, float] | None = None


def _empty(name: str, source: str, missing: tuple[str, ...] = ()) -> TimeToQualityInfo:
    return TimeToQualityInfo(name, (), (), (), (), None, missing, source)


def time_to_quality_info(weights: Mapping[str, float], batches: Sequence[Q.QualityBatch],
                         untuned_us: Mapping[str, float | None] | None = None, *,
                         name: str = "", source: str = "", start: bool = True
                         ) -> TimeToQualityInfo:
    """The curve of measured batches.

    Parameters
    ----------
    weights : mapping of str to float
        Task name -> weight, in the tasks' order.
    batches : sequence of QualityBatch
        In the order they ended.
    untuned_us : mapping of str to float, optional
        Task name -> its untuned time (µs).
    name, source : str
        The run's name; where the batches came from.
    start : bool
        Begin with a point at 0 s, 0 trials: the untuned model (when it is known).

    Returns
    -------
    info : TimeToQualityInfo
    """
    untuned = dict(untuned_us or {})
    missing = tuple(n for n in weights if untuned.get(n) is None)
    base, _ = Q.model_estimate(weights, {}, untuned)
    base_us = None if math.isnan(base) else base
    if not batches:
        warnings.warn("no measured batch yet: no curve to draw", MsvizWarning, stacklevel=2)
    best: dict[str, float] = {}
    seconds, trials, estimate, counted = [], [], [], []
    if start and base_us is not None:
        seconds.append(0.0)
        trials.append(0)
        estimate.append(base_us)
        counted.append(len(weights))
    done = 0
    for batch in batches:
        done += batch.trials
        if batch.latencies_us:
            best[batch.task] = min(best.get(batch.task, math.inf), *batch.latencies_us)
        value, count = Q.model_estimate(weights, best, untuned)
        seconds.append(float(batch.seconds))
        trials.append(done)
        estimate.append(value)
        counted.append(count)
    return TimeToQualityInfo(name, tuple(seconds), tuple(trials), tuple(estimate),
                             tuple(counted), base_us, missing, source)


def _points_info(points: Sequence[Mapping[str, Any]], untuned: Mapping[str, Any], name: str,
                 source: str, weights: Iterable[str]) -> TimeToQualityInfo:
    """A curve from recorded ``model_latency`` points (events or sidecar lines); a resumed
    session's points follow the earlier session's last time."""
    seconds, offset, last_start, last = [], 0.0, None, 0.0
    for p in points:
        if p.get("started") != last_start:
            offset, last_start = (last if seconds else 0.0), p.get("started")
        last = offset + float(p.get("elapsed") or 0.0)
        seconds.append(last)
    missing = tuple(n for n in weights if untuned.get(n) is None)
    base = [p.get("untuned_model_us") for p in points if p.get("untuned_model_us") is not None]
    return TimeToQualityInfo(
        name, tuple(seconds), tuple(int(p.get("trials") or 0) for p in points),
        tuple(math.nan if p.get("estimate_us") is None else float(p["estimate_us"])
              for p in points),
        tuple(int(p.get("untuned_tasks") or 0) for p in points),
        float(base[-1]) if base else None, missing, source)


def events_quality_info(events: Iterable[Any], *, name: str = "") -> TimeToQualityInfo:
    """A live session's curve from its events (``untuned`` and ``model_latency``)."""
    points, untuned, tasks, forecast = [], {}, [], None
    for event in events:
        if event.kind == "forecast" and event.data.get("at_budget"):
            at = event.data["at_budget"]  # the budget's clock: the curve's, pauses left out
            forecast = (float(event.data["seconds"]) + float(at["horizon_s"]),
                        float(at["mean_us"]), float(at["low_us"]), float(at["high_us"]))
        elif event.kind == Q.QUALITY_KIND:
            points.append(event.data)
        elif event.kind == Q.UNTUNED_KIND:
            untuned = {str(t["name"]): t.get("untuned_us") for t in event.get("tasks") or ()}
        elif event.kind == "tasks":
            tasks = [str(t["name"]) for t in event.get("tasks") or ()]
        elif event.kind == "started" and not name:
            name = str(event.task)
    if not points:
        warnings.warn("no measured batch yet: no curve to draw", MsvizWarning, stacklevel=2)
        return _empty(name, "session", tuple(n for n in tasks if untuned.get(n) is None))
    return _points_info(points, untuned, name, "session", tasks)._replace(forecast=forecast)


def run_quality_info(run: Any, *, name: str | None = None,
                     untuned_us: Mapping[str, float | None] | None = None
                     ) -> TimeToQualityInfo:
    """A work dir's curve: its sidecar's ``model_latency`` lines (an msviz session's), else
    rebuilt from its records and stamps (:func:`msviz.records.quality.run_batches`).

    ``untuned_us`` (task name -> µs) fills the untuned times the work dir does not hold (a
    stock work dir holds none). The tasks and weights are those of the task table the logs
    printed last (every task, tuned or not), else of ``Run.tasks``.
    """
    name = name if name is not None else run.work_dir.name
    other = getattr(run, "sidecar_entries", None) or []
    weights = Q.weights_of(run)
    untuned = {**dict(untuned_us or {}), **{k: v for k, v in Q.recorded_untuned(other).items()
                                            if v is not None}}
    points = Q.recorded_points(other)
    if points:
        return _points_info(points, untuned, name, "sidecar", weights)
    batches, source = Q.run_batches(run)
    if not batches:
        warnings.warn(f"{run.work_dir}: no batch with a time (no sidecar stamps and no "
                      "task-scheduler log)", MsvizWarning, stacklevel=2)
        return _empty(name, source, tuple(n for n in weights if untuned.get(n) is None))
    return time_to_quality_info(weights, batches, untuned, name=name, source=source)


def borrow_untuned(runs: Sequence[Any]) -> list[dict[str, float]]:
    """For each run, the untuned times (task name -> µs) that any of ``runs`` recorded for
    the same workload (by structural hash: stock and msviz may name a task differently).

    A task no trial of a run reached has no workload in that run's database: it is matched by
    name (the runs tune the same model, whose extraction names its tasks)."""
    by_key: dict[str, float] = {}
    by_name: dict[str, float] = {}
    for run in runs:
        mine = Q.recorded_untuned(getattr(run, "sidecar_entries", None) or [])
        for name, value in mine.items():
            if value is not None:
                by_name.setdefault(name, float(value))
        for name, w in zip(run.tasks["task"], run.tasks["workload"]):
            if mine.get(str(name)) is not None:
                by_key.setdefault(run.workload_key(int(w)), float(mine[str(name)]))
    out = []
    for run in runs:
        stored = {str(name): run.workload_key(int(w))
                  for name, w in zip(run.tasks["task"], run.tasks["workload"])}
        mine = {name: by_key[key] for name, key in stored.items() if key in by_key}
        mine.update({name: value for name, value in by_name.items() if name not in stored})
        out.append(mine)
    return out


def time_to_reach(info: TimeToQualityInfo, target_us: float) -> float | None:
    """Seconds until the estimate first reached ``target_us`` (None: never)."""
    for secs, value in zip(info.seconds, info.estimate_us, strict=True):
        if not math.isnan(value) and value <= target_us * (1 + 1e-9):
            return secs
    return None


def time_to_quality_figure(infos: TimeToQualityInfo | Sequence[TimeToQualityInfo], *,
                           x: str = "time", title: str = "Time to quality") -> Any:
    """Each run's estimated model latency against wall time (``x="time"``) or trials, a step
    line per run on a log latency axis."""
    if x not in ("time", "trial"):
        raise ValueError(f"x must be 'time' or 'trial', got {x!r}")
    if isinstance(infos, TimeToQualityInfo):
        infos = [infos]
    fig = go.Figure(layout={**_LAYOUT, "title": title,
                            "xaxis": {"title": "Wall time (s)" if x == "time" else "Trials"},
                            "yaxis": {"title": "Estimated model latency (µs)"}})
    ys: list[float] = []
    for info in infos:
        xs = info.seconds if x == "time" else info.trials
        pts = [(a, b, c) for a, b, c in zip(xs, info.estimate_us, info.untuned_tasks,
                                             strict=True) if not math.isnan(b)]
        if not pts:
            continue
        ys += [b for _, b, _ in pts]
        fig.add_trace(go.Scatter(
            x=[a for a, _, _ in pts], y=[b for _, b, _ in pts], mode="lines+markers",
            line={"shape": "hv", "width": 2}, marker={"size": 5}, name=info.name or "run",
            customdata=[c for _, _, c in pts],
            hovertemplate="%{y:.4g} µs at %{x:.4g}<br>%{customdata} task(s) untuned"
                          "<extra>%{fullData.name}</extra>"))
        if info.forecast is not None and x == "time":
            end, mean, low, high = info.forecast
            ys += [low, high]
            fig.add_trace(go.Scatter(  # from the last point to the budget's end
                x=[pts[-1][0], end], y=[pts[-1][1], mean], mode="lines+markers",
                line={"dash": "dash", "width": 1.5}, marker={"size": [0, 8]},
                error_y={"type": "data", "symmetric": False, "array": [0, high - mean],
                         "arrayminus": [0, mean - low]},
                name=f"{info.name or 'run'}: forecast at the end of the budget",
                hovertemplate=f"at {end:.0f} s: {mean:.4g} µs (80% band {low:.4g} to "
                              f"{high:.4g})<extra></extra>"))
    if not ys:
        why = "no measured batch yet" if not any(i.seconds for i in infos) else \
            "unknown until every task has a successful trial or an untuned time"
        return note_figure(fig, why)
    late = [i for i in infos if i.missing and any(math.isnan(v) for v in i.estimate_us)]
    if late:  # the curve starts late: say why, above the plot
        names = ", ".join(i.name or "run" for i in late)
        why = "a stock work dir" if all(i.source == "logs" for i in late) else "none recorded"
        fig.add_annotation(
            text=f"{names}: no untuned time for {sum(len(i.missing) for i in late)} task(s) "
                 f"({why}), so the curve starts once every task has a trial",
            x=0, y=1, xref="paper", yref="paper", xanchor="left", yanchor="bottom", yshift=4,
            showarrow=False, font={"size": 11, "color": "#666"})
    fig.update_yaxes(**log_axis(ys))
    return fig
