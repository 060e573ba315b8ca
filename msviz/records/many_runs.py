"""Many runs as one table: the trials of several work dirs, with the run's name and each
record's target as columns (e.g. to group runs of several machines by target)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from msviz.records.run import Run, open_work_dir
from msviz.records.typed_trials import export_frame, task_categorical

__all__ = ["open_many", "run_names"]


def run_names(dirs: list[Path | None]) -> list[str]:
    """Names of runs: each work dir's name, with as many parent folders as it takes to tell
    them apart (``a/wd``, ``b/wd``); ``run 1``, ``run 2``... where there is no work dir; the
    same dir twice gets a number (``wd (2)``)."""
    distinct = list(dict.fromkeys(d for d in dirs if d is not None))
    longest = max((len(d.parts) for d in distinct), default=0)
    depth = 1
    while depth < longest and len({"/".join(d.parts[-depth:]) for d in distinct}) < len(distinct):
        depth += 1
    names = ["/".join(d.parts[-depth:]) if d is not None else f"run {i + 1}"
             for i, d in enumerate(dirs)]
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def open_many(sources: Iterable[str | Path | Run], names: Iterable[str] | None = None
              ) -> pd.DataFrame:
    """Many runs' trials as one frame, e.g. to group by machine or target.

    Parameters
    ----------
    sources : iterable of str, Path or Run
        Work dirs, or runs (anything with a ``work_dir``, a Session too, is opened from it);
        one path or run alone is one run.
    names : iterable of str, optional
        One name per source; by default the work dirs' names (with parent folders where two
        are alike, see :func:`run_names`).

    Returns
    -------
    trials : pandas.DataFrame
        ``run`` (categorical, in the order given), then :func:`export_frame`'s columns;
        ``target`` is each record's own target. The index runs 0..n-1 over all runs.
    """
    if isinstance(sources, (str, Path, Run)) or hasattr(sources, "work_dir"):
        sources = [sources]  # one run, not the characters of its path
    runs = [s if isinstance(s, Run) else
            open_work_dir(getattr(s, "work_dir", s)) for s in sources]  # read only: a table
    if isinstance(names, str):
        names = [names]
    labels = list(names) if names is not None else run_names([r.work_dir for r in runs])
    if len(labels) != len(runs):
        raise ValueError(f"open_many: {len(labels)} names for {len(runs)} runs")
    if len(set(labels)) != len(labels):
        raise ValueError(f"open_many: run names must differ, got {labels}")
    if not runs:
        raise ValueError("open_many needs at least one work dir or run")
    frames = [export_frame(run) for run in runs]
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "run", pd.Categorical(
        [name for name, f in zip(labels, frames, strict=True) for _ in range(len(f))],
        categories=labels))
    out["task"] = task_categorical(out["task"])
    return out

