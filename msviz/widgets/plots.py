"""The plots panel: best so far (by trial or wall time), every trial, cost model, decisions,
per-task bars; plotly FigureWidgets updated in place."""

from __future__ import annotations

import warnings
from typing import Any

import ipywidgets as W

from msviz.errors import MsvizWarning
from msviz.views import best_so_far_figure, best_so_far_info
from msviz.views import plots as P
from msviz.widgets.common import ErrorArea, figure_widget, replace_figure

__all__ = ["PlotPanel"]


class PlotPanel(W.VBox):
    """Plots of a trials table, redrawn by :meth:`update`.

    Parameters
    ----------
    trials : pandas.DataFrame
        ``Run.trials`` or ``Session.trials``.
    tasks : pandas.DataFrame, optional
        ``Run.tasks``, for the per-task bars of multi-task runs.
    run : Run or callable returning one, optional
        To read decisions from trial traces (parallel coordinates); drawn on request.
    """

    def __init__(self, trials: Any, tasks: Any = None, *, run: Any = None) -> None:
        self.x_axis = W.ToggleButtons(options=[("by trial", "trial"), ("by wall time", "time")],
                                      value="trial", description="Best so far")
        self.metric = W.ToggleButtons(options=[("latency", "latency_us"), ("GFLOPS", "gflops")],
                                      value="latency_us")
        self.color_by = W.Dropdown(options=["status"], value="status", description="Colour by")
        self.history = figure_widget()
        self.scatter = figure_widget()
        self.cost_model = figure_widget()
        self.task_bars = figure_widget()
        self.task_bars_box = W.Box([self.task_bars], layout=W.Layout(display="none"))
        self.decisions = figure_widget()
        self.decisions_button = W.Button(description="Plot decisions", icon="sliders",
                                         tooltip="read the fastest trials' traces")
        self.error = ErrorArea()
        self._run, self._trials, self._tasks = run, trials, tasks
        for control in (self.x_axis, self.metric, self.color_by):
            control.observe(lambda _c: self.update(self._trials, self._tasks), names="value")
        self.decisions_button.on_click(lambda _b: self.plot_decisions())
        super().__init__([
            W.HBox([self.x_axis, self.metric]), self.history,
            self.color_by, self.scatter, self.cost_model, self.task_bars_box,
            self.decisions_button, self.decisions, self.error,
        ])
        self.update(trials, tasks)

    def update(self, trials: Any, tasks: Any = None) -> None:
        """Redraw every plot from new data (in place)."""
        self._trials, self._tasks = trials, tasks if tasks is not None else self._tasks
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MsvizWarning)  # empty data: the plots say so
            try:
                colorable = [c for c in ("status", "generation", "batch", "task")
                             if c in trials.columns and trials[c].notna().any()]
                if list(self.color_by.options) != colorable:
                    self.color_by.options = colorable
                info = best_so_far_info(trials, metric=self.metric.value)
                replace_figure(self.history, best_so_far_figure(info, x=self.x_axis.value))
                replace_figure(self.scatter, P.trial_scatter_figure(
                    P.trial_scatter_info(trials, color_by=self.color_by.value)))
                replace_figure(self.cost_model, P.cost_model_figure(P.cost_model_info(trials)))
                if self._tasks is not None and len(self._tasks):
                    replace_figure(self.task_bars, P.task_bars_figure(
                        P.task_bars_info(self._tasks)))
                multi = self._tasks is not None and len(self._tasks) > 1
                self.task_bars_box.layout.display = "" if multi else "none"
                self.error.clear()
            except Exception as err:
                self.error.show(self, err)

    def plot_decisions(self, run: Any = None) -> None:
        """Draw decisions against latency for the fastest trials (reads their traces)."""
        run = run or (self._run() if callable(self._run) else self._run)
        if run is None:
            self.error.show(self, "no run to read decisions from")
            return
        try:
            frame = P.trial_decisions(run)
            replace_figure(self.decisions, P.decision_plot_figure(P.decision_plot_info(frame)))
        except Exception as err:
            self.error.show(self, err)
