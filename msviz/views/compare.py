"""Several runs side by side: each one's best latency so far against trials or wall time, and a
summary (best, speedup over the first run, trials to get within 5% of the best of all).

A run of one task is compared by its best latency so far; a run of a model by its estimated
model latency (the sum of weight x best latency over its tasks, unknown until every task has a
successful trial; see :mod:`msviz.views.tasks`). Both are the same sum: one task of weight 1.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import pandas as pd

from msviz.errors import MsvizWarning
from msviz.records.many_runs import run_names
from msviz.views._plotly_imports import go
from msviz.views.common import log_axis, note_figure, quiet_empty
from msviz.views.tasks import model_latency_info

__all__ = ["CompareInfo", "RunCurve", "RunSummary", "compare_figure", "compare_info",
           "run_names", "summary_frame"]

#: How close to the best of all runs a run must get for "trials to within 5%".
WITHIN = 0.05

_LAYOUT = {"height": 380, "margin": {"l": 60, "r": 20, "t": 50, "b": 45},
           "legend": {"orientation": "h", "y": -0.2}}


class RunCurve(NamedTuple):
    """One run's best latency so far after each of its trials (NaN while unknown)."""

    name: str
    trial: tuple[int, ...]
    seconds: tuple[float, ...]  # since the run started, else its first trial (NaN: unknown)
    best_us: tuple[float, ...]


class RunSummary(NamedTuple):
    """One row of the comparison table."""

    name: str
    tasks: int
    trials: int
    failed: int
    best_us: float  # NaN: never known
    speedup: float  # the first run's best / this run's best (NaN if either is unknown)
    trials_to_within: int | None  # trials until within WITHIN of the best of all runs
    wall_s: float  # from the run's start (else its first trial) to its last trial; NaN: unknown


class CompareInfo(NamedTuple):
    """Everything the comparison draws."""

    label: str  # what the y axis shows
    runs: tuple[RunCurve, ...]
    summary: tuple[RunSummary, ...]


def compare_info(runs: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]], *,
                 workloads: Mapping[str, Iterable[str]] | None = None,
                 started: Mapping[str, Any] | None = None) -> CompareInfo:
    """Compare runs given as ``{name: (trials, tasks)}`` (``Run.trials``, ``Run.tasks``).

    The first run is the baseline of ``speedup``. Runs of other workloads are compared all
    the same, with a :class:`MsvizWarning` naming their tasks. ``workloads`` gives each run's
    workload keys (``Run.workload_key``: stock and msviz name the same workload differently);
    without it the task names are compared. ``started`` gives each run's start
    (:func:`msviz.records.quality.run_started`): wall times count from it, else from the run's
    first trial (whose whole batch then sits at 0 s).
    """
    if not runs:
        raise ValueError("compare_info needs at least one run")
    names = {name: frozenset(tasks["task"].astype(str)) for name, (_, tasks) in runs.items()}
    keys = names if workloads is None else {n: frozenset(map(str, workloads[n])) for n in runs}
    if len(set(keys.values())) > 1:
        listed = "; ".join(f"{name}: {', '.join(sorted(t)) or 'none'}"
                           for name, t in names.items())
        warnings.warn(f"the runs tune different workloads ({listed}): their latencies are not "
                      "comparable", MsvizWarning, stacklevel=2)
    model = any(len(t) > 1 for t in names.values())
    curves = []
    for name, (trials, tasks) in runs.items():
        if trials.empty:
            curves.append(RunCurve(name, (), (), ()))
            continue
        with quiet_empty():
            latency = model_latency_info(tasks, trials, started=(started or {}).get(name))
        curves.append(RunCurve(name, latency.trial, latency.seconds, latency.latency_us))
    finals = [_last_known(c.best_us) for c in curves]
    best_all = min((f for f in finals if not math.isnan(f)), default=math.nan)
    summary = []
    for curve, final, (trials, tasks) in zip(curves, finals, runs.values(), strict=True):
        within = None
        if not math.isnan(best_all):
            within = next((i + 1 for i, v in enumerate(curve.best_us)
                           if v <= best_all * (1 + WITHIN)), None)
        seconds = [s for s in curve.seconds if not math.isnan(s)]
        failed = int((trials["status"] != "ok").sum()) if len(trials) else 0
        summary.append(RunSummary(
            curve.name, len(tasks), len(trials), failed, final, finals[0] / final
            if not (math.isnan(final) or math.isnan(finals[0])) else math.nan, within,
            max(seconds) if seconds else math.nan))
    label = "Estimated model latency (µs)" if model else "Best latency so far (µs)"
    return CompareInfo(label, tuple(curves), tuple(summary))


def _last_known(values: tuple[float, ...]) -> float:
    known = [v for v in values if not math.isnan(v)]
    return known[-1] if known else math.nan


def summary_frame(info: CompareInfo) -> pd.DataFrame:
    """The summary as a table, one row per run (index: the run's name)."""
    columns = {"tasks": "Tasks", "trials": "Trials", "failed": "Failed",
               "best_us": "Best (us)", "speedup": f"Speedup over {info.summary[0].name}"
               if info.summary else "Speedup", "trials_to_within": "Trials to within 5%",
               "wall_s": "Wall time (s)"}
    frame = pd.DataFrame([s._asdict() for s in info.summary],
                         columns=["name", *columns]).set_index("name")
    frame.index.name = "Run"
    frame["trials_to_within"] = frame["trials_to_within"].astype("Int64")
    return frame.rename(columns=columns)


def compare_figure(info: CompareInfo, *, x: str = "trial") -> Any:
    """Each run's best so far (a step line) against the trial number or wall time; a log
    latency axis, so that the last few percent between runs show beside the first trials."""
    if x not in ("trial", "time"):
        raise ValueError(f"x must be 'trial' or 'time', got {x!r}")
    fig = go.Figure(layout={**_LAYOUT, "title": "Runs compared",
                            "xaxis": {"title": "Trial" if x == "trial" else "Wall time (s)"},
                            "yaxis": {"title": info.label, "type": "log"}})
    drawn, ys = 0, []
    for curve in info.runs:
        xs = curve.trial if x == "trial" else curve.seconds
        points = [(a, b) for a, b in zip(xs, curve.best_us, strict=True)
                  if not (math.isnan(a) or math.isnan(b))]
        if not points:
            continue
        drawn += 1
        ys += [b for _, b in points]
        fig.add_trace(go.Scatter(x=[a for a, _ in points], y=[b for _, b in points],
                                 mode="lines", line={"shape": "hv", "width": 2},
                                 name=curve.name))
    if not drawn:
        why = "no timestamps to draw against" if x == "time" and any(
            c.trial for c in info.runs) else "no successful trial in any run yet"
        return note_figure(fig, why)
    fig.update_yaxes(**log_axis(ys))
    if x == "time":  # from the runs' start: a late first batch shows as late
        fig.update_xaxes(rangemode="tozero")
    return fig
