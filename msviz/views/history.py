"""Best-so-far history: each trial's latency (or GFLOPS) and the running best, per task."""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import pandas as pd

from msviz.errors import MsvizWarning
from msviz.views.common import failure_hover, failure_style, log_axis, note_figure, scatter_type

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
    import numpy as np

    seconds = trial_seconds(trials)
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


def trial_seconds(trials: pd.DataFrame) -> pd.Series:
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
    import numpy as np
    import plotly.graph_objects as go

    fig = go.Figure()
    shown = [t for t in info.tasks if task is None or t.task == task]
    drawn: list[Any] = []  # the y values drawn, for the log axis's range and ticks
    for hist in shown:
        # numpy arrays: plotly checks a list element by element, an array at once
        xs = np.asarray(hist.trial if x == "trial" else hist.seconds, dtype=float)
        values = np.asarray(hist.value, dtype=float)
        status = np.asarray(hist.status, dtype=object)
        ok = np.flatnonzero(status == "ok")
        bad = np.flatnonzero(status != "ok")
        prefix = f"{hist.task}: " if len(shown) > 1 else ""
        dots = scatter_type(len(hist.trial))
        fig.add_trace(
            dots(
                x=xs[ok], y=values[ok], mode="markers",
                name=f"{prefix}trial", marker={"size": 5, "opacity": 0.55},
            )
        )
        steps = _steps(np.asarray(hist.best, dtype=float))
        fig.add_trace(
            go.Scatter(
                x=xs[steps], y=np.asarray(hist.best, dtype=float)[steps], mode="lines",
                name=f"{prefix}best so far", line={"shape": "hv", "width": 2.5},
            )
        )
        # Failures have no latency: mark them on the axis floor so they stay visible.
        finite = values[~np.isnan(values)]
        floor = (float(finite.min()) if info.metric == "latency_us" else 0.0) \
            if len(finite) else 0.0
        drawn += [values[ok], np.full(min(len(bad), 1), floor)]
        for name in dict.fromkeys(failure_style(hist.status[i])[0] for i in bad):
            mine = [i for i in bad if failure_style(hist.status[i])[0] == name]
            fig.add_trace(
                dots(
                    x=xs[mine], y=np.full(len(mine), floor), mode="markers",
                    name=f"{prefix}{name}", marker=failure_style(hist.status[mine[0]])[1],
                    **failure_hover([hist.status[i] for i in mine]),
                )
            )
    title = "Best so far" + (f": {task}" if task else "")
    fig.update_layout(
        title=title, xaxis_title=info.trial_axis if x == "trial" else "Wall time (s)",
        yaxis_title=info.label, height=380,
        margin={"l": 60, "r": 20, "t": 50, "b": 45},
    )
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


def _steps(best: Any) -> Any:
    """Indices where a best-so-far series changes, plus its first and last point: with the
    ``hv`` line shape these draw the same steps as every point (NaN before the first success
    stays a gap)."""
    import numpy as np

    if len(best) == 0:
        return np.arange(0)
    same = (best[1:] == best[:-1]) | (np.isnan(best[1:]) & np.isnan(best[:-1]))
    keep = np.concatenate([[True], ~same])
    keep[-1] = True
    return np.flatnonzero(keep)
