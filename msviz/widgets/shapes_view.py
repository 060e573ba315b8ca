"""A shape cover in the notebook: the summary, the regret heat map (each tuned shape's schedules
on every shape), dispatched against own latency, and the dispatch table.

``ShapesView(source)`` shows a finished cover (a :class:`~msviz.records.shape_cover.ShapeCover`
or a work root holding ``shapes.json``) or follows a live
:class:`~msviz.workflows.shapes.cover.ShapeTuning`: its events reach the kernel's loop through
:class:`~msviz.widgets.adapter.UIAdapter`, and the view redraws after a shape is tuned, a
shape cross-measured, and when the tuning ends.
"""

from __future__ import annotations

import asyncio
import html
from pathlib import Path
from typing import Any

import ipywidgets as W

from msviz.records.shape_cover import ShapeCover, read_shape_cover
from msviz.views.shapes import (
    ShapeCoverInfo,
    coverage_bars,
    regret_heatmap,
    shape_cover_html,
    shape_cover_info,
    shape_progress_text,
    shape_warnings,
)
from msviz.widgets.adapter import UIAdapter
from msviz.widgets.common import ErrorArea, figure_widget
from msviz.widgets.plots import show_figure
from msviz.workflows.shapes import ShapeTuning

__all__ = ["REDRAW_KINDS", "ShapesView", "shapes_view"]

#: A live cover's events after which the view redraws.
REDRAW_KINDS = frozenset({"tuned", "crossed", "finished", "failed", "done"})


class ShapesView(W.VBox):
    """A shape cover: summary, regret heat map, latency bars, dispatch table.

    Parameters
    ----------
    source : ShapeCover | str | Path | ShapeTuning
        A cover, a work root holding one (``shapes.json``), or a live tuning to follow.
    loop : asyncio.AbstractEventLoop, optional
        Where a live tuning's redraws run (default: the running loop, the kernel's).
    max_rate : float
        Most redraws a second of a live tuning.
    """

    def __init__(self, source: Any, *, loop: asyncio.AbstractEventLoop | None = None,
                 max_rate: float = 4.0) -> None:
        self.tuning: ShapeTuning | None = None
        self.cover: ShapeCover | None = None
        self.adapter: UIAdapter | None = None
        if isinstance(source, ShapeTuning):
            self.tuning = source
        elif isinstance(source, ShapeCover):
            self.cover = source
        elif isinstance(source, (str, Path)):
            self.cover = read_shape_cover(source)
        else:
            raise TypeError("ShapesView shows a ShapeCover, a work root holding shapes.json or "
                            f"a ShapeTuning, not {type(source).__name__}")
        self.info: ShapeCoverInfo | None = None
        self.redraws = 0
        self.progress = W.HTML()
        self.summary = W.HTML()
        self.heatmap = figure_widget()
        self.bars = figure_widget()
        self.table = W.HTML()
        self.error = ErrorArea()
        self.heatmap_box = W.Box([self.heatmap])
        self.bars_box = W.Box([self.bars])
        super().__init__([self.progress, self.summary, self.heatmap_box, self.bars_box,
                          self.table, self.error])
        self.add_class("msviz-shapes")
        if self.tuning is not None:
            self.adapter = UIAdapter(self.tuning, loop=loop, max_rate=max_rate)
            self.adapter.add_handler(self.on_events)
        self.refresh()

    def on_events(self, events: list) -> None:
        """Redraw after a batch of a live tuning's events that changes the cover (called by
        the adapter on the kernel loop); the progress line always."""
        if any(e.get("kind") in REDRAW_KINDS for e in events):
            self.refresh()
        else:
            self._progress()

    def _progress(self) -> None:
        if self.tuning is None:
            return
        events = list(self.tuning.events)
        value = (f"<div class='msviz-shapes-progress' style='color:#555'>"
                 f"Shape tuning: {html.escape(shape_progress_text(events))}</div>")
        notes = shape_warnings(events)
        if notes:  # the engine's advice, apart from the progress line
            items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
            value += (f"<details class='msviz-shapes-warnings' style='font-size:12px;"
                      f"color:#8a5300'><summary>{len(notes)} warning"
                      f"{'s' if len(notes) != 1 else ''}</summary><ul style='margin:0'>"
                      f"{items}</ul></details>")
        self.progress.value = value

    def refresh(self) -> None:
        """Recompute the info (a live tuning's cover once it has one) and redraw."""
        with self.error.guard(self) as guard:
            if self.tuning is not None:  # the cover so far, live
                self.cover = self.tuning.snapshot()
            self.info = shape_cover_info(self.cover) if self.cover is not None else None
            heat, bars = regret_heatmap(self.info), coverage_bars(self.info)
        if guard.failed:
            return
        self.redraws += 1
        with self.hold_sync():
            self._progress()
            self.summary.value = "" if self.info is None else (
                "<div class='msviz-shapes-summary' style='font-weight:600;font-size:14px'>"
                f"{html.escape(self.info.summary)}</div>")
            self.table.value = shape_cover_html(self.info, summary=False)
        show_figure(self.heatmap, heat)
        show_figure(self.bars, bars)
        # no cover yet: the table's line says so once, no figures of notes; nothing tuned:
        # the heat map's note says why, no second one
        self.heatmap_box.layout.display = "none" if self.info is None else None
        self.bars_box.layout.display = "none" if self.info is None or not self.info.chosen \
            else None

    def close(self) -> None:
        """Stop following the tuning and close the widgets."""
        adapter = getattr(self, "adapter", None)  # None: refused before it was made
        if adapter is not None:
            adapter.close()
        super().close()


def shapes_view(source: Any, **options: Any) -> ShapesView:
    """:class:`ShapesView` of ``source`` (a cover, a work root, a live tuning)."""
    return ShapesView(source, **options)
