"""Infos and figures for the trial plots: every trial's latency, cost model vs measurement,
decisions vs performance (parallel coordinates), and per-task bars.

The same concept one room up: :mod:`msviz.widgets.plots` renders these infos as widgets."""

from __future__ import annotations

import json
import math
import warnings
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from msviz.errors import MsvizWarning
from msviz.views._plotly_imports import go, sample_colorscale
from msviz.views.common import (
    failure_hover,
    failure_style,
    log_axis,
    note_figure,
    scatter_type,
)

__all__ = [
    "BatchPrediction",
    "CostModelInfo",
    "DecisionPlotInfo",
    "TaskBarsInfo",
    "TrialScatterInfo",
    "cost_model_figure",
    "cost_model_info",
    "decision_plot_figure",
    "decision_plot_info",
    "task_bars_figure",
    "task_bars_info",
    "trial_scatter_figure",
    "trial_scatter_info",
]

# No template here: building one costs ~5 ms a figure; renderers style once (see widgets.common)
_LAYOUT = {"height": 380, "margin": {"l": 60, "r": 20, "t": 50, "b": 45}}


class TrialScatterInfo(NamedTuple):
    """Every trial's latency, grouped for colouring; failed trials (no latency) by status."""

    color_by: str
    groups: tuple[tuple[str, tuple[int, ...], tuple[float, ...]], ...]  # (label, trial, latency)
    failed: tuple[tuple[str, tuple[int, ...]], ...] = ()  # (status, trials)


def trial_scatter_info(trials: pd.DataFrame, *, color_by: str = "status") -> TrialScatterInfo:
    """Trials grouped by ``color_by`` (``status``, ``generation``, ``task``, ``batch``...).

    Failed trials have no latency: they are listed by status in ``failed`` instead.
    """
    if color_by not in trials.columns:
        raise ValueError(f"cannot colour by {color_by!r}; columns: {', '.join(trials.columns)}")
    done = trials["latency_us"].notna()
    ok = trials.loc[done, list(dict.fromkeys(["trial", "latency_us", color_by]))]
    groups = tuple(
        (str(label), tuple(g["trial"].to_numpy(dtype="int64").tolist()),
         tuple(g["latency_us"].to_numpy(dtype=float).tolist()))
        for label, g in ok.groupby(ok[color_by].astype(str), sort=True)
    )
    bad = trials.loc[~done, ["trial", "status"]]
    failed = tuple(
        (str(status), tuple(g["trial"].to_numpy(dtype="int64").tolist()))
        for status, g in bad.groupby(bad["status"].astype(str), sort=True)
    )
    return TrialScatterInfo(color_by, groups, failed)


def trial_scatter_figure(info: TrialScatterInfo) -> Any:
    """Trial number against latency, one colour per group; failures on the axis floor."""

    points = sum(len(x) for _, x, _ in info.groups) + sum(len(x) for _, x in info.failed)
    dots = scatter_type(points)
    # numpy arrays: plotly checks a list element by element, an array at once
    fig = go.Figure(
        [dots(x=np.array(x, dtype=float), y=np.array(y, dtype=float), mode="markers",
              name=f"{info.color_by}={label}", marker={"size": 5})
         for label, x, y in info.groups]
    )
    floor = min((min(y) for _, _, y in info.groups if y), default=1.0)
    for name in dict.fromkeys(failure_style(status)[0] for status, _ in info.failed):
        mine = [(s, x) for s, x in info.failed if failure_style(s)[0] == name]
        xs = np.array([t for _, x in mine for t in x], dtype=float)
        fig.add_trace(dots(
            x=xs, y=np.full(len(xs), floor), mode="markers", name=name,
            marker=failure_style(mine[0][0])[1],
            **failure_hover([s for s, x in mine for _ in x], "trial %{x}")))
    fig.update_layout(title=f"Every trial, by {info.color_by}", xaxis_title="Trial",
                      yaxis_title="Latency (µs)", **_LAYOUT)
    fig.update_yaxes(**log_axis([v for _, _, y in info.groups for v in y]))
    if not points:
        note_figure(fig, "no trials yet")
    return fig


class BatchPrediction(NamedTuple):
    """One measured batch: the cost model's scores and what was measured."""

    batch: int  # its number; in a run of several tasks, its place in the run (0, 1, ...)
    predicted: tuple[float, ...]
    gflops: tuple[float, ...]
    spearman: float  # rank correlation of predicted score and measured throughput
    task: str = ""  # in a run of several tasks, the task whose batch it was


class CostModelInfo(NamedTuple):
    """Cost-model predictions against measurements, batch by batch."""

    batches: tuple[BatchPrediction, ...]
    spearman: float  # over all batches


def _spearman(a: pd.Series, b: pd.Series) -> float:
    """Spearman's rank correlation (ties get their mean rank); NaN when undefined."""
    if len(a) < 2 or a.nunique() < 2 or b.nunique() < 2:
        return math.nan
    ra = a.rank().to_numpy(dtype=float)
    rb = b.rank().to_numpy(dtype=float)
    return float(np.corrcoef(ra, rb)[0, 1])


def _batch_spearman(codes: Any, a: pd.Series, b: pd.Series) -> Any:
    """:func:`_spearman` of every batch at once (one pass over the rows, not one per batch).

    ``codes`` numbers the batches 0, 1, ... in row order (rows sorted by batch)."""
    ra = a.groupby(codes).rank().to_numpy(dtype=float)
    rb = b.groupby(codes).rank().to_numpy(dtype=float)
    count = np.bincount(codes)
    da = ra - (np.bincount(codes, ra) / count)[codes]
    db = rb - (np.bincount(codes, rb) / count)[codes]
    xx, yy = np.bincount(codes, da * da), np.bincount(codes, db * db)
    # mean ranks are exact (halves), so a constant batch has exactly 0: no correlation
    defined = (xx > 0) & (yy > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(defined, np.bincount(codes, da * db) / np.sqrt(xx * yy), np.nan)


def cost_model_info(trials: pd.DataFrame) -> CostModelInfo:
    """Predicted score against measured GFLOPS per batch (needs msviz's sidecar columns)."""
    if "predicted_score" not in trials.columns or "batch" not in trials.columns:
        warnings.warn("these trials carry no cost-model predictions (stock work dir)",
                      MsvizWarning, stacklevel=2)
        return CostModelInfo((), math.nan)
    many = "task" in trials.columns and trials["task"].nunique() > 1
    ok = trials.loc[trials["predicted_score"].notna() & trials["gflops"].notna()
                    & trials["batch"].notna(),
                    ["batch", "predicted_score", "gflops", *(["task"] if many else [])]]
    if many:  # each task numbers its own batches: a batch is (task, batch), in run order
        tasks = ok["task"].astype(str)
        ok = ok.assign(batch=pd.factorize(pd.MultiIndex.from_arrays(
            [tasks, ok["batch"].astype("int64")]))[0])
    ok = ok.sort_values("batch", kind="stable")  # batch order; measuring order within one
    numbers, starts, codes = np.unique(ok["batch"].to_numpy(dtype="int64"),
                                       return_index=True, return_inverse=True)
    names = ok["task"].astype(str).to_numpy()[starts].tolist() if many else [""] * len(starts)
    rho = _batch_spearman(codes, ok["predicted_score"], ok["gflops"]) if len(ok) else []
    ends = [*starts[1:].tolist(), len(ok)] if len(ok) else []
    scores = ok["predicted_score"].to_numpy(dtype=float).tolist()
    gflops = ok["gflops"].to_numpy(dtype=float).tolist()
    batches = tuple(
        BatchPrediction(n, tuple(scores[s:e]), tuple(gflops[s:e]), float(r), name)
        for n, s, e, r, name in zip(numbers.tolist(), starts.tolist(), ends, rho, names,
                                    strict=True)
    )
    return CostModelInfo(batches, _spearman(ok["predicted_score"], ok["gflops"]))


#: At most this many batch numbers are written on the cost model's colour bar.
MOST_BATCH_TICKS = 20
#: Up to this many batches the colour bar has a band per batch; above, a band would be a
#: hair's width (and 625 bands cost 170 ms a redraw): a continuous scale, ticks at batch numbers.
MOST_BATCH_BANDS = 40


def _batch_colors(numbers: list[int]) -> dict:
    """Marker settings that colour points by their batch number (``color`` left to the
    caller): one colour per batch in ``numbers`` (sorted, distinct), a colour bar of bands
    with ticks at the batch numbers (every k-th above :data:`MOST_BATCH_TICKS` batches; a
    continuous scale above :data:`MOST_BATCH_BANDS`)."""
    n = len(numbers)
    ticks = numbers[::math.ceil(n / MOST_BATCH_TICKS)]
    bar = {"title": {"text": "batch"}, "tickvals": ticks, "ticktext": [str(t) for t in ticks]}
    if n > MOST_BATCH_BANDS:
        return {"colorscale": "Viridis", "cmin": numbers[0], "cmax": numbers[-1],
                "showscale": True, "colorbar": bar}
    colors = sample_colorscale("Viridis", [i / (n - 1) for i in range(n)] if n > 1 else [0.0])
    # a band per batch, from halfway to the previous number to halfway to the next one
    lo, hi = numbers[0] - 0.5, numbers[-1] + 0.5
    edges = [0.0, *(((a + b) / 2 - lo) / (hi - lo) for a, b in pairwise(numbers)), 1.0]
    scale = [[edge, color] for color, band in zip(colors, pairwise(edges), strict=True)
             for edge in band]
    return {"colorscale": scale, "cmin": lo, "cmax": hi, "showscale": True, "colorbar": bar}


def cost_model_figure(info: CostModelInfo) -> Any:
    """Predicted score (x) against measured GFLOPS (y): one trace, coloured by batch, with a
    colour bar of one band per batch (a legend of hundreds of batches would be unreadable);
    the hover names each point's batch and that batch's rank correlation."""

    sizes = [len(b.predicted) for b in info.batches]
    points = sum(sizes)
    fig = go.Figure()
    if info.batches:
        x = np.fromiter((v for b in info.batches for v in b.predicted), float, points)
        y = np.fromiter((v for b in info.batches for v in b.gflops), float, points)
        batch = np.repeat(np.array([b.batch for b in info.batches], dtype=float), sizes)
        rho = np.repeat(np.array([b.spearman for b in info.batches], dtype=float), sizes)
        fig.add_trace(scatter_type(points)(
            x=x, y=y, mode="markers", name="measured candidate",
            # 1-D arrays travel as binary; a 2-D customdata would go as nested lists
            customdata=rho,
            hovertemplate="batch %{marker.color} (rho %{customdata:.2f})<br>"
                          "score %{x:.3g}, %{y:.3g} GFLOPS<extra></extra>",
            marker={"size": 6, "color": batch,
                    **_batch_colors([b.batch for b in info.batches])},
        ))
        if info.batches[-1].task:  # batches of several tasks, numbered in the run's order
            fig.update_traces(marker_colorbar_title_text="batch of the run")
    last = (f"; batch {info.batches[-1].batch}: {_rho(info.batches[-1].spearman)}"
            if info.batches else "")
    fig.update_layout(
        # short: a longer title runs under the plot's toolbar (rho: Spearman's rank correlation)
        title=f"Cost model (rho {_rho(info.spearman)}{last})",
        xaxis_title="Predicted score", yaxis_title="Measured GFLOPS", **_LAYOUT)
    if not info.batches:
        note_figure(fig, "no cost-model scores yet: msviz keeps the predicted score of each "
                    "measured candidate<br>(a stock work dir has none; failed trials have no "
                    "GFLOPS)")
    return fig


def _rho(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}"


class DecisionPlotInfo(NamedTuple):
    """Decisions of the trials of one design space, for parallel coordinates."""

    sites: tuple[str, ...]  # one label per decision site ("#4 SamplePerfectTile")
    values: tuple[tuple[str, ...], ...]  # per site, each trial's decision as text
    latency_us: tuple[float, ...]
    trials: tuple[int, ...]


def decision_plot_info(decisions: pd.DataFrame) -> DecisionPlotInfo:
    """From a frame with one row per trial: ``trial``, ``latency_us`` and one column per site.

    Build that frame with :func:`msviz.trace.spaces.trial_decisions`.
    """
    sites = tuple(c for c in decisions.columns if c not in ("trial", "latency_us"))
    return DecisionPlotInfo(
        sites,
        tuple(tuple(str(v) for v in decisions[s]) for s in sites),
        tuple(float(v) for v in decisions["latency_us"]),
        tuple(int(t) for t in decisions["trial"]),
    )


#: Short axis labels of the decision kinds (the full names overlap on a narrow plot).
_SHORT_KINDS = {"SamplePerfectTile": "tile", "SampleCategorical": "categorical",
                "SampleComputeLocation": "compute-at"}


def _natural(text: str) -> tuple:
    """Sort key: decisions as numbers or lists of numbers ("[2, 16]" before "[16, 2]")."""
    try:
        value = json.loads(text)
    except ValueError:
        return (2, text)
    if isinstance(value, (int, float)):
        return (0, [value])
    if isinstance(value, list):
        return (1, value)
    return (2, text)


def _short_site(site: str) -> str:
    """``"#4 SamplePerfectTile"`` -> ``"#4 tile"``."""
    index, _, kind = site.partition(" ")
    return f"{index} {_SHORT_KINDS.get(kind, kind)}".strip()


def decision_plot_figure(info: DecisionPlotInfo) -> Any:
    """Parallel coordinates: one axis per decision site, lines coloured by latency."""
    dims = []
    for site, vals in zip(info.sites, info.values, strict=True):
        labels = sorted(set(vals), key=_natural)
        code = {v: i for i, v in enumerate(labels)}
        dims.append({"label": _short_site(site), "values": [code[v] for v in vals],
                     "tickvals": list(range(len(labels))), "ticktext": labels})
    lat = list(info.latency_us)
    dims.append({"label": "latency (µs)", "values": lat})
    fig = go.Figure(go.Parcoords(
        line={"color": lat, "colorscale": "Viridis_r", "showscale": True}, dimensions=dims
    ))
    # the axis labels sit above the plot area: leave the title room above them
    fig.update_layout(title={"text": f"Decisions against latency ({len(lat)} trials)",
                             "y": 0.98, "yanchor": "top"},
                      **{**_LAYOUT, "height": 440, "margin": {**_LAYOUT["margin"], "t": 110}})
    if not lat:
        note_figure(fig, "no successful trial to read decisions from yet")
    return fig


class TaskBarsInfo(NamedTuple):
    """Per task: best latency, weight and trials."""

    tasks: tuple[str, ...]
    best_latency_us: tuple[float, ...]
    weighted_latency_us: tuple[float, ...]
    trials: tuple[int, ...]


def task_bars_info(tasks: pd.DataFrame) -> TaskBarsInfo:
    """From ``Run.tasks``."""
    weight = tasks["weight"].fillna(1.0)
    return TaskBarsInfo(
        tuple(map(str, tasks["task"])), tuple(map(float, tasks["best_latency_us"])),
        tuple(map(float, tasks["best_latency_us"] * weight)), tuple(map(int, tasks["trials"])),
    )


def task_bars_figure(info: TaskBarsInfo) -> Any:
    """Weighted best latency per task (where the end-to-end time goes)."""
    fig = go.Figure(go.Bar(
        x=list(info.tasks), y=list(info.weighted_latency_us),
        text=[f"{t} trials" for t in info.trials], name="weighted latency",
    ))
    fig.update_layout(title="Weighted best latency per task", yaxis_title="Latency (µs)",
                      **_LAYOUT)
    if not any(v == v for v in info.weighted_latency_us):  # all NaN, or no task
        note_figure(fig, "no task has a successful trial yet")
    return fig
