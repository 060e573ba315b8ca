"""The evolution view: each generation's predicted scores, mutations, pick and measurements."""

from __future__ import annotations

import html
import math
from typing import Any

import ipywidgets as W

from msviz.views._plotly_imports import go
from msviz.views.common import note_figure
from msviz.views.evolution import EvolutionInfo, evolution_figure, evolution_info
from msviz.widgets.common import ErrorArea, figure_widget
from msviz.widgets.plots import show_figure

__all__ = ["EvolutionView"]


def generation_summary_html(info: Any) -> str:
    """Counts of one generation: initial population, mutations, pick, measured."""
    muts = ", ".join(f"{k}: {v}" for k, v in sorted(info.mutations.items())) or "none"
    measured = [m for m in info.measured_us if m is not None and not math.isnan(m)]
    best = f"{min(measured):.2f} µs" if measured else "n/a"
    failures = ", ".join(f"{k}: {v}" for k, v in info.failures.items()) or "none"
    return (
        f"<b>Generation {info.generation}</b> ({html.escape(info.task)})<br>"
        f"initial population: {info.initial.get('from_database', 0)} from the database, "
        f"{info.initial.get('fresh', 0)} fresh samples<br>"
        f"scored populations: {len(info.iterations)} (the initial one, then one per genetic "
        f"iteration); children by mutator: {html.escape(muts)}<br>"
        f"picked: {info.by_score} by predicted score + {info.by_random} at random "
        f"(epsilon-greedy)<br>measured: {len(info.measured_us)} trials, best {best}; "
        f"failures: {html.escape(failures)}"
    )


class EvolutionView(W.VBox):
    """Generation by generation, from a session's events; :meth:`update` with new events."""

    def __init__(self, events: list | None = None) -> None:
        self.info = EvolutionInfo(())
        self.generation = W.Dropdown(options=[], description="Generation")
        self.summary = W.HTML()
        self.figure = figure_widget()
        self.error = ErrorArea()
        self.generation.observe(lambda _c: self._draw(), names="value")
        super().__init__([self.generation, self.summary, self.figure, self.error])
        self.update(events or [])

    def update(self, events: list) -> None:
        """Recompute from all events so far and follow the newest generation."""
        with self.error.guard(self, clear=False) as guard:
            self.info = evolution_info(events)
        if guard.failed:
            return
        options = [g.generation for g in self.info.generations]
        follow = self.generation.value is None or self.generation.value == (
            self.generation.options[-1] if self.generation.options else None)
        if list(self.generation.options) != options:
            with self.hold_sync():
                self.generation.options = options
                if options and follow:
                    self.generation.value = options[-1]
        self._draw()

    def _draw(self) -> None:
        gens = {g.generation: g for g in self.info.generations}
        info = gens.get(self.generation.value)
        if info is None:
            self.summary.value = "<i>no generation yet</i>"
            show_figure(self.figure, note_figure(go.Figure(layout={"height": 340}), (
                "no generation yet: the search's first stage (the initial population) "
                "shows here")))
            return
        self.summary.value = generation_summary_html(info)
        show_figure(self.figure, evolution_figure(info))
