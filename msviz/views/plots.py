"""Infos and figures for the trial plots: every trial's latency, cost model vs measurement,
decisions vs performance (parallel coordinates), and per-task bars."""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import pandas as pd

from msviz.errors import MsvizWarning

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
    """Every trial's latency, grouped for colouring."""

    color_by: str
    groups: tuple[tuple[str, tuple[int, ...], tuple[float, ...]], ...]  # (label, trial, latency)


def trial_scatter_info(trials: pd.DataFrame, *, color_by: str = "status") -> TrialScatterInfo:
    """Trials grouped by ``color_by`` (``status``, ``generation``, ``task``, ``batch``...).

    Failed trials have no latency and are left out of the groups; see the status counts.
    """
    if color_by not in trials.columns:
        raise ValueError(f"cannot colour by {color_by!r}; columns: {', '.join(trials.columns)}")
    ok = trials[trials["latency_us"].notna()]
    groups = tuple(
        (str(label), tuple(int(t) for t in g["trial"]), tuple(float(v) for v in g["latency_us"]))
        for label, g in ok.groupby(ok[color_by].astype(str), sort=True)
    )
    return TrialScatterInfo(color_by, groups)


def trial_scatter_figure(info: TrialScatterInfo) -> Any:
    """Trial number against latency, one colour per group."""
    import plotly.graph_objects as go

    fig = go.Figure(
        [go.Scattergl(x=list(x), y=list(y), mode="markers", name=f"{info.color_by}={label}",
                      marker={"size": 5}) for label, x, y in info.groups]
    )
    fig.update_layout(title=f"Every trial, by {info.color_by}", xaxis_title="Trial",
                      yaxis_title="Latency (µs)", **_LAYOUT)
    fig.update_yaxes(type="log")
    return fig


class BatchPrediction(NamedTuple):
    """One measured batch: the cost model's scores and what was measured."""

    batch: int
    predicted: tuple[float, ...]
    gflops: tuple[float, ...]
    spearman: float  # rank correlation of predicted score and measured throughput


class CostModelInfo(NamedTuple):
    """Cost-model predictions against measurements, batch by batch."""

    batches: tuple[BatchPrediction, ...]
    spearman: float  # over all batches


def _spearman(a: pd.Series, b: pd.Series) -> float:
    """Spearman's rank correlation (ties get their mean rank); NaN when undefined."""
    import numpy as np

    if len(a) < 2 or a.nunique() < 2 or b.nunique() < 2:
        return math.nan
    ra = a.rank().to_numpy(dtype=float)
    rb = b.rank().to_numpy(dtype=float)
    return float(np.corrcoef(ra, rb)[0, 1])


def cost_model_info(trials: pd.DataFrame) -> CostModelInfo:
    """Predicted score against measured GFLOPS per batch (needs msviz's sidecar columns)."""
    if "predicted_score" not in trials.columns or "batch" not in trials.columns:
        warnings.warn("these trials carry no cost-model predictions (stock work dir)",
                      MsvizWarning, stacklevel=2)
        return CostModelInfo((), math.nan)
    ok = trials[trials["predicted_score"].notna() & trials["gflops"].notna()]
    batches = tuple(
        BatchPrediction(int(b), tuple(map(float, g["predicted_score"])),
                        tuple(map(float, g["gflops"])),
                        _spearman(g["predicted_score"], g["gflops"]))
        for b, g in ok.groupby("batch", sort=True)
    )
    return CostModelInfo(batches, _spearman(ok["predicted_score"], ok["gflops"]))


def cost_model_figure(info: CostModelInfo) -> Any:
    """Predicted score (x) against measured GFLOPS (y), one colour per batch."""
    import plotly.graph_objects as go

    fig = go.Figure(
        [go.Scatter(x=list(b.predicted), y=list(b.gflops), mode="markers",
                    name=f"batch {b.batch} (rho={b.spearman:.2f})") for b in info.batches]
    )
    rho = "n/a" if math.isnan(info.spearman) else f"{info.spearman:.2f}"
    fig.update_layout(title=f"Cost model: predicted vs measured (Spearman rho = {rho})",
                      xaxis_title="Predicted score", yaxis_title="Measured GFLOPS", **_LAYOUT)
    return fig


class DecisionPlotInfo(NamedTuple):
    """Decisions of the trials of one design space, for parallel coordinates."""

    sites: tuple[str, ...]  # one label per decision site ("#4 SamplePerfectTile")
    values: tuple[tuple[str, ...], ...]  # per site, each trial's decision as text
    latency_us: tuple[float, ...]
    trials: tuple[int, ...]


def decision_plot_info(decisions: pd.DataFrame) -> DecisionPlotInfo:
    """From a frame with one row per trial: ``trial``, ``latency_us`` and one column per site.

    Build that frame with :func:`msviz.views.plots.trial_decisions`.
    """
    sites = tuple(c for c in decisions.columns if c not in ("trial", "latency_us"))
    return DecisionPlotInfo(
        sites,
        tuple(tuple(str(v) for v in decisions[s]) for s in sites),
        tuple(float(v) for v in decisions["latency_us"]),
        tuple(int(t) for t in decisions["trial"]),
    )


def trial_decisions(run: Any, *, limit: int = 300) -> pd.DataFrame:
    """One row per successful trial (the ``limit`` fastest) of the most common design space:
    its decisions by site, read from the trial traces."""
    trials = run.trials
    ok = trials[trials["status"] == "ok"].nsmallest(limit, "latency_us")
    rows, shapes = [], {}
    for index in ok.index:
        trace = run.trial(int(index)).trace
        insts = list(trace.insts)
        decs = {}
        for inst, value in trace.decisions.items():
            k = insts.index(inst)
            v = [int(x) for x in value] if hasattr(value, "__len__") else int(value)
            decs[f"#{k} {inst.kind.name}"] = str(v)
        key = tuple(sorted(decs))
        shapes[key] = shapes.get(key, 0) + 1
        rows.append((key, {"trial": int(trials.at[index, "trial"]),
                           "latency_us": float(trials.at[index, "latency_us"]), **decs}))
    if not rows:
        return pd.DataFrame({"trial": [], "latency_us": []})
    common = max(shapes, key=shapes.get)
    return pd.DataFrame([r for k, r in rows if k == common])


def decision_plot_figure(info: DecisionPlotInfo) -> Any:
    """Parallel coordinates: one axis per decision site, lines coloured by latency."""
    import plotly.graph_objects as go

    dims = []
    for site, vals in zip(info.sites, info.values, strict=True):
        labels = sorted(set(vals))
        code = {v: i for i, v in enumerate(labels)}
        dims.append({"label": site, "values": [code[v] for v in vals],
                     "tickvals": list(range(len(labels))), "ticktext": labels})
    lat = list(info.latency_us)
    dims.append({"label": "latency (µs)", "values": lat})
    fig = go.Figure(go.Parcoords(
        line={"color": lat, "colorscale": "Viridis_r", "showscale": True}, dimensions=dims
    ))
    fig.update_layout(title="Decisions against latency", **{**_LAYOUT, "height": 420})
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
    import plotly.graph_objects as go

    fig = go.Figure(go.Bar(
        x=list(info.tasks), y=list(info.weighted_latency_us),
        text=[f"{t} trials" for t in info.trials], name="weighted latency",
    ))
    fig.update_layout(title="Weighted best latency per task", yaxis_title="Latency (µs)",
                      **_LAYOUT)
    return fig
