"""Where a run's time went, as stored: an msviz run's profile rows (sidecar ``profile`` lines),
or for a stock work dir what its logs tell, the time between batches.

Stock MetaSchedule keeps no timings in a work dir (``ms.Profiler`` prints them and is gone). Its
per-task logs stamp each ``Trial #n`` line to the second, and a batch's trials are logged
together when the batch has been measured; the time from one batch's stamp to the next is what
that batch took, all stages together.

The same concept in the engine and drawn: :mod:`msviz.engine.profile` records it,
:mod:`msviz.views.profile` draws it.
"""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import Any

import pandas as pd

__all__ = [
    "GROUPS", "LOGS_STAGE", "OTHER", "PROFILE_COLUMNS", "STAGES", "batches_from_logs",
    "profile_frame", "stage_groups",
]

PROFILE_COLUMNS = ("task", "batch", "stage", "seconds")
#: The stages, in the order a batch passes through them: MetaSchedule's ``Profiler`` names where
#: it has one, ``msviz/...`` for what msviz adds, and what no timer covered.
STAGES = (
    "InitializeTask",
    "msviz/Untuned",
    "TaskScheduler/NextTaskId",
    "EvoSearch/PickBestFromDatabase",
    "EvoSearch/SampleInitPopulation",
    "EvoSearch/Evolve/PredictNormalizedScore",
    "EvoSearch/Evolve/Mutation",
    "EvoSearch/Evolve/Misc",
    "EvoSearch/PickWithEpsGreedy",
    "SendToBuilder",
    "SendToRunner",
    "SendToRunner/TrackerQueue",
    "msviz/CheckResults",
    "MeasureCallback/AddToDatabase",
    "MeasureCallback/RemoveBuildArtifact",
    "MeasureCallback/UpdateCostModel",
    "msviz/Events",
    "msviz/Commands",
    "msviz/Paused",
    "msviz/WaitingForDevices",
    "msviz/EndToEndCheck",
    "other",
)
OTHER = "other"
#: The one "stage" a stock work dir's logs can tell.
LOGS_STAGE = "logs: time between batches"


def profile_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Profile rows (a session's, or the sidecar's ``profile`` lines) as a frame: ``task``,
    ``batch`` (nullable Int64; NA for what is no batch), ``stage``, ``seconds``."""
    flat = [(r.get("task"), r.get("batch"), stage, float(secs))
            for r in rows for stage, secs in (r.get("stages") or {}).items()]
    frame = pd.DataFrame(flat, columns=list(PROFILE_COLUMNS))
    frame["batch"] = frame["batch"].astype("Int64")
    frame["seconds"] = frame["seconds"].astype(float)
    return frame


#: The ``timing`` of a session's final event: its profile's stages in three groups.
GROUPS = {
    "search": ("EvoSearch/",),
    "measure": ("SendToBuilder", "SendToRunner", "msviz/CheckResults",
                "MeasureCallback/AddToDatabase", "MeasureCallback/RemoveBuildArtifact"),
    "cost_model": ("MeasureCallback/UpdateCostModel",),
}


def stage_groups(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds of profile rows in the groups of :data:`GROUPS` (a stage name that ends with
    ``/`` takes every stage under it)."""
    out = dict.fromkeys(GROUPS, 0.0)
    for row in rows:
        for stage, secs in (row.get("stages") or {}).items():
            for group, names in GROUPS.items():
                if any(stage == n or (n.endswith("/") and stage.startswith(n)) for n in names):
                    out[group] += float(secs)
    return out


def batches_from_logs(trials: pd.DataFrame) -> pd.DataFrame:
    """A stock run's batches from its log stamps: each distinct (task, ``logged_at``) stamp
    ends a batch of that task; its seconds are the time since the stamp before it, of any task
    (a model's tasks take turns: the time since the task's own previous batch would count the
    other tasks' batches too, 28 times over for 28 tasks). The run's first batch has no start
    in the logs and is left out; ``batch`` counts each task's batches from 0. Stage
    :data:`LOGS_STAGE`."""
    rows = []
    if "logged_at" not in trials.columns or trials.empty:
        return profile_frame([])
    seen = trials.dropna(subset=["logged_at"])
    ends = sorted({(datetime.fromisoformat(str(s)), str(t))
                   for t, s in zip(seen["task"], seen["logged_at"], strict=True)})
    count: dict[str, int] = {}
    for (before, _), (after, task) in itertools.pairwise(ends):
        count[task] = count.get(task, 0) + 1
        rows.append({"task": task, "batch": count[task] - (ends[0][1] != task),
                     "stages": {LOGS_STAGE: (after - before).total_seconds()}})
    return profile_frame(rows)
