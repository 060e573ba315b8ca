"""Each task's untuned time: its unscheduled PrimFunc built and timed once, at a model session's
start, with the session's own builder and runner (one batch; the caller holds the measurement
lock, so it never overlaps another measurement).

The time-to-quality curve counts a task not tuned yet at this time (see
:mod:`msviz.records.quality`). A work dir that already holds the times (a resumed session) is not
measured again.
"""

from __future__ import annotations

from typing import Any

from msviz import compat
from msviz.records import row

__all__ = ["measure_untuned"]


def measure_untuned(measurer: Any, tasks: list) -> list[dict]:
    """Build and run every task's workload as it is, in one batch.

    Parameters
    ----------
    measurer : MeasuringService
        The session's builder and runner.
    tasks : list of ModelTask
        The session's tasks.

    Returns
    -------
    tasks : list of dict
        One ``{"index", "name", "untuned_us", "error"}`` per task; ``untuned_us`` is the mean of
        ``run_secs`` in µs (as a trial's latency), None where it failed (``error`` says why: an
        unscheduled kernel cannot be built for a GPU, say).
    """
    mods = [t.workload.mod for t in tasks]
    built = measurer.build(mods)
    args = [compat.ArgInfo.from_entry_func(mod, remove_preproc=True) for mod in mods]
    try:
        results = measurer.run(built, args)
    finally:
        measurer.cleanup(built)
    out = []
    for task, res in zip(tasks, results, strict=True):
        latency = row.mean_latency_us(res.run_secs) if res.ok else None
        out.append({"index": task.index, "name": task.name, "untuned_us": latency,
                    "error": None if res.ok else res.error})
    return out
