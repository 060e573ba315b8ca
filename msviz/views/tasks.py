"""The model view: MetaSchedule's per-task table with the scheduler's gradients, the estimated
model latency over the run, trials per task (the end-to-end check: :mod:`msviz.views.end_to_end`).

A model's tasks come from the session's ``tasks`` event (a list of dicts: ``index``, ``name``,
``flop``, ``weight``, ...) or from ``Run.tasks`` (a finished work dir); the numbers come from
the trials table, the gradients and the next pick from the scheduler's last ``scheduled``
event, the end-to-end result from an ``end_to_end`` event.

The estimated model latency is MetaSchedule's "Total latency": the sum over tasks of
weight x best latency. A task without a successful trial counts at its *untuned* time when one
is known (an msviz session times each task's unscheduled PrimFunc at its start: the ``untuned``
event and sidecar line), as the time-to-quality curve counts it
(:func:`msviz.records.quality.model_estimate`); with neither, the estimate is **unknown**:
leaving the task out would make the model look faster than any build of it can be.
``ModelLatencyInfo.known_from`` says from which trial it is known, ``TasksInfo.untuned_tasks``
how many tasks it still counts at their untuned time.

The same concept read: :mod:`msviz.records.tasks`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from msviz.errors import MsvizWarning
from msviz.records import quality as Q
from msviz.views._plotly_imports import go
from msviz.views.common import log_axis, note_figure, step_points
from msviz.views.end_to_end import EndToEndInfo, end_to_end_info
from msviz.views.history import SMALL_MULTIPLES_FROM, trial_seconds

__all__ = [
    "TASK_TABLE_COLUMNS",
    "ModelLatencyInfo",
    "TaskTrials",
    "TasksInfo",
    "model_latency_figure",
    "model_latency_info",
    "task_trials_figure",
    "tasks_info",
    "total_text",
    "untuned_times",
]

#: The columns of :attr:`TasksInfo.frame` (index: ``ID``), MetaSchedule's table plus the
#: scheduler's view of each task.
TASK_TABLE_COLUMNS = ["Name", "FLOP", "Weight", "Speed (GFLOPS)", "Latency (us)",
                      "Weighted Latency (us)", "Trials", "Done", "Gradient", "Next"]

_LAYOUT = {"height": 340, "margin": {"l": 60, "r": 20, "t": 50, "b": 45}}


class TasksInfo(NamedTuple):
    """The per-task table and what the scheduler said last."""

    frame: pd.DataFrame  # TASK_TABLE_COLUMNS, index "ID"
    next_pick: int | None  # the task the last ``scheduled`` event picked
    scheduler: str | None  # "forecast" | "gradient" | "round-robin"
    reason: str | None  # why it picked that task
    total_latency_us: float | None  # weight x (best, else untuned) summed; None: some has neither
    untuned_tasks: int = 0  # tasks counted at their untuned time in the total


class TaskTrials(NamedTuple):
    """One task's running trial count against the run's trial number and wall time."""

    name: str
    trial: tuple[int, ...]  # the run's 0-based trial number of each of the task's trials
    seconds: tuple[float, ...]  # wall time since the run's first trial (NaN if unknown)
    count: tuple[int, ...]  # 1, 2, 3...


class ModelLatencyInfo(NamedTuple):
    """The estimated model latency after each trial, trials per task, the end-to-end result."""

    trial: tuple[int, ...]  # 0-based trial number
    seconds: tuple[float, ...]  # wall time since the first trial (NaN if unknown)
    latency_us: tuple[float, ...]  # estimated model latency after that trial (NaN: unknown)
    known_from: int | None  # the first trial after which every task had a latency (or untuned)
    tasks: tuple[TaskTrials, ...]
    end_to_end: EndToEndInfo | None


class _Task(NamedTuple):
    index: int
    name: str
    flop: float
    weight: float
    done: bool | None


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """A field of an event (``Event.get``) or of a plain dict."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return obj.get(key, default)


def _tasks(tasks: Any) -> list[_Task]:
    """The tasks as (index, name, flop, weight, done), from a ``tasks`` event's list, the event
    itself, or ``Run.tasks``; an unknown weight counts as 1, as MetaSchedule's default."""
    if tasks is None:
        raise ValueError("tasks is None: pass a 'tasks' event's list or Run.tasks")
    if isinstance(tasks, pd.DataFrame):
        missing = {"task", "flop", "weight"} - set(tasks.columns)
        if missing:
            raise ValueError(f"tasks frame lacks column(s) {sorted(missing)}; pass Run.tasks")
        index = tasks["index"] if "index" in tasks.columns else range(len(tasks))
        done = tasks["done"] if "done" in tasks.columns else [None] * len(tasks)
        rows = zip(index, tasks["task"], tasks["flop"], tasks["weight"], done, strict=True)
        out = [_Task(int(i), str(n), float(f), 1.0 if w != w else float(w),
                     None if d is None or d != d else bool(d)) for i, n, f, w, d in rows]
    else:
        if not isinstance(tasks, Sequence) and _get(tasks, "tasks") is not None:
            tasks = _get(tasks, "tasks")  # the event itself
        out = []
        for pos, entry in enumerate(tasks):
            if not isinstance(entry, Mapping) or "name" not in entry:
                raise ValueError(f"task {pos} of the tasks list is not a dict with a 'name': "
                                 f"{entry!r}")
            weight = entry.get("weight")
            flop = entry.get("flop")
            out.append(_Task(int(entry.get("index", pos)), str(entry["name"]),
                             math.nan if flop is None else float(flop),
                             1.0 if weight is None else float(weight), None))
    return sorted(out, key=lambda t: t.index)


def _best_by_task(trials: pd.DataFrame) -> tuple[dict[str, float], dict[str, int]]:
    if trials is None or trials.empty:
        return {}, {}
    counts = trials.groupby("task", sort=False).size()
    best = trials.groupby("task", sort=False)["latency_us"].min()
    return ({str(k): float(v) for k, v in best.items() if v == v},
            {str(k): int(v) for k, v in counts.items()})


def _per_task(scheduled: Any, key: str, n: int) -> list:
    values = list(_get(scheduled, key) or [])
    return values + [None] * (n - len(values)) if len(values) <= n else values[:n]


def total_text(info: TasksInfo, digits: int = 4, unit: str = "") -> str:
    """The total as the table, the report and the progress line say it: the number and
    ``unit`` (with how many tasks are counted untuned), or why it is unknown."""
    if info.total_latency_us is None:
        return "unknown until every task has a successful trial or an untuned time"
    text = f"{info.total_latency_us:.{digits}f}{unit}"
    if info.untuned_tasks:
        text += (f" ({info.untuned_tasks} task{'s' if info.untuned_tasks > 1 else ''} at "
                 "the untuned time)")
    return text


def untuned_times(untuned: Any = None, run: Any = None) -> dict[str, float | None]:
    """Each task's untuned time (µs) from a session's ``untuned`` event (or its data), else a
    work dir's sidecar (``run``, a ``Run``); {} when neither holds one."""
    if untuned is not None:
        return {str(t["name"]): t.get("untuned_us") for t in _get(untuned, "tasks") or ()}
    return Q.run_untuned(run) if run is not None else {}


def tasks_info(tasks: Any, trials: pd.DataFrame | None, scheduled: Any = None, *,
               done: Iterable[int] = (), untuned_us: Mapping[str, float | None] | None = None
               ) -> TasksInfo:
    """MetaSchedule's per-task table, with the scheduler's gradient per task and its next pick.

    Parameters
    ----------
    tasks : list of dict | Event | pandas.DataFrame
        The ``tasks`` event (or its ``tasks`` list) or ``Run.tasks``.
    trials : pandas.DataFrame
        ``Run.trials`` / ``Session.trials`` (columns ``task`` and ``latency_us``).
    scheduled : Event | dict, optional
        The scheduler's last ``scheduled`` event: gradients, pick, reason, done flags.
    done : iterable of int
        Indexes of tasks a ``task_done`` event ended.
    untuned_us : mapping of str to float, optional
        Task name -> untuned time (µs): a task without a successful trial counts at it in
        the total (:func:`untuned_times` reads them).

    Returns
    -------
    info : TasksInfo
        ``Speed (GFLOPS)`` is FLOP / best latency; ``Weighted Latency (us)`` is weight x best
        latency; a task without a successful trial has NaN there.
    """
    listed = _tasks(tasks)
    best, counts = _best_by_task(trials)
    n = len(listed)
    positions = {t.index: pos for pos, t in enumerate(listed)}
    gradients = [None] * n
    flags = [t.done for t in listed]
    if scheduled is not None:  # the event lists tasks by index, 0..n-1
        for i, (g, d) in enumerate(zip(_per_task(scheduled, "gradients", n),
                                       _per_task(scheduled, "done", n), strict=True)):
            if i in positions:
                gradients[positions[i]] = None if g is None else float(g)
                if d is not None:
                    flags[positions[i]] = bool(d)
    for i in done:
        if i in positions:
            flags[positions[i]] = True
    pick = _get(scheduled, "pick")
    pick = None if pick is None else int(pick)
    rows = []
    for t, gradient, flag in zip(listed, gradients, flags, strict=True):
        latency = best.get(t.name, math.nan)
        rows.append({
            "ID": t.index, "Name": t.name, "FLOP": t.flop, "Weight": t.weight,
            "Speed (GFLOPS)": t.flop / latency / 1e3 if latency == latency else math.nan,
            "Latency (us)": latency, "Weighted Latency (us)": t.weight * latency,
            "Trials": counts.get(t.name, 0), "Done": bool(flag),
            "Gradient": math.nan if gradient is None else gradient, "Next": t.index == pick,
        })
    frame = pd.DataFrame(rows, columns=["ID", *TASK_TABLE_COLUMNS]).set_index("ID")
    total, untuned = Q.model_estimate({t.name: t.weight for t in listed}, best,
                                      dict(untuned_us or {}))
    known = bool(n) and math.isfinite(total)
    return TasksInfo(frame, pick, _get(scheduled, "scheduler"), _get(scheduled, "reason"),
                     total if known else None, untuned if known else 0)


def model_latency_info(tasks: Any, trials: pd.DataFrame, end_to_end: Any = None, *,
                       untuned_us: Mapping[str, float | None] | None = None,
                       started: Any = None) -> ModelLatencyInfo:
    """The estimated model latency (sum of weight x best latency) after each trial.

    Parameters
    ----------
    tasks : list of dict | Event | pandas.DataFrame
        As for :func:`tasks_info` (names and weights).
    trials : pandas.DataFrame
        ``Run.trials`` / ``Session.trials`` in measuring order.
    end_to_end : Event | dict, optional
        The last ``end_to_end`` event.
    untuned_us : mapping of str to float, optional
        Task name -> untuned time (µs), counted until the task has a successful trial.
    started : datetime, optional
        When the run started (:func:`msviz.records.quality.run_started`): ``seconds`` count
        from it, else from the first trial.

    Returns
    -------
    info : ModelLatencyInfo
        ``latency_us`` is NaN until every task has a successful trial or an untuned time (see
        the module doc).
    """
    listed = _tasks(tasks)
    e2e = None if end_to_end is None else end_to_end_info(end_to_end)
    if trials is None or trials.empty:
        warnings.warn("no trials yet: no model latency to estimate", MsvizWarning, stacklevel=2)
        return ModelLatencyInfo((), (), (), None, tuple(TaskTrials(t.name, (), (), ())
                                                        for t in listed), e2e)

    # one pass of numpy over (trials x tasks), not a Python loop per trial and per task
    # (20,000 trials of 28 tasks: 1 s): each task's best so far in its column
    weights = {t.name: t.weight for t in listed}
    names = list(weights)
    codes = pd.Categorical(trials["task"].astype(str), categories=names).codes
    numbers = trials["trial"].astype(int).to_numpy()
    seconds = trial_seconds(trials, started).to_numpy(dtype=float)
    latency = trials["latency_us"].to_numpy(dtype=float)
    best = np.full((len(trials), len(names)), np.nan)
    mine = codes >= 0
    best[np.flatnonzero(mine), codes[mine]] = latency[mine]
    best = np.fmin.accumulate(best, axis=0)  # NaN (a failure) never replaces a best
    for j, name in enumerate(names):  # untried: its untuned time, if known
        base = (untuned_us or {}).get(name)
        if base is not None and math.isfinite(base):
            column = best[:, j]
            column[np.isnan(column)] = base
    estimate = np.zeros(len(trials))
    for j, name in enumerate(names):  # summed in the tasks' order, as MetaSchedule sums
        estimate += weights[name] * best[:, j]
    known = ~np.isnan(best).any(axis=1) if names else np.zeros(len(trials), dtype=bool)
    estimate[~known] = np.nan
    known_from = int(numbers[np.argmax(known)]) if known.any() else None
    per_task = []
    for t in listed:
        rows = np.flatnonzero(codes == names.index(t.name))
        per_task.append(TaskTrials(t.name, tuple(numbers[rows].tolist()),
                                   tuple(seconds[rows].tolist()),
                                   tuple(range(1, len(rows) + 1))))
    return ModelLatencyInfo(tuple(numbers.tolist()), tuple(seconds.tolist()),
                            tuple(estimate.tolist()), known_from,
                            tuple(per_task), e2e)


def _x(info_x: Sequence[float], x: str) -> str:
    if x not in ("trial", "time"):
        raise ValueError(f"x must be 'trial' or 'time', got {x!r}")
    return "Trial" if x == "trial" else "Wall time (s)"


def model_latency_figure(info: ModelLatencyInfo, *, x: str = "trial") -> Any:
    """The estimated model latency against the trial number or wall time; the end-to-end
    results (untuned, tuned) as horizontal lines when known."""

    title = _x(info.trial, x)
    xs = info.trial if x == "trial" else info.seconds
    # the title stays short, clear of the plot's toolbar; the axis says what is summed
    fig = go.Figure(layout={**_LAYOUT, "title": "Estimated model latency",
                            "xaxis": {"title": title},
                            "yaxis": {"title": "weight x best, summed (µs)"}})
    if not info.trial:
        return note_figure(fig, "no trials yet")
    latency = np.array(info.latency_us, dtype=float)
    known = ~np.isnan(latency)
    if not known.any():
        return note_figure(fig, "unknown until every task has a successful trial or an "
                                "untuned time")
    # only where the estimate steps (it changes with a task's new best: a few hundred points
    # of 20,000 trials); markers there, on the steps
    at = np.flatnonzero(known)[step_points(latency[known])]
    fig.add_trace(go.Scatter(
        x=np.array(xs, dtype=float)[at], y=latency[at], mode="lines+markers",
        line={"shape": "hv"}, marker={"size": 5 if len(at) <= MOST_MARKERS else 3},
        name="estimated (tasks)"))
    drawn = list(latency[at])
    e2e = info.end_to_end
    if e2e is not None:
        for value, name, dash in ((e2e.untuned_us, "end-to-end untuned", "dot"),
                                  (e2e.tuned_us, "end-to-end tuned", "dash")):
            if value is not None and value > 0:
                drawn.append(value)
                fig.add_hline(y=value, line={"dash": dash})
                # on a log axis an annotation's y is the log of the value (add_hline's own
                # label would sit at 10^value: off the plot)
                fig.add_annotation(text=f"{name}: {value:.3g} µs", x=0, xref="paper",
                                   xanchor="left", y=math.log10(value), yref="y",
                                   yanchor="bottom", showarrow=False)
    # log: the untuned model can be 10x the estimate, which would flatten its steps
    fig.update_yaxes(**log_axis(drawn))
    return fig


#: Above this many points a line of the Tasks tab is drawn without markers.
MOST_MARKERS = 500
#: Columns (bins of the run's trials or wall time) of the trials-per-task heat map.
TRIAL_BINS = 60


def task_trials_figure(info: ModelLatencyInfo, *, x: str = "trial") -> Any:
    """Each task's trial count against the run's trial number or wall time: a line each, or
    from :data:`~msviz.views.history.SMALL_MULTIPLES_FROM` tasks on, a heat map (a row per
    task, a column per bin of the run: how many trials the task got there), not 28 lines
    over one another."""

    title = _x(info.trial, x)
    fig = go.Figure(layout={**_LAYOUT, "title": "Trials per task",
                            "xaxis": {"title": title}, "yaxis": {"title": "Trials"}})
    if not any(t.trial for t in info.tasks):
        return note_figure(fig, "no trials yet")
    if len(info.tasks) >= SMALL_MULTIPLES_FROM:
        return _trials_heat_map(fig, info, x)
    for t in info.tasks:
        xs = t.trial if x == "trial" else t.seconds
        many = len(xs) > MOST_MARKERS
        fig.add_trace(go.Scatter(x=np.array(xs, dtype=float), y=np.array(t.count, dtype=float),
                                 mode="lines" if many else "lines+markers",
                                 line={"shape": "hv"}, marker={"size": 5}, name=t.name))
    return fig


def _trials_heat_map(fig: Any, info: ModelLatencyInfo, x: str) -> Any:
    """Trials per task as a heat map: tasks top to bottom in their order, the run in
    :data:`TRIAL_BINS` columns."""

    every = np.array(info.trial if x == "trial" else info.seconds, dtype=float)
    every = every[np.isfinite(every)]
    if not len(every):
        return note_figure(fig, "no wall times: these trials carry no timestamps")
    lo, hi = float(every.min()), float(every.max())
    edges = np.linspace(lo, hi if hi > lo else lo + 1, min(TRIAL_BINS, len(every)) + 1)
    counts = [np.histogram(np.array(t.trial if x == "trial" else t.seconds, dtype=float),
                           bins=edges)[0] for t in info.tasks]
    width = edges[1] - edges[0]
    unit = "trials" if x == "trial" else "s"
    fig.add_trace(go.Heatmap(
        z=np.array(counts, dtype=float), x=(edges[:-1] + edges[1:]) / 2,
        y=[t.name for t in info.tasks], colorscale="Blues", zmin=0,
        colorbar={"title": {"text": "trials"}}, xgap=0, ygap=1,
        hovertemplate=f"%{{y}}<br>%{{z}} trials in the {width:.3g} {unit} around %{{x:.0f}}"
                      "<extra></extra>"))
    fig.update_layout(
        title="Trials per task",  # short: a longer one runs under the plot's toolbar
        xaxis_title=f"{_x(info.trial, x)} (a column per {width:.3g} {unit})",
        height=max(_LAYOUT["height"], 110 + 16 * len(info.tasks)),
        yaxis={"title": None, "autorange": "reversed", "automargin": True,
               "tickfont": {"size": 10}})
    return fig
