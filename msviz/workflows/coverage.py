"""What a tuning library covers of a model (or one workload), before any trial:
``msviz.coverage``. The library's matches per task are
:class:`~msviz.engine.tuning.library_reuse.LibraryReuse`'s (what a session takes from a library);
the untuned times are measured by the measuring service
(:class:`~msviz.engine.measure.service.MeasuringService`). The same concept computed and drawn:
:mod:`msviz.records.coverage`, :mod:`msviz.views.coverage`."""

from __future__ import annotations

from typing import Any

from msviz import compat
from msviz.engine.arguments import tasks_of
from msviz.engine.measure.service import MeasuringService
from msviz.engine.tuning.library_reuse import LibraryReuse, open_library
from msviz.records.coverage_types import Coverage

__all__ = ["coverage"]


def coverage(model: Any, library: Any, target: Any = "llvm", *, untuned: bool = True,
             params: dict | None = None) -> Coverage:
    """What a tuning library covers of a model (or one workload), before any trial.

    Parameters
    ----------
    model : str | Model | IRModule | PrimFunc | ...
        What a :class:`~msviz.engine.session.Session` takes: a catalogue model (``"resnet50"``),
        an ``.onnx`` file, a Relax module, or one workload.
    library : str | Path | list | Library
        Work dirs, bundles and folders of them.
    target : str | dict | Target
        The target the library's records must be of to be hits (``"llvm"``: this CPU).
    untuned : bool
        Build and time every task unscheduled (one batch, the local builder and runner), so the
        coverage says the model's estimated latency from the library alone against untuned and
        the share of the untuned latency covered.
    params : dict, optional
        A Relax model's weights.

    Returns
    -------
    Coverage
        One row per task (exact hit, anchor-block match, sibling or none) and the summary.
    """
    target = compat.make_target(target)
    found, tasks = tasks_of(model, target, params=params)
    lib = open_library(library)
    untuned_us: dict[str, float | None] = {}
    if untuned:
        service = MeasuringService(target)
        try:
            untuned_us = {t["name"]: t["untuned_us"] for t in service.time_untuned(tasks)}
        finally:
            service.close()
    reuse = LibraryReuse(lib, target, "improve", warn=lambda _message: None)
    name = found.name if found is not None else tasks[0].name
    return reuse.coverage(tasks, model=name, untuned_us=untuned_us)
