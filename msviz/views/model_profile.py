"""The model profile view: each task's time per call inside the compiled model against its
tuned latency, the tasks that lose in place in every draw (``flagged``) or in some draws only
(``disputed``), the spread of the draws (fresh processes) and the tasks that fell back to an
untuned kernel, as an info, a plotly bar chart, an HTML table (Tasks tab, report) and text
(``msviz show``).

Fed from ``Run.model_profile()`` / ``Session.model_profile()`` (a frame) or from a session's
``model_profile`` event (its data, made a frame with the same threshold).

The same concept measured and read: :mod:`msviz.bench.model_profile`,
:mod:`msviz.records.model_profile`.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any, NamedTuple

import pandas as pd

from msviz.records.model_profile import DEFAULT_THRESHOLD, flags, model_profile_frame
from msviz.views._plotly_imports import go
from msviz.views.common import log_axis, note_figure

__all__ = ["ModelProfileInfo", "ProfiledTask", "model_profile_figure", "model_profile_html",
           "model_profile_info", "model_profile_text"]

#: Colours of the bars: tuned, in model, in model and flagged, in model and disputed.
TUNED_COLOR, IN_MODEL_COLOR, FLAGGED_COLOR = "#9aa0a6", "#1a73e8", "#d93025"
DISPUTED_COLOR = "#f29900"


class ProfiledTask(NamedTuple):
    """One task of a model profile (None where there is no number)."""

    task: str
    calls: int  # calls per model run
    in_model_us: float | None  # the least draw's median time per call inside the model
    in_model_max_us: float | None  # the slowest draw's
    spread: float | None  # in_model_max_us / in_model_us
    tuned_us: float | None  # the task's best latency in tuning
    ratio: float | None  # in_model_us / tuned_us
    fallback: bool  # no successful record: the model ran its untuned kernel
    flagged: bool  # every draw over the threshold
    disputed: bool  # some draws over the threshold, not every one


class ModelProfileInfo(NamedTuple):
    """A model profile in the order of the tasks."""

    tasks: tuple[ProfiledTask, ...]
    threshold: float
    flagged: tuple[str, ...]
    disputed: tuple[str, ...]
    fallback: tuple[str, ...]
    tasks_us: float  # per model run: calls x in-model time, summed over the tasks
    other_us: float  # per model run: the calls of no task (VM builtins, ...)
    hook_us: float | None  # the timing hook's own cost taken off each call (None: not)
    runs: int | None  # model runs timed in each draw
    draws: int  # fresh processes the model was timed in
    spread: float | None  # the largest task's spread (None: no task timed)


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def model_profile_info(profile: pd.DataFrame | Mapping, *,
                       threshold: float | None = None) -> ModelProfileInfo:
    """The info of a model profile frame, or of a ``model_profile`` event's data (flagged at
    ``threshold``, default :data:`~msviz.bench.model_profile.DEFAULT_THRESHOLD`)."""
    if isinstance(profile, Mapping):
        profile = model_profile_frame(dict(profile), threshold or DEFAULT_THRESHOLD)
    elif threshold is not None:
        flagged, disputed = flags(profile["in_model_us"], profile["in_model_max_us"],
                                  profile["tuned_us"], threshold)
        profile = profile.assign(flagged=flagged, disputed=disputed)
    tasks = tuple(
        ProfiledTask(str(r.task), int(r.calls), _number(r.in_model_us),
                     _number(r.in_model_max_us), _number(r.spread), _number(r.tuned_us),
                     _number(r.ratio), bool(r.fallback), bool(r.flagged), bool(r.disputed))
        for r in profile.itertuples(index=False))
    other = profile.attrs.get("other")
    spreads = [t.spread for t in tasks if t.spread is not None]
    return ModelProfileInfo(
        tasks=tasks,
        threshold=float(threshold or profile.attrs.get("threshold", DEFAULT_THRESHOLD)),
        flagged=tuple(t.task for t in tasks if t.flagged),
        disputed=tuple(t.task for t in tasks if t.disputed),
        fallback=tuple(t.task for t in tasks if t.fallback),
        tasks_us=sum(t.calls * t.in_model_us for t in tasks if t.in_model_us is not None),
        other_us=0.0 if other is None else float(other["us_per_run"].sum()),
        hook_us=_number(profile.attrs.get("hook_us")),
        runs=profile.attrs.get("runs"), draws=int(profile.attrs.get("draws") or 1),
        spread=max(spreads) if spreads else None)


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _summary(info: ModelProfileInfo) -> str:
    every = " in every draw" if info.draws > 1 else ""
    parts = [f"{len(info.flagged)} of {len(info.tasks)} tasks over {info.threshold:g}x their "
             f"tuned latency{every}"]
    if info.disputed:
        parts.append(f"in some draws only: {', '.join(info.disputed)}")
    if info.fallback:
        parts.append(f"untuned (no record): {', '.join(info.fallback)}")
    parts.append(f"tasks {info.tasks_us:.3f} µs and other calls {info.other_us:.3f} µs per run")
    how = f"median per call over {info.runs} runs" if info.runs else "median per call"
    if info.draws > 1:
        how += f" in each of {info.draws} fresh processes, the least kept"
        if info.spread is not None:
            how += f", spread up to {info.spread:.2f}x"
    if info.hook_us is not None:
        how += f", timing hook's {info.hook_us:.3f} µs taken off"
    return f"{'; '.join(parts)} ({how})"


def _above(t: ProfiledTask) -> float | None:
    """How far the slowest draw is above the least (the error bar; None: no time)."""
    if t.in_model_us is None or t.in_model_max_us is None:
        return None
    return t.in_model_max_us - t.in_model_us


def _color(t: ProfiledTask) -> str:
    return FLAGGED_COLOR if t.flagged else DISPUTED_COLOR if t.disputed else IN_MODEL_COLOR


def model_profile_figure(info: ModelProfileInfo) -> Any:
    """Per task, its tuned latency and its time per call in the model (the least draw; an
    error bar up to the slowest) as paired horizontal bars; flagged tasks' in-model bars red,
    disputed ones amber, fallen-back tasks named so on their axis label."""
    fig = go.Figure(layout={
        "title": "Kernels in the model vs in tuning", "barmode": "group",
        "height": 120 + 40 * max(1, len(info.tasks)),
        "margin": {"l": 60, "r": 20, "t": 50, "b": 45},
        "xaxis": {"title": "µs per call"},
        "yaxis": {"autorange": "reversed", "automargin": True},
        "legend": {"orientation": "h", "y": -0.25}})
    if not info.tasks:
        return note_figure(fig, "no model profile")
    labels = [f"{t.task} (untuned)" if t.fallback else t.task for t in info.tasks]
    fig.add_trace(go.Bar(
        y=labels, x=[t.tuned_us for t in info.tasks], orientation="h", name="tuned",
        marker={"color": TUNED_COLOR}, hovertemplate="%{y}<br>tuned %{x:.3f} µs<extra></extra>"))
    many = info.draws > 1
    name = f"in the model (red: over {info.threshold:g}x tuned"
    name += f" in every draw, amber: in some; least of {info.draws} draws)" if many else ")"
    fig.add_trace(go.Bar(
        y=labels, x=[t.in_model_us for t in info.tasks], orientation="h",
        name=name, cliponaxis=False,
        marker={"color": [_color(t) for t in info.tasks]},
        # thin and pale: the ratio's text at the bar's end stays readable under it
        error_x={"type": "data", "symmetric": False, "visible": many, "thickness": 1,
                 "width": 4, "color": "rgba(60,64,67,0.45)",
                 "array": [_above(t) for t in info.tasks],
                 "arrayminus": [None if _above(t) is None else 0.0 for t in info.tasks]},
        customdata=[_ratio(t.spread) for t in info.tasks],
        text=[_ratio(t.ratio) for t in info.tasks], textposition="outside",
        hovertemplate="%{y}<br>in the model %{x:.3f} µs per call (%{text})"
        + ("<br>spread of the draws %{customdata}" if many else "") + "<extra></extra>"))
    values = [v for t in info.tasks for v in (t.tuned_us, t.in_model_us, t.in_model_max_us)
              if v is not None]
    if values and min(values) > 0 and max(values) / min(values) > 30:
        fig.update_xaxes(**log_axis(values))  # an untuned kernel can be 100x a tuned one
    elif values:
        fig.update_xaxes(range=[0, 1.15 * max(values)])  # room for the ratios at the bars' ends
    return fig


def model_profile_html(info: ModelProfileInfo | None) -> str:
    """The profile as an HTML table (the least draw and the draws' spread), flagged rows tinted
    red, disputed ones amber, fallen-back ones marked ("" when there is no profile)."""
    if info is None:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("Task", "Calls", "In model (µs/call)", "Spread",
                                             "Tuned (µs)", "Ratio", ""))
    rows = []
    for t in info.tasks:
        mark = "untuned (fallback)" if t.fallback else ("loses in place" if t.flagged else (
            "loses in some draws" if t.disputed else ""))
        style = " style='background:#fce8e6'" if t.flagged else (
            " style='background:#fef7e0'" if t.disputed else (
                " style='color:#b06000'" if t.fallback else ""))
        classes = "msviz-profile-row" + (" msviz-flagged" if t.flagged else "") + (
            " msviz-disputed" if t.disputed else "") + (" msviz-fallback" if t.fallback else "")
        rows.append(f"<tr class='{classes}'{style}><td style='text-align:left'>"
                    f"{html.escape(t.task)}</td><td>{t.calls}</td><td>{_us(t.in_model_us)}</td>"
                    f"<td>{_ratio(t.spread)}</td><td>{_us(t.tuned_us)}</td>"
                    f"<td>{_ratio(t.ratio)}</td><td>{mark}</td></tr>")
    return ("<div class='msviz-model-profile'><b>Kernels in the model vs in tuning</b>"
            "<table style='border-collapse:collapse;font-size:12px'>"
            "<style>.msviz-model-profile td,.msviz-model-profile th{border:1px solid #ddd;"
            "padding:2px 6px;text-align:right}</style>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<div>{html.escape(_summary(info))}</div></div>")


def model_profile_text(info: ModelProfileInfo) -> str:
    """The profile as a plain-text table and its summary line (``msviz show``)."""
    frame = pd.DataFrame(
        [(t.task, t.calls, _us(t.in_model_us), _ratio(t.spread), _us(t.tuned_us),
          _ratio(t.ratio), "fallback" if t.fallback else "",
          "FLAGGED" if t.flagged else "disputed" if t.disputed else "")
         for t in info.tasks],
        columns=["task", "calls", "in_model_us", "spread", "tuned_us", "ratio", "fallback",
                 "flagged"])
    return f"{frame.to_string(index=False)}\n{_summary(info)}"

