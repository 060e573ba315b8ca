"""Best-so-far history: each trial's latency (or GFLOPS) and the running best, per task."""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import pandas as pd

from msviz.errors import MsvizWarning

__all__ = ["HistoryInfo", "TaskHistory", "best_so_far_figure", "best_so_far_info"]

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
    if "timestamp" in trials.columns and trials["timestamp"].notna().any():
        stamps = pd.to_numeric(trials["timestamp"], errors="coerce")
        return stamps - stamps.min()
    if "logged_at" in trials.columns and trials["logged_at"].notna().any():
        stamps = pd.to_datetime(trials["logged_at"])
        return (stamps - stamps.min()).dt.total_seconds()
    return pd.Series(math.nan, index=trials.index)


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

    fig = go.Figure()
    shown = [t for t in info.tasks if task is None or t.task == task]
    for hist in shown:
        xs = hist.trial if x == "trial" else hist.seconds
        ok = [i for i, s in enumerate(hist.status) if s == "ok"]
        bad = [i for i, s in enumerate(hist.status) if s != "ok"]
        prefix = f"{hist.task}: " if len(shown) > 1 else ""
        fig.add_trace(
            go.Scatter(
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
        if bad:
            # Failures have no latency: mark them on the axis floor so they stay visible.
            finite = [v for v in hist.value if not math.isnan(v)]
            floor = min(finite) if finite else 0.0
            fig.add_trace(
                go.Scatter(
                    x=[xs[i] for i in bad], y=[floor] * len(bad), mode="markers",
                    name=f"{prefix}failed", marker={"symbol": "x", "color": "crimson", "size": 8},
                    text=[hist.status[i] for i in bad], hovertemplate="%{x}: %{text}",
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
    return fig
