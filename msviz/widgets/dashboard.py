"""The dashboard: controls, progress, and every view in tabs, linked by one trial selection.

``Dashboard(session)`` follows a live session through :class:`UIAdapter` (batched, on the
kernel's event loop); ``Dashboard(run)`` shows a finished run. The cell returns at once.
"""

from __future__ import annotations

import html
import math
import time
from typing import Any

import ipywidgets as W
import pandas as pd
import traitlets

from msviz.compat import describe_target
from msviz.records.model_profile import recorded_model_profile
from msviz.records.quality import run_started
from msviz.records.run import Run
from msviz.records.runtimes import recorded_runtimes
from msviz.records.sidecar import quarantine_of
from msviz.views import failure_triage_info
from msviz.views.quarantine import quarantine_info
from msviz.widgets.adapter import UIAdapter
from msviz.widgets.code_view import CodeView
from msviz.widgets.common import ErrorArea, Selection
from msviz.widgets.dashboard_tasks import DashboardTasks
from msviz.widgets.design_space_view import DesignSpaceView
from msviz.widgets.devices_view import DevicesView
from msviz.widgets.evolution_view import EvolutionView
from msviz.widgets.importance_view import ImportanceView
from msviz.widgets.plots import PlotPanel
from msviz.widgets.rules_editor import RulesEditor
from msviz.widgets.tasks_view import TasksView, model_events
from msviz.widgets.time_view import TimeView
from msviz.widgets.trace_view import TraceView
from msviz.widgets.trial_table import TrialTable

__all__ = ["Dashboard"]

_REFRESH_KINDS = {"measured", "remeasured", "finished", "stopped", "failed", "started"}
#: Events that change the Tasks tab (a model's tasks, the scheduler's picks, end to end, a
#: tuning library's coverage).
_MODEL_KINDS = {"tasks", "scheduled", "task_done", "end_to_end", "measured", "remeasured",
                "model_profile", "untuned", "model_latency", "forecast", "library_coverage"}
#: Which buttons each session state enables.
_ENABLED = {
    "idle": {"start", "step_batch", "step_generation", "stop"},
    "running": {"pause", "step_batch", "step_generation", "stop"},
    "waiting": {"pause", "stop"},  # for RPC devices
    "paused": {"resume", "step_batch", "step_generation", "stop"},
    "stopping": set(),
    "finished": set(),
    "stopped": set(),
    "failed": set(),
}


def _format_eta(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Dashboard(DashboardTasks, W.VBox):
    """Controls, progress and the views of a session or a finished run.

    Parameters
    ----------
    source : Session | Run
        What to show.
    max_rate : float
        Most redraws per second from live events.
    loop : asyncio loop, optional
        Where live updates run (default: the running loop, i.e. the kernel's).
    """

    def __init__(self, source: Any, *, max_rate: float = 10.0, loop: Any = None) -> None:
        self.session = None if isinstance(source, Run) else source
        self._run = source if isinstance(source, Run) else None
        self.selection = Selection()
        self.error = ErrorArea()
        self.updates = 0
        self.last_seq = -1  # the newest event applied
        self._plots_stale = False
        self._evolution_stale = False
        self._final_state: str | None = None  # from a finished/stopped/failed event
        self._failure = ""  # the engine's error text once the session failed
        self.last_update = 0.0
        self._triage_key: tuple[int, int] | None = None  # the failures the triage shows
        target = self._target()

        self.buttons = {
            "start": W.Button(description="Start", icon="play", button_style="success"),
            "pause": W.Button(description="Pause", icon="pause"),
            "step_batch": W.Button(description="Step batch", icon="step-forward"),
            "step_generation": W.Button(description="Step generation", icon="forward"),
            "resume": W.Button(description="Resume", icon="play"),
            "stop": W.Button(description="Stop", icon="stop", button_style="danger"),
        }
        for name, button in self.buttons.items():
            button.add_class(f"msviz-{name.replace('_', '-')}")
            button.on_click(lambda _b, n=name: self.click(n))
        self.progress = W.IntProgress(min=0, max=1, value=0, layout=W.Layout(width="420px"))
        self.progress_label = W.HTML()
        self.state_label = W.HTML()
        self.target_label = W.HTML(_target_text(target))
        self.target_label.add_class("msviz-target")

        trials = self._trials()
        self.table = TrialTable(trials)
        self.triage = W.HTML()
        self.quarantine = W.HTML()  # what the search skipped because it raised
        traitlets.link((self.table, "selected"), (self.selection, "trial"))
        self._started_at: Any = None
        self.plots = PlotPanel(trials, self._tasks(), run=lambda: self.run, importance=(
            ImportanceView(lambda: self.session if self.session is not None else self.run,
                           loop=loop)), started=self.started)
        on_measure = None
        if self.session is not None:
            on_measure = lambda replay: self.session.remeasure(replay.schedule)  # noqa: E731
        self.trace_view = TraceView(self.get_trial, selection=self.selection, target=target,
                                    on_measure=on_measure)
        self.code_view = CodeView(self.get_trial, selection=self.selection, target=target)
        # the Tasks tab shows whenever the source has more than one task (a live session's
        # tab appears with its first "tasks" event of 2+ tasks)
        self.tasks_view = TasksView(selection=self.selection)
        self._tasks_stale = False
        self._model = model_events(self.session.events.snapshot() if self.session else ())
        if self._run is not None:  # a work dir read back: its stored end-to-end check
            self._model["end_to_end"] = self._run.end_to_end
            self._model["model_profile"] = recorded_model_profile(self._run)
            self._model["runtimes"] = recorded_runtimes(self._run)  # msviz.vs_runtimes'
            self._model["library_coverage"] = self._run.coverage  # its sidecar line
        self.selection.observe(self._on_task_focus, names="task")
        self.time_view = TimeView()  # drawn when its tab opens, then live
        self._time_stale = True
        children = [("Trials", W.VBox([self.quarantine, self.triage, self.table])),
                    ("Plots", self.plots), ("Time", self.time_view), ("Trace", self.trace_view),
                    ("Code", self.code_view)]
        self.evolution = self.spaces = self.rules_editor = None
        if self.session is not None:
            self.evolution = EvolutionView(self.session.events.snapshot())
            self.spaces = DesignSpaceView(self.session.workload, target=target,
                                          rules=self.session.rules, compute=False,
                                          generate=lambda rules: self.session.design_spaces(
                                              rules), on_measure=on_measure)
            self.rules_editor = RulesEditor(self.session.rules, on_apply=self._apply_rules)
            children += [("Evolution", self.evolution), ("Design spaces", self.spaces),
                         ("Rules", self.rules_editor)]
        if self._task_count() > 1:
            children.insert(1, ("Tasks", self.tasks_view))
            self._tasks_stale = True
        self.devices = None  # the Devices tab, last, when the session measures over RPC
        if self.session is not None and getattr(self.session, "fleet", None) is not None:
            self.devices = DevicesView(self.session.events.snapshot(), self.session.trials)
            children.append(("Devices", self.devices))
        self.tabs = W.Tab(children=[c for _, c in children])
        self.tabs.titles = [t for t, _ in children]
        self.tabs.observe(self._on_tab, names="selected_index")

        controls = W.HBox(list(self.buttons.values())) if self.session is not None else W.HBox()
        super().__init__([
            controls, W.HBox([self.progress, self.progress_label]),
            W.HBox([self.state_label, self.target_label]),
            self.error, self.tabs,
        ])
        self.add_class("msviz-dashboard")
        self.adapter = None
        if self.session is not None:
            self.adapter = UIAdapter(self.session, loop=loop, max_rate=max_rate)
            self.adapter.add_handler(self.on_events)
        self._refresh(full=True)
        self._plots_stale = False  # the plots were just drawn from these same trials
        self._update_tasks()

    # -- data ------------------------------------------------------------------------------------

    def _target(self) -> Any:
        if self.session is not None:
            return self.session.target
        if self._run is not None and len(self._run.trials):
            return self._run.trial(0).record.target
        return "llvm"

    def _trials(self) -> Any:
        return self.session.trials if self.session is not None else self._run.trials

    def _tasks(self) -> Any:
        run = self.run
        return run.tasks if run is not None else None

    @property
    def run(self) -> Any:
        """The records as a Run (for a live session: re-read when new trials arrived)."""
        return self.session.run if self.session is not None else self._run

    def started(self) -> Any:
        """When the shown run started (a timestamp; None while unknown): a session's
        ``started`` event, a work dir's :func:`~msviz.records.quality.run_started`."""
        if self._started_at is None:
            if self.session is not None:
                first = next((e for e in self.session.events.snapshot()
                              if e.kind == "started"), None)
                if first is not None:
                    self._started_at = pd.Timestamp(first.time, unit="s", tz="UTC")
            elif self._run is not None:  # read once: a work dir's start does not change
                self._started_at = run_started(self._run) or pd.NaT
        return None if self._started_at is pd.NaT else self._started_at

    def get_trial(self, index: int) -> Any:
        """The trial at row ``index`` (for the trace and code views)."""
        run = self.run
        if run is None:
            raise IndexError("no trials yet")
        return run.trial(index)

    # -- controls --------------------------------------------------------------------------------

    def click(self, name: str) -> Any:
        """What a button does (also callable from tests): start, pause, step_batch, ..."""
        session = self.session
        if session is None:
            return None
        with self.error.guard(self) as guard:
            if name.startswith("step_"):
                result = session.step(name[len("step_"):])
            else:
                result = getattr(session, name)()
        if guard.failed:
            return None
        self._refresh_state()
        return result

    def _apply_rules(self, rules: Any) -> Any:
        result = self.session.set_rules(rules)
        if self.spaces is not None and self._showing(self.spaces):
            self.spaces.show_rules(rules)
        return result

    def _on_tab(self, change: dict) -> None:
        if self.tabs.children[change["new"]] is self.plots:
            self._update_plots()
        if self.tabs.children[change["new"]] is self.evolution:
            self._update_evolution()
        if self.tabs.children[change["new"]] is self.tasks_view:
            self._update_tasks()
        if self.tabs.children[change["new"]] is self.time_view:
            self._update_time()
        if self.spaces is not None and self.tabs.children[change["new"]] is self.spaces \
                and not self.spaces.info.spaces:
            self.spaces.show_rules(self.session.rules)

    # -- live updates ----------------------------------------------------------------------------

    def on_events(self, events: list) -> None:
        """Apply a batch of session events (called by the adapter on the kernel loop)."""
        kinds = {e.kind for e in events}
        # The session emits its final event just before it switches state: trust the event.
        finals = [e.kind for e in events if e.kind in ("finished", "stopped", "failed")]
        if finals:
            self._final_state = finals[-1]
        if kinds & _MODEL_KINDS:  # first: the header shows the model's estimate
            self._take_model_events(events)
        self._refresh(full=bool(kinds & _REFRESH_KINDS), failed=[
            e for e in events if e.kind == "failed"])
        if self.evolution is not None and kinds & {"initial_population", "generation",
                                                   "picked", "measured"}:
            self._evolution_stale = True
            if self._showing(self.evolution):
                self._update_evolution()
        if "profile" in kinds:
            self._time_stale = True
            if self._showing(self.time_view):
                self._update_time()
        if self.devices is not None and kinds & {"devices", "waiting_for_devices", "measured"}:
            self.devices.update(self.session.events.snapshot(), self._trials())
        self.updates += 1
        self.last_seq = max(self.last_seq, max(e.seq for e in events))
        self.last_update = time.monotonic()

    def settle(self, timeout: float = 10.0) -> bool:
        """Apply every event emitted so far (scripts and tests; the kernel loop does it live)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.adapter is not None:
                self.adapter.flush()
            if self.session is None or self.last_seq >= len(self.session.events.snapshot()) - 1:
                self._refresh_state()  # the state may have changed after its last event
                return True
            time.sleep(0.02)
        return False

    def _refresh(self, *, full: bool, failed: list | None = None) -> None:
        if full:
            trials = self._trials()
            with self.table.hold_sync():
                self.table.set_trials(trials)
            self._refresh_triage(trials)
            self._refresh_quarantine()
            # plots are the costly redraw: only while their tab shows, else when it opens
            self._plots_stale = True
            if self._showing(self.plots):
                self._update_plots()
        self._refresh_state(failed=failed)

    def _refresh_quarantine(self) -> None:
        """One line per quarantine entry, above the failures (hidden while there are none)."""
        entries = self.session.quarantine if self.session is not None else quarantine_of(
            self._run)
        info = quarantine_info(entries)
        value = "" if not info.lines else (
            f"<details class='msviz-quarantine'><summary><b>{html.escape(info.title)}</b>"
            "</summary>" + "<br>".join(html.escape(line) for line in info.lines) + "</details>")
        if self.quarantine.value != value:
            self.quarantine.value = value

    def _refresh_triage(self, trials: Any) -> None:
        """Failures grouped by cause, above the table (hidden while there are none)."""
        # Trials are only appended: the failures changed iff their count or the last one did
        # (re-grouping thousands of error texts on every batch would grow with the run).
        failed = trials["trial"][trials["status"] != "ok"] if len(trials) else trials["trial"]
        key = (len(failed), int(failed.iat[-1]) if len(failed) else -1)
        if key == self._triage_key:
            return
        self._triage_key = key
        frame = failure_triage_info(trials).frame if len(trials) else None
        if frame is None or frame.empty:
            self.triage.value = ""
            return
        self.triage.value = (
            "<details open class='msviz-triage'><summary><b>Failures by cause</b> "
            f"({int(frame['count'].sum())})</summary>"
            + frame.to_html(index=False, escape=True, border=0) + "</details>")

    def _showing(self, view: Any) -> bool:
        index = self.tabs.selected_index
        return index is not None and self.tabs.children[index] is view

    def _update_time(self) -> None:
        if self._time_stale:
            self._time_stale = False
            source = self.session if self.session is not None else self._run
            self.time_view.update(source.profile)

    def _update_evolution(self) -> None:
        if self._evolution_stale and self.evolution is not None:
            self._evolution_stale = False
            self.evolution.update(self.session.events.snapshot())

    def _update_plots(self) -> None:
        if self._plots_stale:
            self._plots_stale = False
            trials, tasks = self._trials(), self._tasks()
            focus = self.selection.task
            if focus:  # the task chosen in the Tasks tab
                trials = trials[trials["task"] == focus]
                tasks = tasks[tasks["task"] == focus] if tasks is not None else None
            self.plots.update(trials, tasks)

    def _refresh_state(self, *, failed: list | None = None) -> None:
        trials = self._trials()
        # trials that count toward max_trials (not infrastructure failures nor the user's edits)
        done = self.session.trials_done if self.session is not None else len(trials)
        total = self.session.max_trials if self.session is not None else max(done, 1)
        ok = trials["latency_us"].dropna() if len(trials) else []
        best = f"{ok.min():.3f} µs" if len(ok) else "n/a"
        state = self.session.state if self.session is not None else "finished"
        if self._final_state is not None:
            state = self._final_state
        eta = ""
        if self.session is not None and state in ("running", "paused"):
            started = [e.time for e in self.session.events.of_kind("started")]
            if started and self.session.trials_done:
                elapsed = time.time() - started[0]
                per = elapsed / max(1, self.session.trials_done)
                eta = f" · ETA {_format_eta(per * (total - done))}"
        with self.hold_sync():
            self.progress.max = max(total, 1)
            self.progress.value = min(done, self.progress.max)
            if state == "failed" or failed:
                self.progress.bar_style = "danger"  # and it stays red
            elif self.progress.bar_style != "danger":
                self.progress.bar_style = "success" if state == "finished" else "info"
            best = self._model_best(trials) or f"best {best}"
            self.progress_label.value = f"{done}/{total} trials · {best}{eta}"
            for event in failed or []:  # the failure stays shown, like the red bar
                self._failure = event.get("error") or event.get("traceback") or "failed"
            message = self._failure
            self.state_label.value = (
                f"state: <b class='msviz-state'>{state}</b>"
                + (f"<pre style='color:#b00020'>{html.escape(str(message))}</pre>"
                   if message else ""))
            enabled = _ENABLED.get(state, set())
            for name, button in self.buttons.items():
                button.disabled = name not in enabled

    def close(self) -> None:
        """Stop following the session and close the widgets."""
        if self.adapter is not None:
            self.adapter.close()
        super().close()


def _target_text(target: Any) -> str:
    """The header line naming where kernels are compiled for (and measured)."""
    try:
        text = describe_target(target)
    except Exception as err:  # a stored target this TVM cannot parse: say so, keep the dashboard
        text = f"unknown ({type(err).__name__})"
    return f"&nbsp;&middot;&nbsp;target: <code>{html.escape(text)}</code>"
