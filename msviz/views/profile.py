"""Where the time went: a run's profile as infos, plots and MetaSchedule's ``Profiler`` table.

:func:`profile_info` takes ``Session.profile`` / ``Run.profile`` (``task``, ``batch``, ``stage``,
``seconds``; rows with no batch are setting up, the end and the end-to-end check) and returns
seconds per batch by stage, totals by stage with their share of the wall time, and seconds per
task. A stock work dir's profile has one stage, the time between batches from its logs, and the
info says so (``source="logs"``).

The same concept recorded and read: :mod:`msviz.engine.profile`, :mod:`msviz.records.profile`.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import pandas as pd

from msviz.errors import MsvizWarning
from msviz.records.profile import LOGS_STAGE, OTHER, STAGES
from msviz.views._plotly_imports import go, qualitative
from msviz.views.common import note_figure

__all__ = [
    "ProfileInfo",
    "profile_batches_figure",
    "profile_info",
    "profile_table_text",
    "profile_tasks_figure",
    "profile_totals_figure",
]

_LAYOUT = {"height": 360, "margin": {"l": 60, "r": 20, "t": 50, "b": 45}}
#: What each source of a profile is called on the plots.
SOURCES = {"msviz": "measured by the session's profile",
           "logs": "from the logs' timestamps (time between batches; stock MetaSchedule keeps no "
                   "stage timings)",
           "none": "no profile"}


class ProfileInfo(NamedTuple):
    """A run's time by stage, by batch and by task."""

    source: str  # "msviz", "logs" or "none"
    stages: tuple[str, ...]  # the stages present, in the order a batch passes through them
    rows: pd.DataFrame  # one row per batch (or setup/end): label, task, batch, wall, per stage
    totals: pd.DataFrame  # stage, seconds, share (of the wall time), in order of seconds
    tasks: pd.DataFrame  # task, seconds, share; the batches' time of each task
    wall: float  # seconds in all


def _order(stages: set[str]) -> tuple[str, ...]:
    known = [s for s in STAGES if s in stages and s != OTHER]
    rest = sorted(s for s in stages if s not in STAGES)
    return tuple(known + rest + ([OTHER] if OTHER in stages else []))


def _labels(heads: pd.DataFrame, wide: pd.DataFrame) -> list[str]:
    """Each row's name: ``task #batch``; rows with no batch are ``setup`` before the first
    batch, ``end-to-end check`` when that is what they timed, else ``end``."""
    out, seen_batch = [], False
    checks = wide.get("msviz/EndToEndCheck")
    for i, (task, batch) in enumerate(zip(heads["task"], heads["batch"])):
        if not pd.isna(batch):
            seen_batch = True
            out.append(f"{task} #{int(batch)}")
        elif checks is not None and checks.iloc[i] > 0:
            out.append("end-to-end check")
        else:
            out.append("end" if seen_batch else "setup")
    return out


def profile_info(profile: pd.DataFrame) -> ProfileInfo:
    """Seconds by stage per batch, in all and per task (see the module's doc)."""
    if profile is None or profile.empty:
        warnings.warn("no profile yet: nothing to show", MsvizWarning, stacklevel=2)
        empty = pd.DataFrame({"stage": [], "seconds": [], "share": []})
        return ProfileInfo("none", (), pd.DataFrame({"label": [], "task": [], "batch": [],
                                                     "wall": []}),
                           empty, pd.DataFrame({"task": [], "seconds": [], "share": []}), 0.0)
    stages = _order(set(profile["stage"]))
    source = "logs" if set(stages) == {LOGS_STAGE} else "msviz"
    # each (task, batch) run of consecutive lines is one row of the profile, in order
    key = profile["task"].astype(object).astype(str) + "\0" + \
        profile["batch"].astype(object).fillna(-1).astype(int).astype(str)
    row_id = (key != key.shift()).cumsum()
    wide = profile.assign(row=row_id).pivot_table(index="row", columns="stage",
                                                  values="seconds", aggfunc="sum",
                                                  fill_value=0.0)
    wide = wide.reindex(columns=list(stages), fill_value=0.0)
    heads = profile.assign(row=row_id).groupby("row", sort=True)[["task", "batch"]].first()
    rows = pd.DataFrame({"label": _labels(heads, wide), "task": heads["task"].to_numpy(),
                         "batch": heads["batch"].to_numpy(),
                         "wall": wide.sum(axis=1).to_numpy()})
    rows = pd.concat([rows, wide.reset_index(drop=True)], axis=1)
    wall = float(profile["seconds"].sum())
    totals = profile.groupby("stage")["seconds"].sum().reindex(list(stages)).reset_index()
    totals["share"] = totals["seconds"] / wall if wall > 0 else 0.0
    totals = totals.sort_values("seconds", ascending=False, kind="stable").reset_index(drop=True)
    batches = profile[profile["batch"].notna()]
    tasks = batches.groupby("task", sort=False)["seconds"].sum().reset_index()
    tasks["share"] = tasks["seconds"] / wall if wall > 0 else 0.0
    return ProfileInfo(source, stages, rows, totals, tasks, wall)


def profile_table_text(info: ProfileInfo) -> str:
    """MetaSchedule's ``Profiler.table()``: ID, Name, Time (min), Percentage, by time."""
    lines = [f"{'ID':>3} | {'Name':<40} | {'Time (min)':>10} | {'Percentage':>10}"]
    lines.append("-" * len(lines[0]))
    lines.append(f"{'':>3} | {'Total':<40} | {info.wall / 60:>10.4f} | {100:>10.4f}")
    for i, (stage, secs, share) in enumerate(info.totals.itertuples(index=False)):
        lines.append(f"{i:>3} | {stage:<40} | {secs / 60:>10.4f} | {share * 100:>10.4f}")
    if info.source == "logs":
        lines.append("(from the logs' timestamps: stock MetaSchedule keeps no stage timings)")
    return "\n".join(lines)


def _colors(stages: tuple[str, ...]) -> dict[str, str]:
    palette = qualitative.Dark24
    out = {s: palette[i % len(palette)] for i, s in enumerate(s for s in stages if s != OTHER)}
    out[OTHER] = "#b0b0b0"
    return out


#: At most this many bars per stage on the batches plot: above, consecutive batches share a
#: bar (1,250 batches of 15 stages were 19,000 SVG bars and as many hover labels, seconds to
#: send and draw, each bar a hair wide).
MOST_BARS = 100


def _binned_rows(info: ProfileInfo) -> tuple[pd.DataFrame, int]:
    """The profile's rows, ``k`` consecutive ones summed into one (k = 1 up to
    :data:`MOST_BARS` rows), labelled ``first … last``; and ``k``."""
    rows = info.rows
    k = max(1, -(-len(rows) // MOST_BARS))
    if k == 1:
        return rows, 1
    group = pd.RangeIndex(len(rows)) // k
    summed = rows[list(info.stages)].groupby(group).sum()
    first = rows["label"].groupby(group).first()
    last = rows["label"].groupby(group).last()
    summed["label"] = [a if a == b else f"{a} … {b}" for a, b in zip(first, last, strict=True)]
    return summed.reset_index(drop=True), k


def profile_batches_figure(info: ProfileInfo) -> Any:
    """Seconds per batch, stacked by stage (setting up and the end as their own bars); above
    :data:`MOST_BARS` batches, a bar for each run of consecutive batches."""
    fig = go.Figure()
    colors = _colors(info.stages)
    rows, k = _binned_rows(info)
    x = list(range(len(rows)))
    for stage in info.stages:
        y = rows[stage].to_numpy(dtype=float)
        if k > 1 and not y.any():  # a stage no batch spent time in (the legend is long)
            continue
        fig.add_bar(x=x, y=y, name=stage, marker_color=colors[stage],
                    customdata=rows["label"], meta=stage,
                    hovertemplate="%{customdata}<br>%{meta}: %{y:.3f} s<extra></extra>")
    many = len(x) > 40
    fig.update_layout(
        # short: a longer title runs under the plot's toolbar (the Time tab names the source)
        title=("Seconds per batch, by stage" if k == 1 else
               f"Seconds per {k} batches, by stage")
        + (" (from the logs)" if info.source == "logs" else ""), barmode="stack",
        bargap=0 if many else 0.15,
        xaxis_title="batch (in order)" if k == 1 else f"batch of the run ({k} a bar)",
        yaxis_title="seconds", legend={"font": {"size": 10}}, **_LAYOUT)
    ticks = x if len(x) <= 30 else x[:: max(1, len(x) // 15)]
    # a bar of many batches is named by where it starts in the run (its batches may be of
    # several tasks: the hover names the first and the last)
    fig.update_xaxes(tickvals=ticks, ticktext=[rows["label"].iloc[i] if k == 1 else
                                               f"#{i * k}" for i in ticks])
    if info.rows.empty:
        note_figure(fig, "no profile yet")
    return fig


def profile_totals_figure(info: ProfileInfo) -> Any:
    """Seconds by stage in all, with each stage's share of the wall time."""
    totals = info.totals.iloc[::-1]  # the biggest on top
    colors = _colors(info.stages)
    fig = go.Figure(go.Bar(
        x=totals["seconds"], y=totals["stage"], orientation="h",
        marker_color=[colors.get(s, "#888") for s in totals["stage"]],
        text=[f"{s * 100:.1f}%" for s in totals["share"]], textposition="auto",
        hovertemplate="%{y}: %{x:.2f} s (%{text})<extra></extra>"))
    fig.update_layout(title=f"Where the time went: {info.wall:.1f} s in all",
                      xaxis_title="seconds", **{**_LAYOUT, "height": max(240, 28 * len(totals)
                                                                          + 100),
                                                 "margin": {**_LAYOUT["margin"], "l": 280}})
    if totals.empty:
        note_figure(fig, "no profile yet")
    return fig


def profile_tasks_figure(info: ProfileInfo) -> Any:
    """Seconds spent on each task's batches (a model's tasks)."""
    tasks = info.tasks.sort_values("seconds", ascending=True)
    fig = go.Figure(go.Bar(x=tasks["seconds"], y=tasks["task"], orientation="h",
                           text=[f"{s * 100:.1f}%" for s in tasks["share"]],
                           textposition="auto",
                           hovertemplate="%{y}: %{x:.2f} s (%{text})<extra></extra>"))
    fig.update_layout(title="Seconds per task (its batches)", xaxis_title="seconds",
                      **{**_LAYOUT, "height": max(240, 24 * len(tasks) + 100),
                         "margin": {**_LAYOUT["margin"], "l": 240}})
    if tasks.empty:
        note_figure(fig, "no batch yet")
    return fig
