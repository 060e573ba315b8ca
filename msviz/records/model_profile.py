"""A run's model profile as a frame: the one recorded in its sidecar after tuning (read, never
compiled), or the data of a fresh one.

A Session that tunes a model profiles it in its end-to-end check (the same builds, in the same
fresh processes) and appends a ``model_profile`` line to the sidecar
(:func:`msviz.bench.model_profile.combine_draws`'s data); ``Run.model_profile()`` reads the last
such line. Profiling anew builds and runs the model: that is the engine's measuring room's
(:func:`msviz.engine.measure.requests.profile_run`), which turns its data into the same frame
(:func:`model_profile_frame`, pure).

The same concept measured and drawn: :mod:`msviz.bench.model_profile`,
:mod:`msviz.views.model_profile`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from msviz import models
from msviz.errors import MsvizError
from msviz.models import graph_passes

__all__ = ["DEFAULT_THRESHOLD", "MODEL_PROFILE_COLUMNS", "MODEL_PROFILE_KIND", "OTHER_COLUMNS",
           "flags", "graph_of_run", "last_entry", "model_of_run", "model_profile_frame",
           "recorded_model_profile", "recorded_or_none"]

#: The sidecar kind of a recorded model profile.
MODEL_PROFILE_KIND = "model_profile"
#: A task is flagged when its in-model time per call is over this many times its tuned latency
#: in every draw.
DEFAULT_THRESHOLD = 1.5
#: The columns of a model profile frame, in order.
MODEL_PROFILE_COLUMNS = ["task", "calls", "in_model_us", "in_model_max_us", "spread",
                         "tuned_us", "ratio", "fallback", "flagged", "disputed"]
#: The columns of the frame of calls that are no task's (``frame.attrs["other"]``).
OTHER_COLUMNS = ["call", "calls", "us_per_run"]


def last_entry(entries: Sequence[dict], kind: str) -> dict | None:
    """The last sidecar entry of ``kind`` (None: there is none)."""
    return next((e for e in reversed(entries) if e.get("kind") == kind), None)


def graph_of_run(entries: Sequence[dict]) -> str | None:
    """The graph a work dir's model was tuned on, as its ``environment`` line names it
    (``"expert"`` from before the NHWC layout, whose graph report has no ``nhwc_convs``, is
    :data:`~msviz.models.graph_passes.EXPERT_NCHW`; from before the polynomial exp/erf/tanh, no
    ``fast_math_ops``, :data:`~msviz.models.graph_passes.EXPERT_EXACT`); None when nothing says (stock
    MetaSchedule's work dirs, msviz's before the expert graph): see
    :func:`msviz.engine.arguments.model_for_work_dir`, which then asks the records."""
    env = last_entry(entries, "environment")
    found = env.get("model") if env is not None and isinstance(env.get("model"), dict) else {}
    graph = found.get("graph")
    report = found.get("graph_report")
    if graph == graph_passes.EXPERT and isinstance(report, dict) and "nhwc_convs" not in report:
        return graph_passes.EXPERT_NCHW  # tuned before the expert graph laid convolutions NHWC
    if graph == graph_passes.EXPERT and isinstance(report, dict) and \
            "fast_math_ops" not in report:
        return graph_passes.EXPERT_EXACT  # tuned before the polynomial exp/erf/tanh
    return graph if graph in graph_passes.GRAPHS else None


def model_of_run(work_dir: Any, entries: Sequence[dict], model: Any = None) -> Any:
    """The model a work dir was tuned for, on the graph its environment line names (else the
    model's own): ``model`` (anything :func:`msviz.models.load` takes), else the catalogue
    model or the ``.onnx`` file the line names."""
    graph = graph_of_run(entries)

    def on_graph(found: Any) -> Any:
        return found if graph is None else found.on_graph(graph)

    if model is not None:
        return on_graph(models.load(model))
    env = last_entry(entries, "environment")
    if env is not None and isinstance(env.get("model"), dict):
        source, file = env["model"].get("source"), env["model"].get("file")
        if isinstance(source, str) and source in models.MODELS:
            return on_graph(models.load(source))
        if isinstance(file, str) and file.lower().endswith(".onnx"):
            if not Path(file).is_file():
                raise MsvizError(f"{work_dir} was tuned for the ONNX model {file}, which is no "
                                 "longer there: pass model= (the .onnx path)")
            return on_graph(models.load(file))
    if env is not None and env.get("model") is None and "model" in env:
        raise MsvizError(f"{work_dir} was tuned for one PrimFunc, not a model: there is no "
                         "model to profile")
    raise MsvizError(f"{work_dir} does not say which catalogue model it was tuned for: pass "
                     "model= (a msviz.models.Model, a catalogue name such as 'mlp', an .onnx "
                     "path, ...)")


def recorded_model_profile(run: Any) -> pd.DataFrame | None:
    """The model profile recorded in a run's sidecar as a frame; None when there is none, or
    when it failed (a view shows nothing rather than compile the model)."""
    recorded = last_entry(run.sidecar_entries, MODEL_PROFILE_KIND)
    if recorded is None or recorded.get("error"):
        return None
    return model_profile_frame(recorded)


def recorded_or_none(run: Any, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame | None:
    """The recorded model profile at ``threshold``; None when none is recorded.

    Raises
    ------
    MsvizError
        The recorded profile failed (its error is named; ``refresh=True`` profiles again).
    """
    recorded = last_entry(run.sidecar_entries, MODEL_PROFILE_KIND)
    if recorded is None:
        return None
    if recorded.get("error"):
        raise MsvizError(f"the model profile recorded in {run.work_dir} failed: "
                         f"{recorded['error']}; pass refresh=True to profile again")
    return model_profile_frame(recorded, threshold)


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def flags(in_model_us: pd.Series, in_model_max_us: pd.Series, tuned_us: pd.Series,
          threshold: float) -> tuple[pd.Series, pd.Series]:
    """``(flagged, disputed)``: the tasks whose every draw is over ``threshold`` times their
    tuned latency (their least in-model time is), and those of which some draws are and some
    are not (their slowest draw is, their least is not). NaN compares false: a task with no
    tuned latency is neither."""
    flagged = (in_model_us / tuned_us > threshold).astype("bool")
    disputed = ((in_model_max_us / tuned_us > threshold) & ~flagged).astype("bool")
    return flagged, disputed


def model_profile_frame(data: dict, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """A model profile (:func:`combine_draws`'s data) as a typed frame of
    :data:`MODEL_PROFILE_COLUMNS`. Pure.

    ``in_model_us`` is the least draw, ``in_model_max_us`` the slowest, ``spread`` the one over
    the other (NaN where the least is 0); ``ratio`` is ``in_model_us / tuned_us``; ``flagged``
    and ``disputed`` are :func:`flags` at ``threshold``. ``attrs`` holds ``other`` (a frame of
    :data:`OTHER_COLUMNS`), ``threshold``, ``hook_us``, ``runs``, ``draws`` and
    ``slow_draws``. A profile
    recorded before draws (no ``in_model_draws_us``) reads as one draw."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not (
            threshold > 0):
        raise ValueError(f"threshold must be a number > 0 (in-model / tuned time), "
                         f"got {threshold!r}")
    rows = data.get("rows") or []
    least = [_number(r.get("in_model_us")) for r in rows]
    most = []
    for r, low in zip(rows, least):
        seen = [float(x) for x in r.get("in_model_draws_us") or () if x is not None]
        most.append(max(seen) if seen else low)
    frame = pd.DataFrame({
        "task": pd.Series([r["task"] for r in rows], dtype="string"),
        "calls": pd.Series([r["calls"] for r in rows], dtype="int64"),
        "in_model_us": pd.Series(least, dtype="float64"),
        "in_model_max_us": pd.Series(most, dtype="float64"),
        "tuned_us": pd.Series([r.get("tuned_us") for r in rows], dtype="float64"),
        "ratio": pd.Series([r.get("ratio") for r in rows], dtype="float64"),
        "fallback": pd.Series([bool(r.get("fallback")) for r in rows], dtype="bool"),
    })
    # NaN where the least is 0 (a call no slower than the hook, once its cost is taken off)
    frame["spread"] = (frame["in_model_max_us"] / frame["in_model_us"]).where(
        frame["in_model_us"] > 0)
    frame["flagged"], frame["disputed"] = flags(frame["in_model_us"], frame["in_model_max_us"],
                                                frame["tuned_us"], threshold)
    frame = frame[MODEL_PROFILE_COLUMNS]
    draws = data.get("draws")
    if draws is None:  # a frame of the draws the rows hold (an event's data may drop it)
        draws = max((len(r.get("in_model_draws_us") or ()) for r in rows), default=0) or 1
    frame.attrs.update(
        other=pd.DataFrame(data.get("other") or [], columns=OTHER_COLUMNS).astype(
            {"call": "string", "calls": "float64", "us_per_run": "float64"}),
        threshold=float(threshold), hook_us=data.get("hook_us"), runs=data.get("runs"),
        draws=int(draws), slow_draws=list(data.get("slow_draws") or []))
    return frame
