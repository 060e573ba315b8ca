"""Best-so-far history: each trial's latency (or GFLOPS) and the running best, per task."""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import pandas as pd

from msviz.errors import MsvizWarning

__all__ = [
    "HistoryInfo",
    "TaskHistory",
    "best_so_far_figure",
    "best_so_far_info",
    "seconds_since_first",
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


def best_so_far_info(trials: pd.DataFrame, *, metric: str = "latency_us") -> HistoryInfo:
    """The best-so-far history of every task in a trials table.

    Parameters
    ----------
    trials : pandas.DataFrame
        ``Run.trials`` (columns ``task``, ``task_trial``, ``status`` and the metric).
    metric : {"latency_us", "gflops"}
        Lower is better for latency, higher for GFLOPS.
    """
    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {sorted(_METRICS)}, got {metric!r}")
    label, better = _METRICS[metric]
    if trials.empty:
        warnings.warn("no trials to plot yet", MsvizWarning, stacklevel=2)
        return HistoryInfo(metric, label, ())
    seconds = _seconds(trials)
    out = []
    for task, group in trials.groupby("task", sort=False):
        values = [float(v) for v in group[metric]]
        best, bests = math.nan, []
        for v in values:
            if not math.isnan(v):
                best = v if math.isnan(best) else better(best, v)
            bests.append(best)
        out.append(
            TaskHistory(
                str(task),
                tuple(int(t) for t in group["task_trial"]),
                tuple(values),
                tuple(bests),
                tuple(str(s) for s in group["status"]),
                tuple(float(seconds[i]) for i in group.index),
            )
        )
    return HistoryInfo(metric, label, tuple(out))


def _seconds(trials: pd.DataFrame) -> pd.Series:
    """Seconds since the first trial: msviz's own timestamps, else the log's (1 s resolution)."""
    for column in ("timestamp", "logged_at"):
        if column in trials.columns and trials[column].notna().any():
            return seconds_since_first(trials[column])
    return pd.Series(math.nan, index=trials.index)


def seconds_since_first(stamps: pd.Series) -> pd.Series:
    """Seconds since the earliest of ``stamps`` (NaN where a stamp is missing).

    Takes datetimes (tz-aware or naive, any unit: pandas 2 stores ns, pandas 3 µs), ISO-8601
    text, or numbers, read as epoch seconds.
    """
    if pd.api.types.is_numeric_dtype(stamps) and not pd.api.types.is_bool_dtype(stamps):
        numbers = stamps.astype(float)
        return numbers - numbers.min()
    if not pd.api.types.is_datetime64_any_dtype(stamps):
        stamps = pd.to_datetime(stamps, utc=True, errors="coerce", format="ISO8601")
    # a timedelta's total_seconds() does not depend on the datetime unit
    return (stamps - stamps.min()).dt.total_seconds().astype(float)


def best_so_far_figure(
    info: HistoryInfo, *, task: str | None = None, x: str = "trial"
) -> object:
    """A plotly figure: every trial as a dot (failures as red crosses) and the best-so-far line.

    Parameters
    ----------
    info : HistoryInfo
        From :func:`best_so_far_info`.
    task : str, optional
        Draw only this task (default: all tasks, one colour each).
    x : {"trial", "time"}
        Against the trial number or against wall time (seconds since the first trial).
    """
    if x not in ("trial", "time"):
        raise ValueError(f"x must be 'trial' or 'time', got {x!r}")
    import plotly.graph_objects as go

    from msviz.views.common import failure_style, note_figure, scatter_type

    fig = go.Figure()
    shown = [t for t in info.tasks if task is None or t.task == task]
    for hist in shown:
        xs = hist.trial if x == "trial" else hist.seconds
        ok = [i for i, s in enumerate(hist.status) if s == "ok"]
        bad = [i for i, s in enumerate(hist.status) if s != "ok"]
        prefix = f"{hist.task}: " if len(shown) > 1 else ""
        dots = scatter_type(len(hist.trial))
        fig.add_trace(
            dots(
                x=[xs[i] for i in ok], y=[hist.value[i] for i in ok], mode="markers",
                name=f"{prefix}trial", marker={"size": 5, "opacity": 0.55},
            )
        )
        fig.add_trace(
            go.Scatter(
                x=list(xs), y=list(hist.best), mode="lines", name=f"{prefix}best so far",
                line={"shape": "hv", "width": 2.5},
            )
        )
        # Failures have no latency: mark them on the axis floor so they stay visible.
        finite = [v for v in hist.value if not math.isnan(v)]
        floor = (min(finite) if info.metric == "latency_us" else 0.0) if finite else 0.0
        for name in dict.fromkeys(failure_style(hist.status[i])[0] for i in bad):
            mine = [i for i in bad if failure_style(hist.status[i])[0] == name]
            fig.add_trace(
                dots(
                    x=[xs[i] for i in mine], y=[floor] * len(mine), mode="markers",
                    name=f"{prefix}{name}", marker=failure_style(hist.status[mine[0]])[1],
                    text=[hist.status[i] for i in mine], hovertemplate="%{x}: %{text}",
                )
            )
    title = "Best so far" + (f": {task}" if task else "")
    fig.update_layout(
        title=title, xaxis_title="Trial" if x == "trial" else "Wall time (s)",
        yaxis_title=info.label, height=380,
        margin={"l": 60, "r": 20, "t": 50, "b": 45},
    )
    if info.metric == "latency_us":
        fig.update_yaxes(type="log")
    if not shown:
        note_figure(fig, "no trials yet" if task is None else f"no trials of task {task!r}")
    elif x == "time" and all(math.isnan(s) for h in shown for s in h.seconds):
        note_figure(fig, "no wall times: these trials carry no timestamps (and no tuning log)")
    elif not any(s == "ok" for h in shown for s in h.status):
        fig.add_annotation(text="no trial succeeded yet", x=0.5, y=0.9, xref="paper",
                           yref="paper", showarrow=False, font={"size": 14, "color": "#555"})
    return fig
