"""The plots panel: best so far (by trial or wall time), every trial, cost model, decisions,
per-task bars; plotly FigureWidgets updated in place.

The same concept one room down: :mod:`msviz.views.plots` makes their infos and figures."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from msviz.trace.spaces import trial_decisions
from msviz.views import best_so_far_figure, best_so_far_info
from msviz.views import plots as P
from msviz.views.common import quiet_empty
from msviz.widgets.common import ErrorArea, figure_widget, layout_leaves, replace_figure
from msviz.widgets.figure_widgets import shown_layout

__all__ = ["PlotPanel", "show_figure"]

#: Columns the every-trial scatter can be coloured by (those the trials carry).
COLOR_COLUMNS = ("status", "generation", "batch", "task")


def show_figure(widget: Any, fig: Any) -> None:
    """Make a FigureWidget show ``fig`` in place, and make the browser forget the settings of
    the previous figure that ``fig`` leaves out.

    Assigning a new layout reaches plotly.js as a relayout, which keeps what the new layout does
    not name: a "no trials yet" note or hidden axes would stay after the data came, and a log
    axis after switching to GFLOPS. Resetting those settings (``None``) first avoids that.
    """
    # the widget's own layout dict, read without the deep copy of to_plotly_json() (its
    # template alone is over a thousand dicts): layout_leaves only reads it
    shown = shown_layout(widget)
    if not isinstance(shown, dict):
        shown = widget.layout.to_plotly_json()
    stale = set(layout_leaves(shown)) - set(layout_leaves(fig.layout.to_plotly_json()))
    if stale:
        widget.plotly_relayout({path: None for path in sorted(stale)})
    replace_figure(widget, fig)


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
    importance : ImportanceView, optional
        Shown beside the decisions plot and drawn with it (decision importance, the proposed
        space restriction and its re-run).
    started : callable, optional
        Returns when the run started (a timestamp, or None while unknown): wall times count
        from it, else from the first trial.
    """

    def __init__(self, trials: Any, tasks: Any = None, *, run: Any = None,
                 importance: Any = None, started: Any = None) -> None:
        self._started = started or (lambda: None)
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
        # drawn on request (it reads traces): hidden until then, so no empty axes show
        self.importance = importance
        beside = [importance] if importance is not None else []
        self.decisions_box = W.Box([self.decisions, *beside],
                                   layout=W.Layout(display="none", flex_flow="row wrap"))
        self.decisions_button = W.Button(description="Plot decisions", icon="sliders",
                                         tooltip="read the fastest trials' traces")
        self.decisions_button.add_class("msviz-decisions-button")
        self.decisions_note = W.HTML(
            "<i>decisions against latency: reads the traces of the fastest trials</i>")
        self.error = ErrorArea()
        self._run, self._trials, self._tasks = run, trials, tasks
        # what each plot shows now: (trials, tasks, its options); a plot whose key is
        # unchanged is not rebuilt (a menu redraws only its own plot)
        self._drawn: dict[str, tuple] = {}
        for control in (self.x_axis, self.metric, self.color_by):
            control.observe(self._on_control, names="value")
        self.decisions_button.on_click(lambda _b: self.plot_decisions())
        super().__init__([
            W.HBox([self.x_axis, self.metric]), self.history,
            self.color_by, self.scatter, self.cost_model, self.task_bars_box,
            W.HBox([self.decisions_button, self.decisions_note]), self.decisions_box, self.error,
        ])
        self.update(trials, tasks)

    def _on_control(self, change: dict) -> None:
        if change["new"] is not None:  # a menu briefly holds None while its options change
            self.update(self._trials, self._tasks)

    def _sync_color_options(self, trials: Any) -> None:
        """Offer the colour columns the trials carry; keep the choice while it is offered."""
        colorable = [c for c in COLOR_COLUMNS
                     if c in trials.columns and (c == "status" or trials[c].notna().any())]
        if list(self.color_by.options) != colorable:
            keep = self.color_by.value if self.color_by.value in colorable else "status"
            with self.color_by.hold_trait_notifications():
                self.color_by.options = colorable
                self.color_by.value = keep

    def update(self, trials: Any, tasks: Any = None) -> None:
        """Redraw every plot from new data (in place); a plot that fails leaves the others.

        New data comes as a new frame (as ``Session.trials`` and ``Run.trials`` give it): a
        plot already drawn from these same frame objects, with the same options, is kept.
        """
        self._trials, self._tasks = trials, tasks if tasks is not None else self._tasks
        failed = []
        with quiet_empty():  # empty data: the plots say so
            self._sync_color_options(trials)
            draws = [
                ("best so far", self.history, (self.metric.value, self.x_axis.value),
                 lambda: best_so_far_figure(best_so_far_info(
                     trials, metric=self.metric.value, started=self._started()),
                     x=self.x_axis.value)),
                ("every trial", self.scatter, (self.color_by.value,),
                 lambda: P.trial_scatter_figure(
                     P.trial_scatter_info(trials, color_by=self.color_by.value or "status"))),
                ("cost model", self.cost_model, (),
                 lambda: P.cost_model_figure(P.cost_model_info(trials))),
            ]
            multi = self._tasks is not None and len(self._tasks) > 1
            if multi:
                draws.append(("task bars", self.task_bars, (),
                              lambda: P.task_bars_figure(P.task_bars_info(self._tasks))))
            self.task_bars_box.layout.display = "" if multi else "none"
            for name, widget, options, build in draws:
                # the same frame objects (held here, so never a reused id) and options:
                # nothing to redraw
                drawn = self._drawn.get(name)
                if drawn is not None and drawn[0] is trials and drawn[1] is self._tasks \
                        and drawn[2] == options and drawn[3] == len(trials):
                    continue
                key = (trials, self._tasks, options, len(trials))
                self._drawn.pop(name, None)
                try:
                    show_figure(widget, build())
                    self._drawn[name] = key
                except Exception as err:
                    failed.append(f"{name}: {err}")
        if failed:
            self.error.show(self, "; ".join(failed))
        else:
            self.error.clear()

    def plot_decisions(self, run: Any = None) -> None:
        """Draw decisions against latency for the fastest trials (reads their traces)."""
        run = run or (self._run() if callable(self._run) else self._run)
        if run is None:
            self.error.show(self, "no trials yet: no traces to read decisions from")
            return
        task = _focus_task(self._trials)
        with self.error.guard(self, clear=False) as guard:
            frame = trial_decisions(run, task=task)
            show_figure(self.decisions, P.decision_plot_figure(P.decision_plot_info(frame)))
        if guard.failed:
            return
        if self.importance is not None:
            self.importance.show(task=task)
        self.decisions_box.layout.display = ""
        self.decisions_button.description = "Replot decisions"
        self.decisions_note.value = (
            f"<i>decisions of the {len(frame)} fastest trials of the most common design space, "
            f"as of trial {html.escape(str(len(run.trials)))}</i>")


def _focus_task(trials: Any) -> str | None:
    """The task the plots show: the only one, else the one with the most successful trials."""
    if trials is None or "task" not in trials.columns or trials.empty:
        return None
    counts = trials.loc[trials["status"] == "ok", "task"].value_counts()
    return str(counts.index[0]) if len(counts) else None
