"""A session's worker: what runs on its thread (the task loop between checkpoints), the tuners
it owns, and the one lock that keeps measurements from overlapping.

The :class:`~msviz.engine.session.Session` holds the settings and the public calls; the worker
reads the settings from it and does the work: sets the tuners up, drives
:meth:`TaskLoop.drive <msviz.engine.task_scheduler.task_loop.TaskLoop.drive>`, applies queued
commands, re-measures, and checks a model end to end when tuning ends.
"""

from __future__ import annotations

import math
import threading
import time
import traceback
from concurrent.futures import Future
from typing import Any

from msviz import compat
from msviz.check.model import check_model
from msviz.check.model_profile import profile_built
from msviz.engine.control import SessionStateError, StopRequested, await_devices
from msviz.engine.control.lock import WorkDirLock
from msviz.engine.environment import session_environment
from msviz.engine.measure.untuned import measure_untuned
from msviz.engine.task_scheduler.tuner import SharedParts, Tuner, close_tuners, make_tuners
from msviz.errors import MsvizError
from msviz.records.model_profile import MODEL_PROFILE_KIND
from msviz.records.profile import stage_groups
from msviz.records.quality import QUALITY_KIND, UNTUNED_KIND, model_estimate, recorded_untuned
from msviz.records.sidecar import SidecarWriter, read_sidecar
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
    session : Session
        Whose settings (tasks, target, knobs, work dir, ...) it tunes with, and whose events,
        control, task loop and live table it uses.
    """

    def __init__(self, session: Any) -> None:
        self.session = session
        self.tuners: list[Tuner] = []
        self.shared: SharedParts | None = None
        self.measure_lock = threading.Lock()  # all measurements, one at a time
        self.lock = WorkDirLock(session.work_dir)  # one writer per work dir
        #: Each task's untuned time (µs; None where unknown), measured at a model's start.
        self.untuned_us: dict[str, float | None] = {}
        self._started = time.time()

    @property
    def trials_done(self) -> int:
        """Trials of all tasks that count toward ``max_trials``."""
        return sum(t.trials_done for t in self.tuners)

    @property
    def best_secs(self) -> float:
        """The best mean run time (one PrimFunc) or the model's estimated latency."""
        if not self.tuners:
            return float("inf")
        if self.session.model is None:
            return self.tuners[0].best_secs
        return sum(t.weight * u.best_secs for t, u in zip(self.session.tasks, self.tuners))

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
                if self.session.state == "idle":
                    self.shared, self.tuners = shared, tuners  # start() reuses them
            try:
                return tuners[arg[2]].remeasure(arg[0], arg[1])
            finally:
                if fresh and tuners is not self.tuners:
                    close_tuners(tuners, shared)  # the session has ended

        return self.aside(remeasure, future)

    def design_spaces(self, rules: RuleSet | None, index: int) -> tuple[list, list[str]]:
        """The design spaces (and why an intrinsic was not used) of task ``index`` under
        ``rules`` (default: the task's rules now)."""
        s = self.session
        rules = rules or s._task_rules.get(index, s.rules)
        return design_spaces_and_warnings(s.tasks[index].workload, s.target, rules)

    def make_tuners(self) -> tuple[SharedParts, list[Tuner]]:
        """The shared parts and one tuner per task, set up (on the calling thread)."""
        s = self.session
        return make_tuners(
            s.tasks, rules={t.index: s._task_rules.get(t.index, s.rules) for t in s.tasks},
            seed=s.seed, emit=s.events.emit, warn=s._warn, target=s.target, work_dir=s.work_dir,
            knobs=s.knobs, strategy=s.strategy, num_threads=s.num_threads,
            max_trials=s.max_trials, trials_per_batch=s.trials_per_batch,
            measurer_options=s._measurer_options, check=s.check, profile=s._profile)

    def apply(self, name: str, arg: Any) -> Any:
        """Apply one queued command on the worker thread (never during a measurement)."""
        s = self.session
        with self.measure_lock:
            if name == "set_rules":
                return self.set_rules(*arg)
            if name == "remeasure":
                what, repeats, index = arg
                return self.tuners[index].remeasure(what, repeats)
            if name == "design_spaces":
                return self.design_spaces(*arg)
            if s._loop.steer(name, arg):
                s.events.emit("tasks", s.name, tasks=s.tasks_info())
            return None

    def set_rules(self, rules: RuleSet, index: int | None) -> None:
        """New rules for every task (``index`` None) or one."""
        for tuner in self.tuners:
            if index is None or tuner.task_index == index:
                tuner.set_rules(rules)
        if index is None:
            self.session.rules = rules
        else:
            self.session._task_rules[index] = rules

    def _started_event(self) -> dict:
        s = self.session
        flop = float(s.workload.flop) if s.model is None else float(
            sum(t.weight * t.flop for t in s.tasks))
        return dict(work_dir=str(s.work_dir), seed=s.seed, preset=s.preset,
                    strategy=s.strategy, target=compat.to_jsonable(s.target.export()),
                    target_kind=str(s.target.kind.name), flop=flop, max_trials=s.max_trials,
                    trials_per_batch=s.trials_per_batch, resumed=s._resume,
                    knobs=vars(s.knobs).copy(),
                    model=s.model.name if s.model is not None else None,
                    num_tasks=len(s.tasks), max_trials_per_task=s.max_trials_per_task,
                    task_scheduler=s.scheduler.kind)

    def work(self) -> None:
        """The worker thread: tune until the task loop ends, a stop, or an error."""
        compat.quiet_ipython_printing()
        s = self.session
        control, name, loop, emit = s._control, s.name, s._loop, s.events.emit
        profile = s._profile
        profile.restart()
        self._started = time.time()
        final, data = "failed", {}
        self._timing: dict | None = None
        self._refused = False
        try:
            self._lock_work_dir()
            emit("started", name, **self._started_event())
            emit("tasks", name, tasks=s.tasks_info())
            with profile.timeit("msviz/WaitingForDevices"):
                await_devices(control, s.fleet, task=s.workload.name, emit=emit, first=True)
            with self.measure_lock, profile.timeit("InitializeTask"):
                if not self.tuners or not all(t.ready for t in self.tuners):
                    self.shared, self.tuners = self.make_tuners()
            s._live.tuners_ready()
            self._write_sidecar("environment", session_environment(s))  # msviz reproduce
            self._untuned()
            loop.use_scheduler(loop.scheduler)  # its warm-up skips tuned tasks
            for task in s.tasks:
                loop.log(f"Initializing Task #{task.index}: {task.name}")
            loop.log("Task table before tuning", table=True)
            loop.batch = sum(t.batch for t in self.tuners)
            self._close_row()  # setting the tasks up: no batch
            self._model_latency()  # the curve's first point: the untuned (or resumed) model
            control.checkpoint("stage")
            stages = loop.drive(s.max_trials, s.trials_per_batch)
            while True:
                with self.measure_lock:
                    try:
                        kind = next(stages)
                    except StopIteration as end:
                        control.end_reason = end.value
                        break
                if kind == "batch":
                    self._model_latency()  # before a pause: the batch's own point
                control.checkpoint(kind)
                if kind == "batch":
                    with profile.timeit("msviz/WaitingForDevices"):
                        await_devices(control, s.fleet, task=s.workload.name, emit=emit)
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
                timing = self._timing or stage_groups(s._profile.snapshot())
                emit(final, name, reason=control.end_reason, trials=s.trials_done,
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
            self.session._warn(note)

    def _wind_up(self, final: str, data: dict) -> str:
        """After tuning: the pending commands, the end's profile row, a model's end-to-end
        check; returns the final state."""
        s = self.session
        control, loop = s._control, s._loop
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
            s._live.reread()  # claim only what the work dir holds
        if not self._refused:  # a session refused the work dir writes nothing there
            self._close_row()  # the end of tuning: no batch
        # the tuning's wall time ends here; the model's check is timed apart, after it
        self._timing = stage_groups(s._profile.snapshot())
        if s.end_to_end_check and final in ("finished", "stopped") and s.trials_done:
            with s._profile.timeit("msviz/EndToEndCheck"):
                self.end_to_end_now()
            self._close_row()
        return final

    def _untuned(self) -> None:
        """A model's untuned times: measured once (one batch of every task's unscheduled
        PrimFunc, under the measurement lock), or those a resumed work dir holds; an
        ``untuned`` event and sidecar line (see :mod:`msviz.engine.measure.untuned`)."""
        s = self.session
        if s.model is None:
            return
        stored = recorded_untuned(read_sidecar(s.work_dir).other) if s._resume else {}
        if stored and all(stored.get(t.name) is not None for t in s.tasks):
            tasks = [{"index": t.index, "name": t.name, "untuned_us": stored[t.name],
                      "error": None} for t in s.tasks]
        else:
            try:
                with self.measure_lock, s._profile.timeit("msviz/Untuned"):
                    tasks = measure_untuned(self.shared.measurer, s.tasks)
            except Exception as err:  # the curve's start only: never the session's end
                why = f"{type(err).__name__}: {err}"
                s._warn(f"the untuned kernels could not be timed ({why}); the estimated model "
                        "latency is unknown until every task has a successful trial")
                tasks = [{"index": t.index, "name": t.name, "untuned_us": None, "error": why}
                         for t in s.tasks]
            self._write_sidecar(UNTUNED_KIND, {"tasks": tasks})
        self.untuned_us = {t["name"]: t["untuned_us"] for t in tasks}
        s.events.emit(UNTUNED_KIND, s.name, tasks=tasks)

    def _model_latency(self) -> None:
        """The estimated model latency now against the tuning's wall time (pauses left out):
        a ``model_latency`` event and sidecar line (see :mod:`msviz.records.quality`)."""
        s = self.session
        weights = {t.name: float(t.weight) for t in s.tasks}
        best = [u.best_secs * 1e6 if math.isfinite(u.best_secs) else None for u in self.tuners]
        estimate, untuned = model_estimate(weights, dict(zip(weights, best)), self.untuned_us)
        base, _ = model_estimate(weights, {}, self.untuned_us)
        paused = sum(r["stages"].get("msviz/Paused", 0.0) for r in s._profile.snapshot())
        now = time.time()
        data = {"batch": s._loop.batch - 1 if s._loop.batch else None, "trials": s.trials_done,
                "elapsed": now - self._started - paused, "paused": paused,
                "started": self._started, "estimate_us": None if math.isnan(estimate)
                else estimate, "untuned_tasks": untuned,
                "untuned_model_us": None if math.isnan(base) else base, "best_us": best}
        self._write_sidecar(QUALITY_KIND, {**data, "timestamp": now})
        s.events.emit(QUALITY_KIND, s.name, **data)

    def _close_row(self) -> None:
        """Close the profile's open row as no batch's: a ``profile`` event and a sidecar line
        (the session's writer while tuning, else a short-lived one)."""
        s = self.session
        row = s._profile.close(s.name, None)
        self._write_sidecar("profile", row)
        s.events.emit("profile", s.name, **s._profile.event_data(row))

    def _write_sidecar(self, kind: str, data: dict) -> None:
        if self.shared is not None and self.shared.ready:
            self.shared.sidecar.write(kind, **data)
        else:
            with SidecarWriter(self.session.work_dir) as writer:
                writer.write(kind, **data)

    def end_to_end_now(self) -> dict:
        """The model's end-to-end check (never during a measurement), kept in the sidecar so
        ``msviz.open(work_dir)`` (its dashboard and report) has it too; emits ``end_to_end``."""
        s = self.session
        profiled: dict = {}
        with self.measure_lock:
            data = check_model(s.model, s.tasks, s.work_dir, s.target, seed=s.seed,
                               with_tuned=lambda *built: profiled.update(
                                   profile_built(s.model, s.tasks, *built, seed=s.seed)))
        s.end_to_end = data
        self._write_sidecar("end_to_end", data)
        s.events.emit("end_to_end", s.name, **data)
        if profiled:
            s.model_profile_data = profiled
            self._write_sidecar(MODEL_PROFILE_KIND, profiled)
            s.events.emit(MODEL_PROFILE_KIND, s.name, **profiled)
        return data
