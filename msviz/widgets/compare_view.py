"""Several runs side by side (``msviz.compare``): their best so far on one plot, by trial or
wall time, over the summary table."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ipywidgets as W

from msviz.records import Run, open_work_dir
from msviz.views.compare import (
    CompareInfo,
    compare_figure,
    compare_info,
    run_names,
    summary_frame,
)
from msviz.widgets.common import figure_widget
from msviz.widgets.plots import show_figure

__all__ = ["CompareView", "compare"]


class CompareView(W.VBox):
    """Runs compared: a step line per run over a table (best, speedup, trials to within 5%).

    Parameters
    ----------
    runs : mapping of str to Run
        Named runs; the first is the baseline of the speedups.
    """

    def __init__(self, runs: Mapping[str, Any]) -> None:
        self.runs = dict(runs)
        self.info: CompareInfo = compare_info(
            {name: (run.trials, run.tasks) for name, run in self.runs.items()},
            workloads={name: [run.workload_key(int(w)) for w in run.tasks["workload"]]
                       for name, run in self.runs.items()})
        self.x_axis = W.ToggleButtons(options=[("by trial", "trial"), ("by wall time", "time")],
                                      value="trial", description="Best so far")
        self.figure = figure_widget()
        self.table = W.HTML(self.table_html())
        self.table.add_class("msviz-compare-table")
        self.x_axis.observe(lambda _c: self.redraw(), names="value")
        self.redraw()
        super().__init__([self.x_axis, self.figure, self.table])
        self.add_class("msviz-compare")

    def redraw(self) -> None:
        """Draw the plot against the chosen axis."""
        show_figure(self.figure, compare_figure(self.info, x=self.x_axis.value))

    def table_html(self) -> str:
        frame = summary_frame(self.info).reset_index()
        shown = frame.astype(object).where(frame.notna(), "—")  # NaN and <NA> alike
        return shown.to_html(index=False, escape=True, border=0,
                             float_format=lambda v: f"{v:.4g}")


def compare(*sources: Any, names: list[str] | None = None) -> CompareView:
    """Compare runs side by side.

    Parameters
    ----------
    *sources : str | Path | Run | Session
        Work dirs (stock MetaSchedule's or msviz's), opened runs, or sessions (their work dir
        as it is now). The first is the baseline of the speedups.
    names : list of str, optional
        One name per source (default: the work dirs' names).

    Returns
    -------
    view : CompareView
        Its ``info`` holds the numbers; :func:`msviz.views.compare.summary_frame` makes the
        table a DataFrame.
    """
    if not sources:
        raise ValueError("msviz.compare needs at least one work dir, Run or Session")
    runs = []
    for i, source in enumerate(sources):
        if isinstance(source, (str, Path)):
            runs.append(open_work_dir(source))
        elif isinstance(source, Run):
            runs.append(source)
        elif hasattr(source, "open") and hasattr(source, "work_dir"):
            runs.append(source.open())  # a Session
        else:
            raise TypeError(f"source {i} is a {type(source).__name__}: pass a work dir, a Run "
                            "or a Session")
    if names is None:
        names = run_names([Path(run.work_dir) for run in runs])
    elif len(names) != len(runs) or len(set(map(str, names))) != len(names):
        raise ValueError(f"names must be {len(runs)} different names, one per source; got "
                         f"{names!r}")
    return CompareView(dict(zip(map(str, names), runs, strict=True)))
