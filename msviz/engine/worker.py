"""A session's worker: what runs on its thread (the task loop between checkpoints), the tuners
it owns, and the one lock that keeps measurements from overlapping.

The :class:`~msviz.engine.session.Session` holds the public calls; it makes the worker with
its settings (a :class:`~msviz.engine.config.SessionConfig`) and the parts it shares with it
(event log, profile, task loop, control, live trials). The worker does the work: sets the tuners
up, drives :meth:`TaskLoop.drive <msviz.engine.task_scheduler.task_loop.TaskLoop.drive>`, applies
queued commands (it keeps the rules now), re-measures, and checks a model end to end when tuning
ends.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
import traceback
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from msviz import compat
from msviz.archive.sidecar_writer import SidecarWriter
from msviz.bench.model_profile import profile_draws
from msviz.engine.config import SessionConfig
from msviz.engine.control import (
    Control,
    LiveTrials,
    SessionStateError,
    StopRequested,
    await_devices,
)
from msviz.engine.control.lock import WorkDirLock
from msviz.engine.environment import catalogue_source, environment_of
from msviz.engine.events import EventLog
from msviz.engine.first_steps import library_first, untuned_times
from msviz.engine.measure.requests import check_model_end_to_end
from msviz.engine.measure.rpc import fleet_of
from msviz.engine.measure.service import MEASURING_LOCK
from msviz.engine.profile import Profile
from msviz.engine.task_scheduler.task_loop import TaskLoop
from msviz.engine.tuning.session_tuners import close_tuners, make_tuners
from msviz.engine.tuning.shared import SharedParts
from msviz.engine.tuning.tuner import Tuner
from msviz.errors import MsvizError
from msviz.records.model_profile import MODEL_PROFILE_KIND
from msviz.records.profile import stage_groups
from msviz.records.quality import QUALITY_KIND, model_estimate
from msviz.space_generator.generate import design_spaces_and_warnings
from msviz.space_generator.rules import RuleSet

__all__ = ["Worker", "failure_of"]


def failure_of(err: BaseException) -> str:
    """An error as the session's end reason: its type and message, with the file it concerns
    when the message does not name it (an OSError from a flush names none)."""
    text = f"{type(err).__name__}: {err}"
    path = getattr(err, "filename", None)
    if path and str(path) not in text:
        text += f" ({path})"
    return text


class Worker:
    """The work of one session on its worker thread (see the module's doc).

    Parameters
    ----------
    config : SessionConfig
        The session's settings.
    name : str
        The session's name (the task of session-level events).
    tasks : list of ModelTask
        The session's tasks (one for a PrimFunc).
    model : Model, optional
        The model (None when tuning one PrimFunc).
    work_dir : Path
        The session's work dir.
    events : EventLog
        The session's events.
    profile : Profile
        Where the session's time goes.
    loop : TaskLoop
        Which task gets the next batch (and the steering).
    control : Control
        The session's state and command queue.
    live : LiveTrials
        The session's live table of trials.
    """

    def __init__(self, config: SessionConfig, *, name: str, tasks: list, model: Any,
                 work_dir: Path, events: EventLog, profile: Profile, loop: TaskLoop,
                 control: Control, live: LiveTrials) -> None:
        self.config, self.name, self.tasks, self.model = config, name, tasks, model
        self.work_dir, self.events, self.profile = work_dir, events, profile
        self.loop, self.control, self.live = loop, control, live
        #: The tracker and key when measuring over RPC (an RPCSpec), else None.
        self.fleet = fleet_of(config.runner)
        #: The rules of every task now (:meth:`set_rules` changes them; the config keeps
        #: those the session started with), and those set for one task alone, by index.
        self.rules: RuleSet = config.rules.copy()
        self.task_rules: dict[int, RuleSet] = {}
        #: The last end-to-end check (the ``end_to_end`` event's data), or None.
        self.end_to_end: dict | None = None
        #: The model profile recorded after the last end-to-end check (its sidecar data).
        self.model_profile_data: dict | None = None
        self.tuners: list[Tuner] = []
        self.shared: SharedParts | None = None
        self.measure_lock = MEASURING_LOCK  # all measurements in this process, one at a time
        self.lock = WorkDirLock(work_dir)  # one writer per work dir
        #: Each task's untuned time (µs; None where unknown), measured at a model's start.
        self.untuned_us: dict[str, float | None] = {}
        self._started = time.time()

    def warn(self, message: str) -> None:
        """A ``warning`` event of the session."""
        self.events.emit("warning", self.name, message=message)

    def rules_of(self, index: int) -> RuleSet:
        """The rules of task ``index`` now."""
        return self.task_rules.get(index, self.rules)

    def environment(self) -> dict[str, Any]:
        """The ``environment`` sidecar line of the session now (see
        :mod:`msviz.engine.environment`); once the database is open, ``first_line``: the first
        record line its rules make."""
        workload_source, model_source = catalogue_source(self.tasks[0].workload, self.model)
        env = environment_of(
            self.config_now(), task_rules=self.task_rules,
            workload=None if self.model is not None else {
                "name": self.tasks[0].workload.name, "source": workload_source},
            model=None if self.model is None else {
                "name": self.model.name, "source": model_source, "file": self.model.file,
                "graph": self.model.graph,
                "graph_report": self.model.graph_report(self.config.target).info()})
        if self.shared is not None and self.shared.ready:
            env["first_line"] = int(self.shared.next_line)
        return env

    def config_now(self) -> SessionConfig:
        """The session's config with the rules and the task scheduler it has now (those of
        :meth:`set_rules` and ``set_scheduler`` before tuning started, say)."""
        return dataclasses.replace(self.config, rules=self.rules,
                                   task_scheduler=self.loop.scheduler)

    @property
    def trials_done(self) -> int:
        """Trials of all tasks that count toward ``max_trials``."""
        return sum(t.trials_done for t in self.tuners)

    @property
    def best_secs(self) -> float:
        """The best mean run time (one PrimFunc) or the model's estimated latency."""
        if not self.tuners:
            return float("inf")
        if self.model is None:
            return self.tuners[0].best_secs
        return sum(t.weight * u.best_secs for t, u in zip(self.tasks, self.tuners))

    def aside(self, fn: Any, future: Future | None = None) -> Future:
        """Run ``fn()`` on a thread of its own under the measurement lock (the session is not
        running, so no queue applies it); its result or error resolves the future."""
        future = future or Future()

        def run() -> None:
            try:
                with self.measure_lock:
                    future.set_result(fn())
            except BaseException as err:
                future.set_exception(err)

        threading.Thread(target=run, name="msviz-aside", daemon=True).start()
        return future

    def remeasure_aside(self, arg: tuple, future: Future | None = None) -> Future:
        """Re-measure outside a running session, one at a time (tuners set up if needed)."""
        def remeasure() -> Any:
            tuners, shared = self.tuners, self.shared
            fresh = not tuners or not all(t.ready for t in tuners)
            if fresh:
                shared, tuners = self.make_tuners()
                if self.control.state == "idle":
                    self.shared, self.tuners = shared, tuners  # start() reuses them
            try:
                return tuners[arg[2]].remeasure(arg[0], arg[1])
            finally:
                if fresh and tuners is not self.tuners:
                    close_tuners(tuners, shared)  # the session has ended

        return self.aside(remeasure, future)

    def measure_aside(self, carried: dict[int, list], measurer: Any = None) -> Future:
        """Measure given schedules of some tasks (a batch per task) outside a running session,
        on tuners of their own (closed afterwards; the cost model learns nothing), with
        ``measurer`` if given; resolves to ``{task index: rows}``."""
        def measure() -> dict[int, list[dict]]:
            shared, tuners = self.make_tuners(measurer)
            try:
                return {i: tuners[i].measure_carried(items, learn=False)
                        for i, items in sorted(carried.items()) if items}
            finally:
                close_tuners(tuners, shared)

        return self.aside(measure)

    def design_spaces(self, rules: RuleSet | None, index: int) -> tuple[list, list[str]]:
        """The design spaces (and why an intrinsic was not used) of task ``index`` under
        ``rules`` (default: the task's rules now)."""
        rules = rules or self.rules_of(index)
        return design_spaces_and_warnings(self.tasks[index].workload, self.config.target, rules)

    def make_tuners(self, measurer: Any = None) -> tuple[SharedParts, list[Tuner]]:
        """The shared parts and one tuner per task, set up (on the calling thread)."""
        return make_tuners(
            self.config, self.tasks, work_dir=self.work_dir,
            rules={t.index: self.rules_of(t.index) for t in self.tasks},
            emit=self.events.emit, warn=self.warn, profile=self.profile, measurer=measurer)

    def apply(self, name: str, arg: Any) -> Any:
        """Apply one queued command on the worker thread (never during a measurement)."""
        with self.measure_lock:
            if name == "set_rules":
                return self.set_rules(*arg)
            if name == "remeasure":
                what, repeats, index = arg
                return self.tuners[index].remeasure(what, repeats)
            if name == "design_spaces":
                return self.design_spaces(*arg)
            if self.loop.steer(name, arg):
                self.events.emit("tasks", self.name, tasks=self.loop.info())
            return None

    def set_rules(self, rules: RuleSet, index: int | None) -> None:
        """New rules for every task (``index`` None) or one."""
        for tuner in self.tuners:
            if index is None or tuner.task_index == index:
                tuner.set_rules(rules)
        if index is None:
            self.rules = rules
        else:
            self.task_rules[index] = rules
        if self.shared is not None and self.shared.ready:  # tuning: the records from here on
            self.write_sidecar("environment", self.environment())

    def _started_event(self) -> dict:
        c = self.config
        flop = float(self.tasks[0].workload.flop) if self.model is None else float(
            sum(t.weight * t.flop for t in self.tasks))
        return dict(work_dir=str(self.work_dir), seed=c.seed, preset=c.preset,
                    strategy=c.strategy, target=compat.to_jsonable(c.target.export()),
                    target_kind=str(c.target.kind.name), flop=flop, max_trials=c.max_trials,
                    trials_per_batch=c.trials_per_batch, resumed=c.resume,
                    knobs=vars(c.knobs).copy(),
                    model=self.model.name if self.model is not None else None,
                    num_tasks=len(self.tasks), max_trials_per_task=c.max_trials_per_task,
                    max_seconds=c.max_seconds, max_seconds_per_task=c.max_seconds_per_task,
                    task_scheduler=self.loop.scheduler.kind)

    def work(self) -> None:
        """The worker thread: tune until the task loop ends, a stop, or an error."""
        compat.quiet_ipython_printing()
        control, name, loop, emit = self.control, self.name, self.loop, self.events.emit
        profile, task = self.profile, self.tasks[0].workload.name
        profile.restart()
        self._started = time.time()
        loop.clock.start()  # the time budget counts setting the tasks up
        final, data = "failed", {}
        self._timing: dict | None = None
        self._refused = False
        try:
            self._lock_work_dir()
            emit("started", name, **self._started_event())
            emit("tasks", name, tasks=loop.info())
            with profile.timeit("msviz/WaitingForDevices"):
                await_devices(control, self.fleet, task=task, emit=emit, first=True)
            with self.measure_lock, profile.timeit("InitializeTask"):
                if not self.tuners or not all(t.ready for t in self.tuners):
                    self.shared, self.tuners = self.make_tuners()
            self.live.tuners_ready()
            self.write_sidecar("environment", self.environment())  # msviz reproduce
            untuned_times(self)
            library_first(self)
            loop.use_scheduler(loop.scheduler)  # its warm-up skips tuned tasks
            for t in self.tasks:
                loop.log(f"Initializing Task #{t.index}: {t.name}")
            loop.log("Task table before tuning", table=True)
            loop.batch = sum(t.batch for t in self.tuners)
            self._close_row()  # setting the tasks up: no batch
            self._model_latency()  # the curve's first point: the untuned (or resumed) model
            with loop.clock.paused():
                control.checkpoint("stage")
            stages = loop.drive()
            while True:
                with self.measure_lock:
                    try:
                        kind = next(stages)
                    except StopIteration as end:
                        control.end_reason = end.value
                        break
                if kind == "batch":
                    self._model_latency()  # before a pause: the batch's own point
                with loop.clock.paused():
                    control.checkpoint(kind)
                if kind == "batch":
                    with profile.timeit("msviz/WaitingForDevices"):
                        await_devices(control, self.fleet, task=task, emit=emit)
            final = "finished"
            loop.end_all(control.end_reason)
        except StopRequested:
            final, control.end_reason = "stopped", "stopped on request"
        except BaseException as err:
            final, control.end_reason = "failed", failure_of(err)
            data = {"error": control.end_reason, "traceback": traceback.format_exc(),
                    "msviz_error": isinstance(err, MsvizError)}  # said on purpose: no trace
        finally:
            try:
                close_tuners(self.tuners, self.shared)
            except Exception as err:  # keep the first error; a close that fails still ends
                data.setdefault("close_error", failure_of(err))
        try:
            final = self._wind_up(final, data)
        except BaseException as err:  # teardown failed (e.g. the disk is full): still end
            if final != "failed":
                final, control.end_reason = "failed", failure_of(err)
                data.update(error=control.end_reason, traceback=traceback.format_exc())
            else:
                data.setdefault("close_error", failure_of(err))
        finally:
            try:
                self.lock.release()
                timing = self._timing or stage_groups(profile.snapshot())
                emit(final, name, reason=control.end_reason, trials=self.trials_done,
                     timing=timing, **data)
            finally:
                control.set_state(final)

    def _lock_work_dir(self) -> None:
        """Hold the work dir's lock for the session's life (refused if another session has
        it; a dead process's lock is taken over with a warning)."""
        self._refused = True
        note = self.lock.acquire()
        self._refused = False
        if note:
            self.warn(note)

    def _wind_up(self, final: str, data: dict) -> str:
        """After tuning: the pending commands, the end's profile row, a model's end-to-end
        check; returns the final state."""
        control, loop, profile = self.control, self.loop, self.profile
        if self.tuners:
            loop.log(f"Tuning ended ({final}): {control.end_reason}", table=True)
        for command, arg, future in control.take_pending():
            if command == "remeasure":  # still possible: run it on its own
                self.remeasure_aside(arg, future)
            elif command == "design_spaces":
                self.aside(lambda arg=arg: self.design_spaces(*arg), future)
            else:
                future.set_exception(SessionStateError(f"{command} not applied: the session "
                                                       "ended"))
        if final == "failed":
            self.live.reread()  # claim only what the work dir holds
        if not self._refused:  # a session refused the work dir writes nothing there
            self._close_row()  # the end of tuning: no batch
        # the tuning's wall time ends here; the model's check is timed apart, after it
        self._timing = stage_groups(profile.snapshot())
        if self.config.end_to_end_check and self.model is not None and \
                final in ("finished", "stopped") and self.trials_done:
            with profile.timeit("msviz/EndToEndCheck"):
                self.end_to_end_now()
            self._close_row()
        return final

    def _model_latency(self) -> None:
        """The estimated model latency now against the tuning's wall time (pauses left out):
        a ``model_latency`` event and sidecar line (see :mod:`msviz.records.quality`)."""
        weights = {t.name: float(t.weight) for t in self.tasks}
        best = [u.best_secs * 1e6 if math.isfinite(u.best_secs) else None for u in self.tuners]
        estimate, untuned = model_estimate(weights, dict(zip(weights, best)), self.untuned_us)
        base, _ = model_estimate(weights, {}, self.untuned_us)
        paused = sum(r["stages"].get("msviz/Paused", 0.0) for r in self.profile.snapshot())
        now = time.time()
        batch = self.loop.batch
        data = {"batch": batch - 1 if batch else None, "trials": self.trials_done,
                "elapsed": now - self._started - paused, "paused": paused,
                "started": self._started, "estimate_us": None if math.isnan(estimate)
                else estimate, "untuned_tasks": untuned,
                "untuned_model_us": None if math.isnan(base) else base, "best_us": best}
        self.write_sidecar(QUALITY_KIND, {**data, "timestamp": now})
        self.events.emit(QUALITY_KIND, self.name, **data)

    def _close_row(self) -> None:
        """Close the profile's open row as no batch's: a ``profile`` event and a sidecar line
        (the session's writer while tuning, else a short-lived one)."""
        row = self.profile.close(self.name, None)
        self.write_sidecar("profile", row)
        self.events.emit("profile", self.name, **self.profile.event_data(row))

    def write_sidecar(self, kind: str, data: dict) -> None:
        if self.shared is not None and self.shared.ready:
            entry = self.shared.sidecar.write(kind, **data)
        else:
            with SidecarWriter(self.work_dir) as writer:
                entry = writer.write(kind, **data)
        if kind == "environment":  # the live trials table keeps it (Trial.own_postprocs)
            self.events.emit("environment", self.name,
                             **{k: v for k, v in entry.items() if k not in ("v", "kind")})

    def end_to_end_now(self, draws: int | None = None) -> dict:
        """The model's end-to-end check (never during a measurement), timed in ``draws`` fresh
        processes (default :data:`msviz.bench.draws.DEFAULT_DRAWS`) that also profile the
        tuned build; kept in the sidecar so ``msviz.open(work_dir)`` (its dashboard and
        report) has it too; emits ``end_to_end`` (and ``model_profile``)."""
        model, tasks, seed = self.model, self.tasks, self.config.seed
        data, calls, database = check_model_end_to_end(model, tasks, self.work_dir,
                                                       self.config.target, seed=seed,
                                                       draws=draws)
        self.end_to_end = data
        self.write_sidecar("end_to_end", data)
        self.events.emit("end_to_end", self.name, **data)
        if calls is not None:
            profiled = profile_draws(calls, tasks, database)
            self.model_profile_data = profiled
            self.write_sidecar(MODEL_PROFILE_KIND, profiled)
            self.events.emit(MODEL_PROFILE_KIND, self.name, **profiled)
        return data
