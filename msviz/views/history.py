"""Best-so-far history: each trial's latency (or GFLOPS) and the running best, per task."""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from msviz.errors import MsvizWarning
from msviz.views._plotly_imports import go
from msviz.views.common import (
    failure_hover,
    failure_style,
    log_axis,
    note_figure,
    scatter_type,
    step_points,
)

__all__ = [
    "HistoryInfo",
    "TaskHistory",
    "best_so_far_figure",
    "best_so_far_info",
    "seconds_since_first",
    "trial_seconds",
]

_METRICS = {"latency_us": ("Latency (µs)", min), "gflops": ("Throughput (GFLOPS)", max)}


class TaskHistory(NamedTuple):
    """One task's trials in measuring order."""

    task: str
    trial: tuple[int, ...]  # the task's 0-based trial numbers
    value: tuple[float, ...]  # the metric per trial (NaN for a failed trial)
    best: tuple[float, ...]  # best value so far (NaN until the first success)
    status: tuple[str, ...]
    seconds: tuple[float, ...] = ()  # wall time since the run's first trial (NaN if unknown)


class HistoryInfo(NamedTuple):
    """Everything a best-so-far plot draws."""

    metric: str
    label: str
    tasks: tuple[TaskHistory, ...]
    #: What the trial axis counts: the run's trials, or each task's own (a multi-task run, or
    #: one task of it, numbers its trials per task; the trials table and scatter number the run's).
    trial_axis: str = "Trial"


#: The trial axis's title when trials are counted per task.
PER_TASK_AXIS = "Trial of its task"


def best_so_far_info(trials: pd.DataFrame, *, metric: str = "latency_us",
                     started: Any = None) -> HistoryInfo:
    """The best-so-far history of every task in a trials table.

    Parameters
    ----------
    trials : pandas.DataFrame
        ``Run.trials`` (columns ``task``, ``task_trial``, ``status`` and the metric).
    metric : {"latency_us", "gflops"}
        Lower is better for latency, higher for GFLOPS.
    started : datetime, optional
        When the run started: wall times count from it, else from the first trial (see
        :func:`trial_seconds`).
    """
    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {sorted(_METRICS)}, got {metric!r}")
    label, better = _METRICS[metric]
    if trials.empty:
        warnings.warn("no trials to plot yet", MsvizWarning, stacklevel=2)
        return HistoryInfo(metric, label, ())

    seconds = trial_seconds(trials, started)
    # running best: fmin/fmax skip NaN (a failed trial) and keep NaN until the first success
    running = np.fmin if better is min else np.fmax
    out = []
    for task, group in trials.groupby("task", sort=False):
        values = group[metric].to_numpy(dtype=float)
        out.append(
            TaskHistory(
                str(task),
                tuple(group["task_trial"].astype(int).tolist()),
                tuple(values.tolist()),
                tuple(running.accumulate(values).tolist() if len(values) else ()),
                tuple(group["status"].astype(str).tolist()),
                tuple(seconds.loc[group.index].to_numpy(dtype=float).tolist()),
            )
        )
    per_task = "trial" in trials.columns and bool(
        (trials["trial"].to_numpy() != trials["task_trial"].to_numpy()).any()
    )
    return HistoryInfo(metric, label, tuple(out), PER_TASK_AXIS if per_task else "Trial")


def trial_seconds(trials: pd.DataFrame, started: Any = None) -> pd.Series:
    """Seconds since the run started (``started``, a timestamp: :func:`msviz.records.quality.
    run_started`), else since the first trial: msviz's own timestamps, else the log's (1 s
    resolution). A trial's stamp is when its batch was stored, so counting from the first trial
    would put a whole first batch at 0 s."""
    for column in ("timestamp", "logged_at"):
        if column in trials.columns and trials[column].notna().any():
            return seconds_since_first(trials[column], started)
    return pd.Series(math.nan, index=trials.index)


def seconds_since_first(stamps: pd.Series, started: Any = None) -> pd.Series:
    """Seconds since the earliest of ``stamps``, or since ``started`` when it is given and no
    later than them (NaN where a stamp is missing).

    Takes datetimes (tz-aware or naive, any unit: pandas 2 stores ns, pandas 3 µs), ISO-8601
    text, or numbers, read as epoch seconds. ``started`` is of the same kind; one with a time
    zone where the stamps have none (or the other way round) is ignored.
    """
    if pd.api.types.is_numeric_dtype(stamps) and not pd.api.types.is_bool_dtype(stamps):
        numbers = stamps.astype(float)
        origin = numbers.min()
        if isinstance(started, (int, float)) and math.isfinite(started):
            origin = min(origin, float(started))
        return numbers - origin
    if not pd.api.types.is_datetime64_any_dtype(stamps):
        stamps = pd.to_datetime(stamps, utc=True, errors="coerce", format="ISO8601")
    origin = stamps.min()
    if started is not None and not isinstance(started, (int, float)):
        start = pd.Timestamp(started)
        if (start.tzinfo is None) == (getattr(stamps.dt, "tz", None) is None) and (
                pd.isna(origin) or start <= origin):
            origin = start
    # a timedelta's total_seconds() does not depend on the datetime unit
    return (stamps - origin).dt.total_seconds().astype(float)


#: From this many tasks on, Best so far draws one small panel per task (one shared legend),
#: not every task's series overlaid (18 tasks made 54 legend entries over one another).
SMALL_MULTIPLES_FROM = 7
#: Panels per row of the small multiples, and the height of a row (px).
PANEL_COLUMNS, PANEL_ROW_PX = 4, 170
#: Colours of the small multiples' trials and best-so-far lines (the same in every panel).
_DOT, _LINE = "#7f9fc8", "#1f3b73"


def best_so_far_figure(
    info: HistoryInfo, *, task: str | None = None, x: str = "trial"
) -> object:
    """A plotly figure: every trial as a dot (failures as red crosses) and the best-so-far line.

    Up to :data:`SMALL_MULTIPLES_FROM` - 1 tasks share one plot, one colour each; more tasks
    get a panel each (small multiples, :data:`PANEL_COLUMNS` a row, each with its own latency
    axis), their legend shown once.

    Parameters
    ----------
    info : HistoryInfo
        From :func:`best_so_far_info`.
    task : str, optional
        Draw only this task (default: all tasks).
    x : {"trial", "time"}
        Against the trial number or against wall time (seconds since the first trial).
    """
    if x not in ("trial", "time"):
        raise ValueError(f"x must be 'trial' or 'time', got {x!r}")

    shown = [t for t in info.tasks if task is None or t.task == task]
    panels = len(shown) >= SMALL_MULTIPLES_FROM
    rows = math.ceil(len(shown) / PANEL_COLUMNS) if panels else 1
    # WebGL for every task's dots once the figure holds many (one canvas for the figure):
    # 28 panels of 700 SVG points each draw as slowly as one plot of 20,000
    dots = scatter_type(sum(len(h.trial) for h in shown))
    traces: list[Any] = []
    layout: dict[str, Any] = {}
    drawn: list[Any] = []  # the y values drawn, for the log axis's range and ticks
    legend: set[str] = set()  # legend entries shown once across the panels
    for k, hist in enumerate(shown):
        # a panel's own axes: x, y for the first, x2, y2... (plotly's names)
        suffix = "" if k == 0 else str(k + 1)
        axes = {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"} if panels else {}
        mine = _task_traces(info, hist, x, prefix=f"{hist.task}: " if len(shown) > 1
                            and not panels else "", panels=panels, legend=legend, dots=dots,
                            axes=axes)
        if panels:
            layout.update(_panel_axes(k, rows, suffix, info.metric, mine.drawn))
            if k + PANEL_COLUMNS >= len(shown):  # nothing under it: the x axis's title
                layout[f"xaxis{suffix}"]["title"] = {
                    "text": info.trial_axis if x == "trial" else "Wall time (s)"}
            if k % PANEL_COLUMNS == 0:
                layout[f"yaxis{suffix}"]["title"] = {"text": info.label}
        traces += mine.traces
        drawn += mine.drawn
    fig = go.Figure(data=traces, layout=layout)
    if panels:
        fig.update_layout(annotations=[_panel_title(k, rows, h.task)
                                       for k, h in enumerate(shown)])
    title = "Best so far" + (f": {task}" if task else
                             f", {len(shown)} tasks (a panel each)" if panels else "")
    axis = info.trial_axis if x == "trial" else "Wall time (s)"
    fig.update_layout(
        title=title, height=380 if not panels else 90 + PANEL_ROW_PX * rows,
        margin={"l": 60, "r": 20, "t": 50 if not panels else 80, "b": 45 if not panels else 70},
    )
    if panels:
        # at the bottom right, clear of the title, the panels' titles and plotly's toolbar
        fig.update_layout(legend={"orientation": "h", "yref": "container", "y": 0.0,
                                  "yanchor": "bottom", "x": 1.0, "xanchor": "right"})
    else:
        fig.update_layout(xaxis_title=axis, yaxis_title=info.label)
        if info.metric == "latency_us":
            fig.update_yaxes(**log_axis(np.concatenate(drawn) if drawn else []))
    if not shown:
        note_figure(fig, "no trials yet" if task is None else f"no trials of task {task!r}")
    elif x == "time" and all(math.isnan(s) for h in shown for s in h.seconds):
        note_figure(fig, "no wall times: these trials carry no timestamps (and no tuning log)")
    elif not any(s == "ok" for h in shown for s in h.status):
        fig.add_annotation(text="no trial succeeded yet", x=0.5, y=0.9, xref="paper",
                           yref="paper", showarrow=False, font={"size": 14, "color": "#555"})
    return fig


class _Traces(NamedTuple):
    traces: list[Any]
    drawn: list[Any]  # y values, for the log axis


def _task_traces(info: HistoryInfo, hist: TaskHistory, x: str, *, prefix: str, panels: bool,
                 legend: set[str], dots: Any, axes: dict) -> _Traces:
    """One task's traces: trials, the best-so-far steps, failures on the axis floor. In small
    multiples every task has the same colours and each legend entry appears once."""

    xs = np.asarray(hist.trial if x == "trial" else hist.seconds, dtype=float)
    values = np.asarray(hist.value, dtype=float)
    status = np.asarray(hist.status, dtype=object)
    ok, bad = np.flatnonzero(status == "ok"), np.flatnonzero(status != "ok")

    def shared(name: str, style: dict) -> dict:
        if not panels:
            return {"name": f"{prefix}{name}"}
        first = name not in legend
        legend.add(name)
        return {"name": name, "legendgroup": name, "showlegend": first, **style}

    marker = {"size": 5 if not panels else 4, "opacity": 0.55}
    traces = [dots(x=xs[ok], y=values[ok], mode="markers", **axes,
                   **shared("trial", {"marker": {**marker, "color": _DOT}}),
                   **({} if panels else {"marker": marker}))]
    best = np.asarray(hist.best, dtype=float)
    steps = step_points(best)
    line = {"shape": "hv", "width": 2.5 if not panels else 2}
    traces.append(go.Scatter(x=xs[steps], y=best[steps], mode="lines", **axes,
                             **shared("best so far", {"line": {**line, "color": _LINE}}),
                             **({} if panels else {"line": line})))
    # Failures have no latency: mark them on the axis floor so they stay visible.
    finite = values[~np.isnan(values)]
    floor = (float(finite.min()) if info.metric == "latency_us" else 0.0) if len(finite) else 0.0
    for name in dict.fromkeys(failure_style(hist.status[i])[0] for i in bad):
        mine = [i for i in bad if failure_style(hist.status[i])[0] == name]
        traces.append(dots(x=xs[mine], y=np.full(len(mine), floor), mode="markers", **axes,
                           marker=failure_style(hist.status[mine[0]])[1],
                           **shared(name, {}),
                           **failure_hover([hist.status[i] for i in mine])))
    return _Traces(traces, [values[ok], np.full(min(len(bad), 1), floor)])


#: Space between the panels of the small multiples (share of the figure).
_H_GAP = 0.06


def _panel_box(k: int, rows: int) -> tuple[list[float], list[float]]:
    """The x and y domains of panel ``k`` (row by row from the top left), as
    ``make_subplots`` lays out a grid of :data:`PANEL_COLUMNS` (not called: a figure of 28
    panels built cell by cell cost 0.5 s)."""
    v_gap = min(0.12, 0.5 / rows)
    width = (1 - _H_GAP * (PANEL_COLUMNS - 1)) / PANEL_COLUMNS
    height = (1 - v_gap * (rows - 1)) / rows
    col, row = k % PANEL_COLUMNS, k // PANEL_COLUMNS
    left, top = col * (width + _H_GAP), 1 - row * (height + v_gap)
    # rounding could leave the last panel a hair outside [0, 1], which plotly refuses
    return [max(0.0, left), min(1.0, left + width)], [max(0.0, top - height), min(1.0, top)]


def _panel_axes(k: int, rows: int, suffix: str, metric: str, drawn: list[Any]) -> dict:
    """The layout of panel ``k``'s axes: where it sits, and its own latency axis."""
    xs, ys = _panel_box(k, rows)
    y_axis: dict[str, Any] = {"domain": ys, "anchor": f"x{suffix}"}
    if metric == "latency_us":
        y_axis.update(log_axis(np.concatenate(drawn)))
    return {f"xaxis{suffix}": {"domain": xs, "anchor": f"y{suffix}"}, f"yaxis{suffix}": y_axis}


def _panel_title(k: int, rows: int, task: str) -> dict:
    """Panel ``k``'s title, centred above it (as ``make_subplots``'s subplot titles)."""
    xs, ys = _panel_box(k, rows)
    return {"text": _short(task), "x": (xs[0] + xs[1]) / 2, "y": ys[1], "xref": "paper",
            "yref": "paper", "xanchor": "center", "yanchor": "bottom", "showarrow": False,
            "font": {"size": 11}}


def _short(task: str, width: int = 22) -> str:
    """A panel's title: the task name, without a ``fused_`` prefix when too long, cut to
    ``width`` characters (a panel is about 130 px wide: longer titles ran into each other)."""
    if len(task) > width and task.startswith("fused_"):
        task = task[len("fused_"):]
    return task if len(task) <= width else task[: width - 1] + "…"
