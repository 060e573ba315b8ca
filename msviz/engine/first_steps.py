"""A model session's first steps on its worker, before the first trial: every task's untuned
time (measured once by the measuring service, or read from a resumed work dir) and what the
tuning library holds for the tasks (:mod:`msviz.engine.tuning.library_reuse`). Each is an event
and a sidecar line; neither ends the session when it fails (a warning says why). ``worker`` is
the session's :class:`~msviz.engine.worker.Worker`, which calls these."""

from __future__ import annotations

import warnings
from typing import Any

from msviz.engine.tuning.library_reuse import LibraryReuse, open_library
from msviz.records.quality import UNTUNED_KIND, recorded_untuned
from msviz.records.sidecar import read_sidecar

__all__ = ["library_first", "untuned_times"]


def untuned_times(worker: Any) -> None:
    """A model's untuned times: measured once (one batch of every task's unscheduled
    PrimFunc, under the measurement lock), or those a resumed work dir holds; an
    ``untuned`` event and sidecar line (see :mod:`msviz.engine.measure.untuned`)."""
    if worker.model is None:
        return
    stored = recorded_untuned(read_sidecar(worker.work_dir).other) if worker.config.resume \
        else {}
    if stored and all(stored.get(t.name) is not None for t in worker.tasks):
        tasks = [{"index": t.index, "name": t.name, "untuned_us": stored[t.name],
                  "error": None} for t in worker.tasks]
    else:
        try:
            with worker.measure_lock, worker.profile.timeit("msviz/Untuned"):
                tasks = worker.shared.measurer.time_untuned(worker.tasks)
        except Exception as err:  # the curve's start only: never the session's end
            why = f"{type(err).__name__}: {err}"
            worker.warn(f"the untuned kernels could not be timed ({why}); the estimated model "
                        "latency is unknown until every task has a successful trial")
            tasks = [{"index": t.index, "name": t.name, "untuned_us": None, "error": why}
                     for t in worker.tasks]
        worker.write_sidecar(UNTUNED_KIND, {"tasks": tasks})
    worker.untuned_us = {t["name"]: t["untuned_us"] for t in tasks}
    worker.events.emit(UNTUNED_KIND, worker.name, tasks=tasks)

def library_first(worker: Any) -> None:
    """What the tuning library holds for the tasks (:mod:`msviz.engine.tuning.library_reuse`):
    their coverage, exact hits committed, schedules carried, the cost model pre-trained;
    ``library_coverage`` and ``library_reuse`` events and sidecar lines. A library that
    fails here is named in a warning; tuning goes on without it."""
    if not worker.config.library:
        return

    try:
        with worker.measure_lock, worker.profile.timeit("msviz/Library"):
            with warnings.catch_warnings():  # its problems become warning events below
                warnings.simplefilter("ignore")
                library = open_library(worker.config.library)
            reuse = LibraryReuse(library, worker.config.target, worker.config.reuse, worker.warn)
            for message in [*library.problems, *library.other_targets(worker.config.target)]:
                worker.warn(f"library: {message}")
            cov = reuse.coverage(worker.tasks, model=worker.name, untuned_us=worker.untuned_us)
            data = reuse.coverage_data(cov)
            worker.write_sidecar("library_coverage", data)
            worker.events.emit("library_coverage", worker.name, **data)
            reuse.pretrain(worker.shared, worker.tuners)  # first: it ranks the carries
            for tuner in worker.tuners:
                reuse.prepare(tuner, worker.config.trials_per_batch)
    except Exception as err:  # the library is a help, never the session's end
        worker.warn(f"library: not used ({type(err).__name__}: {err})")
        return
    worker.write_sidecar("library_reuse", reuse.reuse_data())
    worker.events.emit("library_reuse", worker.name, **reuse.reuse_data())
