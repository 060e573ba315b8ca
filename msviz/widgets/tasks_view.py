"""The Tasks tab: MetaSchedule's per-task table (with the scheduler's gradients and its next
pick), what a tuning library covers of the model, the forecast scheduler's reasons and bands,
the estimated model latency, trials per task, and the end-to-end result.

Fed from a finished run (``Run.tasks``, ``Run.trials`` and ``Run.coverage``) or from a session's
events (the dashboard's :class:`~msviz.widgets.adapter.UIAdapter` hands them over): the last
``tasks``, ``scheduled``, ``library_coverage``, ``forecast`` and ``end_to_end`` events and every
``task_done``. Choosing a task in :attr:`TasksView.focus` sets ``selection.task``; the dashboard
focuses its other tabs on it.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from typing import Any

import ipywidgets as W
import pandas as pd

from msviz.records.coverage_types import Coverage
from msviz.views import coverage as C
from msviz.views import forecast as F
from msviz.views import model_profile as P
from msviz.views import quality as Q
from msviz.views import runtimes as R
from msviz.views import tasks as V
from msviz.views.common import quiet_empty
from msviz.views.end_to_end import end_to_end_html, end_to_end_info
from msviz.widgets.common import ErrorArea, Selection, figure_widget
from msviz.widgets.plots import show_figure

__all__ = ["TasksView", "model_events"]

#: What the focus buttons show for "no task chosen".
ALL_TASKS = "All tasks"


def model_events(events: Iterable[Any]) -> dict[str, Any]:
    """The model events a Tasks tab draws from: the last ``tasks``, ``scheduled``,
    ``end_to_end``, ``model_profile``, ``untuned`` and ``library_coverage`` events, and the
    indexes of tasks a ``task_done`` event ended."""
    out: dict[str, Any] = {"tasks": None, "scheduled": None, "end_to_end": None,
                           "model_profile": None, "untuned": None, "library_coverage": None,
                           "done": set()}
    for event in events:
        kind = event.kind
        if kind in ("tasks", "scheduled", "end_to_end", "model_profile", "untuned",
                    "library_coverage"):
            out[kind] = event
        elif kind == "task_done" and event.get("task_index") is not None:
            out["done"].add(int(event["task_index"]))
    return out


def _cell(column: str, value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "Y" if value else ""
    if isinstance(value, float):
        if math.isnan(value):
            return "N/A"
        if column == "FLOP":
            return f"{value:,.0f}"
        return f"{value:.4f}"
    return html.escape(str(value))


def table_html(info: V.TasksInfo, *, focus: str | None = None,
               library: Mapping[str, str] | None = None) -> str:
    """The per-task table as HTML: the next pick marked, the focused task highlighted; with
    ``library`` (task name -> its match in a tuning library's coverage) a ``Library`` column
    after the name."""
    columns = list(info.frame.columns[:-1])
    if library is not None:
        columns.insert(1, "Library")
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["ID", *columns])
    rows = []
    for task_id, row in info.frame.iterrows():
        cells = []
        for column, value in row.items():
            if column == "Next":
                continue
            text = _cell(str(column), value)
            if column == "Name" and row["Next"]:
                text = f"&#9654; {text} <i>(next)</i>"
            cells.append(f"<td>{text}</td>")
            if column == "Name" and library is not None:
                match = library.get(str(value), "")
                color = C.MATCH_COLORS.get(match, "#555")
                cells.append(f"<td class='msviz-task-library' style='color:{color}'>"
                             f"{html.escape(match)}</td>")
        classes = ["msviz-task-row"]
        if row["Next"]:
            classes.append("msviz-next-pick")
        if focus is not None and row["Name"] == focus:
            classes.append("msviz-focused")
        style = " style='background:#e8f0fe'" if focus is not None and row["Name"] == focus \
            else (" style='font-weight:600'" if row["Next"] else "")
        rows.append(f"<tr class='{' '.join(classes)}'{style}><td>{task_id}</td>"
                    f"{''.join(cells)}</tr>")
    note = f"Total latency (us): {html.escape(V.total_text(info))}"
    if info.next_pick is not None:
        note += (f" &middot; scheduler: {html.escape(str(info.scheduler))}, next pick: "
                 f"task #{info.next_pick} ({html.escape(str(info.reason))})")
    return (
        "<table class='msviz-tasks' style='border-collapse:collapse;font-size:12px'>"
        "<style>.msviz-tasks td,.msviz-tasks th{border:1px solid #ddd;padding:2px 6px;"
        "text-align:right}.msviz-tasks td:nth-child(2){text-align:left}</style>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<div class='msviz-tasks-total'>{note}</div>"
    )



def _section(css_class: str) -> tuple[W.HTML, Any, W.VBox]:
    """A section's text, figure and box (hidden until it has something to show)."""
    text, plot = W.HTML(), figure_widget()
    box = W.VBox([text, plot], layout=W.Layout(display="none"))
    box.add_class(css_class)
    return text, plot, box

class TasksView(W.VBox):
    """The Tasks tab of a model: table, model latency, trials per task, end to end.

    Parameters
    ----------
    tasks : list of dict | Event | pandas.DataFrame, optional
        A ``tasks`` event (or its list) or ``Run.tasks``; later ones come through
        :meth:`update`.
    trials : pandas.DataFrame, optional
        ``Run.trials`` / ``Session.trials``.
    selection : Selection, optional
        The dashboard's selection; the focused task goes to ``selection.task``.
    """

    def __init__(self, tasks: Any = None, trials: Any = None, *,
                 selection: Selection | None = None) -> None:
        self.selection = selection if selection is not None else Selection()
        self.table = W.HTML()
        #: What the graph passes did to the model (hidden when nothing says).
        self.graph = W.HTML(layout=W.Layout(display="none"))
        self.graph.add_class("msviz-graph")
        self.focus = W.ToggleButtons(options=[ALL_TASKS], value=ALL_TASKS,
                                     description="Focus", style={"button_width": "auto"})
        self.focus.add_class("msviz-task-focus")
        self.x_axis = W.ToggleButtons(options=[("by trial", "trial"), ("by wall time", "time")],
                                      value="trial", description="Model latency")
        self.latency = figure_widget()
        #: The time-to-quality curve (estimated model latency after each batch, a task not
        #: tuned yet at its untuned time): hidden until a session's or work dir's first point.
        self.quality = figure_widget()
        self.quality_box = W.Box([self.quality], layout=W.Layout(display="none"))
        self.quality_box.add_class("msviz-time-to-quality")
        self.quality_info: Q.TimeToQualityInfo | None = None
        self.task_trials = figure_widget()
        self.end_to_end = W.HTML()
        self.model_profile = W.HTML()
        self.model_profile_plot = figure_widget()
        # hidden until there is a profile (an empty plot says nothing)
        self.model_profile_box = W.VBox([self.model_profile, self.model_profile_plot],
                                        layout=W.Layout(display="none"))
        self.profile_info: P.ModelProfileInfo | None = None
        #: The forecast scheduler's last reason, calibration, model at the end of the budget
        #: and the tasks' bands: hidden unless the session forecasts.
        self.forecast_text, self.forecast_plot, self.forecast_box = _section("msviz-forecast")
        self.forecast_info: F.ForecastInfo | None = None
        #: What a tuning library covers of the model (and how many trials came from it):
        #: hidden without a coverage.
        self.library_text, self.library_plot, self.library_box = _section("msviz-library")
        self.coverage_info: C.CoverageInfo | None = None
        self._drawn_coverage: Any = None
        #: The model against ONNX Runtime and OpenVINO (``msviz.vs_runtimes``' sidecar line):
        #: hidden without one.
        self.runtimes_text, self.runtimes_plot, self.runtimes_box = _section("msviz-runtimes")
        self.runtimes_info: R.RuntimesInfo | None = None
        self.error = ErrorArea()
        self.info: V.TasksInfo | None = None
        self.latency_info: V.ModelLatencyInfo | None = None
        self._data: dict[str, Any] = {"tasks": tasks, "trials": trials, "scheduled": None,
                                      "end_to_end": None, "model_profile": None,
                                      "untuned": {}, "done": set(), "coverage": None,
                                      "runtimes": None}
        self.focus.observe(self._on_focus, names="value")
        self.selection.observe(self._on_selection, names="task")
        self.x_axis.observe(lambda _c: self._draw_figures(), names="value")
        super().__init__([self.focus, self.graph, self.table, self.library_box, self.end_to_end,
                          self.model_profile_box, self.runtimes_box, self.forecast_box,
                          self.x_axis,
                          self.quality_box, self.latency, self.task_trials, self.error])
        self.add_class("msviz-tasks-view")
        self.update(tasks, trials)

    # -- data ------------------------------------------------------------------------------------

    def update(self, tasks: Any = None, trials: Any = None, *, scheduled: Any = None,
               end_to_end: Any = None, done: Iterable[int] = (),
               model_profile: Any = None, quality: Q.TimeToQualityInfo | None = None,
               untuned: Mapping[str, float | None] | None = None,
               forecast: F.ForecastInfo | None = None, coverage: Any = None,
               graph: str | None = None, runtimes: Mapping | None = None) -> None:
        """Redraw from new data; what is left out (None) keeps its last value.
        ``model_profile`` is ``Run.model_profile()`` or a ``model_profile`` event; ``quality``
        the time-to-quality curve (:func:`msviz.views.quality.events_quality_info` of a
        session, :func:`~msviz.views.quality.run_quality_info` of a work dir); ``untuned``
        each task's untuned time (:func:`msviz.views.tasks.untuned_times`), at which the total
        counts a task not tuned yet; ``forecast`` the forecast scheduler's
        (:func:`msviz.views.forecast.forecast_info` of a session's events); ``coverage`` a
        tuning library's: a :class:`~msviz.records.coverage_types.Coverage`
        (``Run.coverage``) or the session's ``library_coverage`` event; ``runtimes`` a
        ``runtimes`` sidecar line (``msviz.vs_runtimes``); ``graph`` what the graph passes did
        (:meth:`msviz.models.graph_passes.GraphReport.summary`)."""
        if graph is not None:
            self.graph.value = f"<b>Graph</b>: {html.escape(graph)}"
            self.graph.layout.display = None
        if quality is not None:
            self.quality_info = quality
        if forecast is not None:
            self.forecast_info = forecast
        data = self._data
        if untuned:
            data["untuned"] = dict(untuned)
        for key, value in (("tasks", tasks), ("trials", trials), ("scheduled", scheduled),
                           ("end_to_end", end_to_end), ("model_profile", model_profile),
                           ("coverage", coverage), ("runtimes", runtimes)):
            if value is not None:
                data[key] = value
        data["done"] = set(data["done"]) | set(done)
        if data["tasks"] is None:
            self.table.value = "<i>no tasks yet: they are listed when tuning starts</i>"
            self._draw_library()
            return
        with self.error.guard(self) as guard:
            with quiet_empty():  # no trials yet: the plots say so
                self.info = V.tasks_info(data["tasks"], data["trials"], data["scheduled"],
                                         done=data["done"], untuned_us=data["untuned"])
                if data["trials"] is not None:
                    self.latency_info = V.model_latency_info(
                        data["tasks"], data["trials"], data["end_to_end"],
                        untuned_us=data["untuned"])
        if guard.failed:
            return
        names = [ALL_TASKS, *self.info.frame["Name"]]
        if list(self.focus.options) != names:
            keep = self.focus.value if self.focus.value in names else ALL_TASKS
            with self.focus.hold_trait_notifications():
                self.focus.options = names
                self.focus.value = keep
        self._draw_library()  # first: the table shows each task's match
        self._draw_table()
        self.end_to_end.value = end_to_end_html(
            None if data["end_to_end"] is None else end_to_end_info(data["end_to_end"]))
        self._draw_model_profile()
        self._draw_runtimes()
        self._draw_forecast()
        self._draw_figures()

    def update_from_events(self, events: Iterable[Any], trials: Any = None) -> None:
        """Redraw from a session's events (all so far, or only the new ones: the curve then
        holds only theirs)."""
        events = list(events)
        found = model_events(events)
        with quiet_empty():
            quality = Q.events_quality_info(events)
        self.update(found["tasks"], trials, scheduled=found["scheduled"],
                    end_to_end=found["end_to_end"], done=found["done"],
                    model_profile=found["model_profile"],
                    quality=quality if quality.seconds else None,
                    untuned=V.untuned_times(found["untuned"]) if found["untuned"] else None,
                    forecast=F.forecast_info(events), coverage=found["library_coverage"])

    @property
    def task_count(self) -> int:
        """How many tasks the view lists."""
        return 0 if self.info is None else len(self.info.frame)

    # -- drawing ---------------------------------------------------------------------------------

    def _focused(self) -> str | None:
        return None if self.focus.value in (None, ALL_TASKS) else self.focus.value

    def _draw_table(self) -> None:
        if self.info is not None:
            cov = self.coverage_info
            library = None if cov is None else {r.name: r.match for r in cov.rows}
            self.table.value = table_html(self.info, focus=self._focused(), library=library)

    def _draw_library(self) -> None:
        coverage = self._data["coverage"]
        if coverage is None:
            return
        # a malformed coverage is said under the view (after the table's guard cleared it)
        with self.error.guard(self, clear=False), quiet_empty():  # no task: the figure says
            if coverage is not self._drawn_coverage:  # a new coverage: once per session
                cov = coverage if isinstance(coverage, Coverage) else C.coverage_of_events(
                    [coverage])
                self.coverage_info = C.coverage_info(cov)
                show_figure(self.library_plot, C.coverage_figure(self.coverage_info))
                self._drawn_coverage = coverage
            carried = C.library_trials_text(self._data["trials"])  # grows as trials come
            self.library_text.value = (C.coverage_html(self.coverage_info) + "<div class="
                                       f"'msviz-library-trials'>{html.escape(carried)}</div>")
            self.library_box.layout.display = None

    def _draw_model_profile(self) -> None:
        profile = self._data["model_profile"]
        if profile is not None and not isinstance(profile, pd.DataFrame):  # an event or its data
            if profile.get("error"):
                self.model_profile.value = ("<div style='color:#b00020'>Model profile: "
                                            f"{html.escape(str(profile.get('error')))}</div>")
                self.model_profile_box.layout.display = None
                return
            profile = {k: profile.get(k) for k in ("rows", "other", "hook_us", "runs", "draws")}
        if profile is None:
            return
        with self.error.guard(self, clear=False):
            self.profile_info = P.model_profile_info(profile)
            self.model_profile.value = P.model_profile_html(self.profile_info)
            show_figure(self.model_profile_plot, P.model_profile_figure(self.profile_info))
            self.model_profile_box.layout.display = None

    def _draw_runtimes(self) -> None:
        data = self._data["runtimes"]
        if data is None:
            return
        with self.error.guard(self, clear=False):
            self.runtimes_info = R.runtimes_info(data)
            self.runtimes_text.value = R.runtimes_html(self.runtimes_info)
            show_figure(self.runtimes_plot, R.runtimes_figure(self.runtimes_info))
            self.runtimes_box.layout.display = None

    def _draw_forecast(self) -> None:
        info = self.forecast_info
        if info is None:
            return
        with self.error.guard(self, clear=False):
            self.forecast_text.value = F.forecast_html(info)
            show_figure(self.forecast_plot,
                        F.forecast_figure(info, F.shown_tasks(info, self._focused())))
            self.forecast_box.layout.display = None

    def _draw_figures(self) -> None:
        if self.quality_info is not None and self.quality_info.seconds:
            with self.error.guard(self, clear=False):
                # against wall time always: what the curve is for (the model latency plot
                # below follows the trial / wall time buttons)
                show_figure(self.quality, Q.time_to_quality_figure(self.quality_info))
                self.quality_box.layout.display = None
        info = self.latency_info
        if info is None:
            return
        with self.error.guard(self, clear=False):
            show_figure(self.latency, V.model_latency_figure(info, x=self.x_axis.value))
            show_figure(self.task_trials, V.task_trials_figure(info, x=self.x_axis.value))

    # -- focus -----------------------------------------------------------------------------------

    def _on_focus(self, change: dict) -> None:
        if change["new"] is None:  # the buttons briefly hold None while their options change
            return
        name = "" if change["new"] == ALL_TASKS else change["new"]
        if self.selection.task != name:
            self.selection.task = name
        self._draw_table()
        self._draw_forecast()  # the focused task's band joins the largest tasks'

    def _on_selection(self, change: dict) -> None:
        wanted = change["new"] or ALL_TASKS
        if wanted in self.focus.options and self.focus.value != wanted:
            self.focus.value = wanted
