"""Several runs side by side (``msviz.compare``): their best so far on one plot, by trial or
wall time; for models their time-to-quality curves (:mod:`msviz.views.quality`); the summary
table."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ipywidgets as W

from msviz.records import Run, open_work_dir
from msviz.records.quality import run_started
from msviz.views.common import quiet_empty
from msviz.views.compare import (
    CompareInfo,
    compare_figure,
    compare_info,
    run_names,
    summary_frame,
)
from msviz.views.quality import (
    TimeToQualityInfo,
    borrow_untuned,
    run_quality_info,
    time_to_quality_figure,
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
                       for name, run in self.runs.items()},
            started={name: run_started(run) for name, run in self.runs.items()})
        self.x_axis = W.ToggleButtons(options=[("by trial", "trial"), ("by wall time", "time")],
                                      value="trial", description="Best so far")
        self.figure = figure_widget()
        self.table = W.HTML(self.table_html())
        self.table.add_class("msviz-compare-table")
        #: Each run's time-to-quality curve (models only; a stock run borrows the untuned
        #: times another run measured for the same workloads).
        self.quality_infos: list[TimeToQualityInfo] = []
        self.quality = figure_widget()
        self.quality_box = W.Box([self.quality], layout=W.Layout(display="none"))
        self.quality_box.add_class("msviz-compare-quality")
        if any(len(run.tasks) > 1 for run in self.runs.values()):
            runs = list(self.runs.values())
            with quiet_empty():
                self.quality_infos = [run_quality_info(run, name=name, untuned_us=untuned)
                                      for (name, run), untuned in zip(
                                          self.runs.items(), borrow_untuned(runs), strict=True)]
            self.quality_box.layout.display = None
        self.x_axis.observe(lambda _c: self.redraw(), names="value")
        self.redraw()
        super().__init__([self.x_axis, self.figure, self.quality_box, self.table])
        self.add_class("msviz-compare")

    def redraw(self) -> None:
        """Draw the plot against the chosen axis."""
        show_figure(self.figure, compare_figure(self.info, x=self.x_axis.value))
        if self.quality_infos:
            show_figure(self.quality, time_to_quality_figure(self.quality_infos,
                                                             x=self.x_axis.value))

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
