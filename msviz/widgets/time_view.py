"""The Time tab: where a run's time went, by batch (live), by stage and by task."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from msviz.views.common import quiet_empty
from msviz.views.profile import (
    SOURCES,
    ProfileInfo,
    profile_batches_figure,
    profile_info,
    profile_tasks_figure,
    profile_totals_figure,
)
from msviz.widgets.common import ErrorArea, figure_widget
from msviz.widgets.plots import show_figure

__all__ = ["TimeView", "totals_html"]


def totals_html(info: ProfileInfo) -> str:
    """MetaSchedule's ``Profiler.table()`` as an HTML table: stage, minutes, seconds, share."""
    if info.source == "none":
        return "<i>no profile yet: the first batch's arrives when it has been measured</i>"
    rows = "".join(
        f"<tr><td>{i}</td><td>{html.escape(stage)}</td><td>{secs / 60:.4f}</td>"
        f"<td>{secs:.2f}</td><td>{share * 100:.2f}%</td></tr>"
        for i, (stage, secs, share) in enumerate(info.totals.itertuples(index=False)))
    return (f"<p class='msviz-time-source'>{html.escape(SOURCES[info.source])}: "
            f"{info.wall:.1f} s in all</p><table class='msviz-time'><tr><th>ID</th><th>Name"
            "</th><th>Time (min)</th><th>seconds</th><th>Percentage</th></tr>"
            f"<tr><td></td><td><b>Total</b></td><td>{info.wall / 60:.4f}</td>"
            f"<td>{info.wall:.2f}</td><td>100%</td></tr>{rows}</table>")


class TimeView(W.VBox):
    """Seconds per batch stacked by stage, totals by stage with their share of the wall time
    (as a plot and MetaSchedule's table), and per task for a model; :meth:`update` with
    ``Session.profile`` / ``Run.profile``."""

    def __init__(self, profile: Any = None) -> None:
        self.info: ProfileInfo | None = None
        self.table = W.HTML()
        self.totals = figure_widget()
        self.batches = figure_widget()
        self.tasks = figure_widget()
        self.tasks_box = W.Box([self.tasks], layout=W.Layout(display="none"))  # a model's only
        self.error = ErrorArea()
        super().__init__([self.table, self.totals, self.batches, self.tasks_box, self.error])
        self.add_class("msviz-time-view")
        if profile is not None:
            self.update(profile)

    def update(self, profile: Any) -> None:
        """Redraw from a profile frame (``task``, ``batch``, ``stage``, ``seconds``)."""
        with self.error.guard(self) as guard, quiet_empty():
            info = profile_info(profile)
            figures = [profile_totals_figure(info), profile_batches_figure(info)]
            many = info.tasks["task"].nunique() > 1
            if many:
                figures.append(profile_tasks_figure(info))
        if guard.failed:
            return
        self.info = info
        self.table.value = totals_html(info)
        with self.hold_sync():
            show_figure(self.totals, figures[0])
            show_figure(self.batches, figures[1])
            if many:
                show_figure(self.tasks, figures[2])
            self.tasks_box.layout.display = "flex" if many else "none"
