"""A run's model profile: the one recorded in its sidecar after tuning, or a fresh one.

A Session that tunes a model profiles it in its end-to-end check (the same builds, in the same
fresh processes) and appends a ``model_profile`` line to the sidecar
(:func:`msviz.check.model_profile.combine_draws`'s data); ``Run.model_profile()`` reads the last
such line, so opening a work dir never compiles. ``refresh=True`` (or a work dir with no such
line) builds the model with the work dir's database and profiles it again, in ``draws`` fresh
processes (the least of them kept, a task flagged only where every draw agrees:
:mod:`msviz.check.model_profile`); the model is then the ``model=`` argument, else the
catalogue model named by the sidecar's last ``environment`` line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from msviz import compat, models
from msviz.check.model_profile import (
    DEFAULT_DRAWS,
    DEFAULT_THRESHOLD,
    PROFILE_RUNS,
    model_profile_frame,
    profile_model,
)
from msviz.errors import MsvizError

__all__ = ["DEFAULT_DRAWS", "DEFAULT_THRESHOLD", "MODEL_PROFILE_KIND", "PROFILE_RUNS", "last_entry",
           "model_of_run", "model_profile_of", "recorded_model_profile", "run_model_profile"]

#: The sidecar kind of a recorded model profile.
MODEL_PROFILE_KIND = "model_profile"


def last_entry(entries: Sequence[dict], kind: str) -> dict | None:
    """The last sidecar entry of ``kind`` (None: there is none)."""
    return next((e for e in reversed(entries) if e.get("kind") == kind), None)


def model_of_run(work_dir: Any, entries: Sequence[dict], model: Any = None) -> Any:
    """The model a work dir was tuned for: ``model`` (anything :func:`msviz.models.load`
    takes), else the catalogue model its sidecar's ``environment`` line names."""
    if model is not None:
        return models.load(model)
    env = last_entry(entries, "environment")
    if env is not None and isinstance(env.get("model"), dict):
        source = env["model"].get("source")
        if isinstance(source, str) and source in models.MODELS:
            return models.load(source)
    if env is not None and env.get("model") is None and "model" in env:
        raise MsvizError(f"{work_dir} was tuned for one PrimFunc, not a model: there is no "
                         "model to profile")
    raise MsvizError(f"{work_dir} does not say which catalogue model it was tuned for: pass "
                     "model= (a msviz.models.Model, a catalogue name such as 'mlp', an .onnx "
                     "path, ...)")


def model_profile_of(work_dir: Any, model: Any, tasks: Sequence[Any], target: Any, *,
                     recorded: dict | None, threshold: float = DEFAULT_THRESHOLD,
                     refresh: bool = False, runs: int = PROFILE_RUNS,
                     draws: int = DEFAULT_DRAWS) -> pd.DataFrame:
    """The recorded profile (unless ``refresh``), else a fresh one of ``model`` built from the
    work dir's database and timed in ``draws`` fresh processes, as a
    :func:`~msviz.check.model_profile.model_profile_frame`."""
    if recorded is not None and not refresh:
        if recorded.get("error"):
            raise MsvizError(f"the model profile recorded in {work_dir} failed: "
                             f"{recorded['error']}; pass refresh=True to profile again")
        return model_profile_frame(recorded, threshold)
    return model_profile_frame(profile_model(model, tasks, work_dir, target, runs=runs,
                                             draws=draws), threshold)


def recorded_model_profile(run: Any) -> pd.DataFrame | None:
    """The model profile recorded in a run's sidecar as a frame; None when there is none, or
    when it failed (a view shows nothing rather than compile the model)."""
    recorded = last_entry(getattr(run, "_sidecar_other", ()), MODEL_PROFILE_KIND)
    if recorded is None or recorded.get("error"):
        return None
    return model_profile_frame(recorded)


def run_model_profile(run: Any, model: Any = None, *, threshold: float = DEFAULT_THRESHOLD,
                      refresh: bool = False, runs: int = PROFILE_RUNS,
                      draws: int = DEFAULT_DRAWS) -> pd.DataFrame:
    """A run's model profile: the one recorded after tuning, or a fresh one.

    Parameters
    ----------
    run : msviz.Run
        A work dir of a tuned model.
    model : Model | str | ..., optional
        The model (anything :func:`msviz.models.load` takes: a catalogue name such as
        ``"mlp"``, an ``.onnx`` path, a :class:`msviz.models.Model`); needed to profile anew
        unless the sidecar's ``environment`` line names a catalogue model.
    threshold : float
        ``flagged``: every draw's in-model time per call over ``threshold`` times the tuned
        latency (``ratio > threshold``); ``disputed``: some draws' but not every one's.
    refresh : bool
        Build the model with the work dir's database and profile it now, even when a profile
        is recorded (the new one is not written to the work dir).
    runs : int
        Model runs timed in each draw when profiling anew.
    draws : int
        Fresh processes the model is profiled in when profiling anew (a process's speed can
        be ~1x or ~2x for its whole life on a shared machine; the least draw is kept).

    Returns
    -------
    profile : pandas.DataFrame
        One row per task in task order: ``task`` (string), ``calls`` (int64, per model run),
        ``in_model_us`` (the least over the draws of the median time per call in the model),
        ``in_model_max_us`` (the slowest draw's), ``spread`` (the one over the other),
        ``tuned_us`` (the best record's mean run time), ``ratio`` (``in_model_us /
        tuned_us``; float64, NaN where a time is missing), ``fallback`` (no successful record:
        the model ran the untuned kernel), ``flagged`` and ``disputed`` (bool).
        ``attrs["other"]`` sums the calls of no task (VM builtins, ...) per symbol;
        ``attrs["draws"]`` the draws, ``attrs["runs"]`` the runs of each.

    Raises
    ------
    MsvizError
        No recorded profile and no model given or named; a PrimFunc's work dir; a work dir
        holding none of the model's workloads; a recorded profile that failed.
    """
    entries = getattr(run, "_sidecar_other", ())  # a LiveRun reads no sidecar
    recorded = last_entry(entries, MODEL_PROFILE_KIND)
    if recorded is not None and not refresh:
        return model_profile_of(run.work_dir, None, [], None, recorded=recorded,
                                threshold=threshold)
    model = model_of_run(run.work_dir, entries, model)
    if len(run.trials) == 0:
        raise MsvizError(f"{run.work_dir} holds no tuning record: there is no target to build "
                         f"model {model.name!r} for")
    target = run.trial(0).record.target or compat.make_target("llvm")
    tasks = model.extract_tasks(target)
    database = compat.JSONDatabase(work_dir=str(run.work_dir))
    if not any(database.has_workload(t.workload.mod) for t in tasks):
        raise MsvizError(f"{run.work_dir} holds no workload of model {model.name!r} (its tasks: "
                         f"{', '.join(t.name for t in tasks)}; the work dir's: "
                         f"{', '.join(run.tasks['task'])}): is it a PrimFunc's work dir, or "
                         "another model's?")
    return model_profile_of(run.work_dir, model, tasks, target, recorded=None,
                            threshold=threshold, refresh=True, runs=runs, draws=draws)
