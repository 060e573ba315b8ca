"""Decision-site importance beside the decisions plot, the proposed space restriction, and one
button that applies it and re-runs the task, then compares the two runs."""

from __future__ import annotations

import html
from types import SimpleNamespace
from typing import Any

import ipywidgets as W

from msviz.records import open_work_dir
from msviz.views.importance import importance_figure
from msviz.widgets.adapter import UIAdapter, running_loop
from msviz.widgets.common import ErrorArea, figure_widget
from msviz.widgets.compare_view import CompareView, compare
from msviz.widgets.plots import show_figure
from msviz.workflows.rerun import Restriction, propose_restriction

__all__ = ["ImportanceView"]

#: Events after which the re-run is over.
_ENDED = ("finished", "stopped", "failed")


class ImportanceView(W.VBox):
    """Which decisions mattered (PED-ANOVA), what to restrict, and a re-run with it.

    Parameters
    ----------
    source : callable returning a Run or Session
        Where the trials come from (a Session's rules and options are reused by the re-run).
    rerun_options : dict, optional
        :meth:`Restriction.rerun` options for the button (``max_trials``, ``seed``, knobs...).
    loop : asyncio loop, optional
        Where the re-run's progress is shown from (default: the running loop, the kernel's).
    """

    def __init__(self, source: Any = None, *, rerun_options: dict | None = None,
                 loop: Any = None) -> None:
        self._source = source
        self.rerun_options = dict(rerun_options or {})
        self._loop = loop if loop is not None else running_loop()
        self.figure = figure_widget()
        self.figure.add_class("msviz-importance-plot")
        self.proposal = W.HTML()
        self.proposal.add_class("msviz-restriction")
        self.apply_button = W.Button(description="Apply and re-run", icon="compress",
                                     disabled=True,
                                     tooltip="tune the task again with the restricted rules")
        self.apply_button.add_class("msviz-restrict-button")
        self.apply_button.on_click(lambda _b: self.apply())
        self.status = W.HTML()
        self.status.add_class("msviz-rerun-status")
        self.compare_box = W.VBox()
        self.error = ErrorArea()
        self.restriction: Restriction | None = None
        self.compare_view: CompareView | None = None
        self._adapter: UIAdapter | None = None
        super().__init__([self.figure, self.proposal, W.HBox([self.apply_button, self.status]),
                          self.compare_box, self.error])
        self.add_class("msviz-importance")

    def show(self, source: Any = None, task: str | None = None) -> Restriction | None:
        """Compute and draw the importance and the proposal for ``task`` of ``source``."""
        source = source or (self._source() if callable(self._source) else self._source)
        with self.error.guard(self) as guard:
            restriction = propose_restriction(source, task)
            show_figure(self.figure, importance_figure(restriction.importance))
        if guard.failed:
            return None
        self.restriction = restriction
        items = "".join(f"<li>{html.escape(str(c))}</li>" for c in restriction.changes)
        self.proposal.value = (f"<b>{html.escape(restriction.summary)}</b>"
                               + (f"<ul>{items}</ul>" if items else ""))
        # nothing to restrict: a re-run with the same rules still shows the spread of a second run
        self.apply_button.description = "Apply and re-run" if restriction.changes else "Re-run"
        self.apply_button.disabled = False
        return restriction

    def apply(self, **options: Any) -> Any:
        """Apply the proposed rules and re-run the task in the background (what the button
        does); the comparison shows when it ends. Returns the new Session."""
        if self.restriction is None:
            self.error.show(self, "no restriction proposed yet: plot the decisions first")
            return None
        with self.error.guard(self) as guard:
            session = self.restriction.rerun(**{**self.rerun_options, **options})
        if guard.failed:
            return None
        self.apply_button.disabled = True
        self.compare_box.children = ()
        self.status.value = f"re-running {html.escape(self.restriction.task)}: 0/" \
                            f"{session.max_trials} trials"
        if self._adapter is not None:
            self._adapter.close()
        self._adapter = UIAdapter(session, loop=self._loop)
        self._adapter.add_handler(lambda events: self._on_events(session, events))
        return session

    def _on_events(self, session: Any, events: list) -> None:
        ended = [e for e in events if getattr(e, "kind", None) in _ENDED]
        if not ended:
            self.status.value = (f"re-running {html.escape(self.restriction.task)}: "
                                 f"{session.trials_done}/{session.max_trials} trials")
            return
        if self._adapter is not None:
            self._adapter.close()
        self.apply_button.disabled = False
        with self.error.guard(self):
            original = _task_only(self.restriction.run.work_dir, self.restriction.task)
            if original is None:  # one task: the work dir as it is
                self.compare_view = compare(self.restriction.run.work_dir, session,
                                            names=["original", "restricted"])
            else:  # a model's run: only the re-run task's trials
                self.compare_view = CompareView({"original": original,
                                                 "restricted": session.open()})
            self.compare_box.children = (self.compare_view,)
            self.status.value = f"re-run {html.escape(ended[-1].kind)}: " + "; ".join(
                f"{html.escape(s.name)}: best {s.best_us:.4g} µs, "
                + (f"{s.trials_to_within} trials" if s.trials_to_within else "never")
                + " to within 5% of the best of both" for s in self.compare_view.info.summary)


def _task_only(work_dir: Any, task: str) -> Any:
    """The run of ``work_dir`` cut down to one task's trials (numbered from 0), for comparing
    with a re-run of that task; None when the run has only that task."""
    run = open_work_dir(work_dir)
    if len(run.tasks) <= 1:
        return None
    trials = run.trials[run.trials["task"] == task].reset_index(drop=True)
    trials["trial"] = range(len(trials))
    return SimpleNamespace(trials=trials, tasks=run.tasks[run.tasks["task"] == task],
                           workload_key=run.workload_key, work_dir=run.work_dir)
