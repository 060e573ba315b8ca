"""The dashboard's Tasks tab (a model): the model's events kept, the tab shown once the source
has two tasks, the model's estimated latency in the header, and every tab focused on the task
chosen there. :class:`~msviz.widgets.dashboard.Dashboard` inherits it.
"""

from __future__ import annotations

from typing import Any

from msviz.records.environment import graph_summary
from msviz.views.common import quiet_empty
from msviz.views.forecast import forecast_info
from msviz.views.quality import events_quality_info, run_quality_info
from msviz.views.tasks import tasks_info, total_text, untuned_times
from msviz.widgets.tasks_view import model_events

__all__ = ["DashboardTasks"]


class DashboardTasks:
    """The Tasks tab's part of :class:`~msviz.widgets.dashboard.Dashboard` (a mixin: it uses
    the dashboard's ``session``, ``_run``, ``_model``, ``tabs``, ``tasks_view``, ``table``,
    ``selection`` and ``plots``, and its methods named below)."""

    session: Any
    _run: Any
    _model: dict
    tabs: Any
    tasks_view: Any
    table: Any
    selection: Any
    plots: Any
    _tasks_stale: bool
    _plots_stale: bool
    _showing: Any  # the dashboard's methods
    _tasks: Any
    _trials: Any
    _update_plots: Any

    def _task_count(self) -> int:
        """How many tasks the source has: its ``tasks`` event, else its records."""
        if self._model["tasks"] is not None:
            return len(self._model["tasks"].get("tasks") or ())
        if self._run is not None:
            return len(self._run.tasks)
        return 0

    def _take_model_events(self, events: list) -> None:
        found = model_events(events)
        for kind in ("tasks", "scheduled", "end_to_end", "model_profile", "untuned",
                     "library_coverage"):
            if found[kind] is not None:
                self._model[kind] = found[kind]
        self._model["done"] |= found["done"]
        if self._task_count() > 1 and self.tasks_view not in self.tabs.children:
            # a model session's tasks arrived: the tab goes second, the selected tab stays
            shown = self.tabs.children[self.tabs.selected_index or 0]
            children = list(self.tabs.children)
            titles = list(self.tabs.titles)
            children.insert(1, self.tasks_view)
            titles.insert(1, "Tasks")
            with self.tabs.hold_trait_notifications():
                self.tabs.children = children
                self.tabs.titles = titles
                self.tabs.selected_index = children.index(shown)
        self._tasks_stale = True
        if self._showing(self.tasks_view):
            self._update_tasks()

    def _update_tasks(self) -> None:
        if not self._tasks_stale:
            return
        self._tasks_stale = False
        model = self._model
        tasks = model["tasks"] if model["tasks"] is not None else self._tasks()
        if tasks is None:
            return
        self.tasks_view.update(tasks, self._trials(), scheduled=model["scheduled"],
                               end_to_end=model["end_to_end"], done=model["done"],
                               model_profile=model["model_profile"], quality=self._quality(),
                               untuned=self._untuned(), forecast=self._forecast(),
                               coverage=model["library_coverage"],
                               runtimes=model.get("runtimes"), graph=self._graph())

    def _graph(self) -> str | None:
        """What the graph passes did: the session's model's, else the work dir's line."""
        if self.session is not None:
            model = getattr(self.session, "model", None)
            return None if model is None else \
                model.graph_report(self.session.target).summary()
        return graph_summary(getattr(self._run, "environment", None))

    def _forecast(self) -> Any:
        """The forecast scheduler's reasons and bands (None: a work dir, or no forecast)."""
        if self.session is None:
            return None
        with self.tasks_view.error.guard(self.tasks_view, clear=False):
            return forecast_info(self.session.events.snapshot())
        return None

    def _untuned(self) -> dict:
        """Each task's untuned time: the session's ``untuned`` event, else the work dir's."""
        return untuned_times(self._model["untuned"],
                             self._run if self._model["untuned"] is None else None)

    def _quality(self) -> Any:
        """The time-to-quality curve: a session's events, a work dir's sidecar or logs."""
        info = None
        with self.tasks_view.error.guard(self.tasks_view, clear=False), quiet_empty():
            info = (events_quality_info(self.session.events.snapshot())
                    if self.session is not None else run_quality_info(self._run))
        return info if info is not None and info.seconds else None

    def _model_best(self, trials: Any) -> str | None:
        """A model's headline: its estimated latency (sum of weight x best latency), not the
        fastest task's (None for one task)."""
        if self._task_count() < 2:
            return None

        tasks = self._model["tasks"] if self._model["tasks"] is not None else self._tasks()
        try:
            info = tasks_info(tasks, trials, untuned_us=self._untuned())
        except ValueError:
            return None
        if info.total_latency_us is None:
            return "model est. unknown (a task has no successful trial yet)"
        return f"model est. {total_text(info, 3, ' µs')}"

    def _on_task_focus(self, change: dict) -> None:
        """Focus every tab on the chosen task: the trials table filtered to it, its plots,
        and the trace and code of its best trial."""
        task = change["new"]
        filters = {k: v for k, v in self.table.filters.items() if k != "task"}
        if task:
            filters["task"] = task
        self.table.filters = filters
        self._plots_stale = True
        if self._showing(self.plots):
            self._update_plots()
        if task:
            trials = self._trials()
            mine = trials[(trials["task"] == task) & trials["latency_us"].notna()]
            if len(mine):
                self.selection.trial = int(mine.loc[mine["latency_us"].idxmin(), "trial"])
