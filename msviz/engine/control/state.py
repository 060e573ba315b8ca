"""A session's control: its state machine, the command queue, and the checkpoints between stages.

States::

    idle -> running <-> paused -> stopping -> stopped
                   \\-> finished | failed
    running <-> waiting (for RPC devices; pausable, stoppable)

Any thread calls :meth:`Control.pause`, :meth:`~Control.resume`, :meth:`~Control.step`,
:meth:`~Control.stop` or queues a command (:meth:`~Control.enqueue`); the worker thread calls
:meth:`~Control.checkpoint` between stages, which applies the queued commands, stops, or pauses
there until resumed (applying commands while it waits).
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from msviz.errors import MsvizError

__all__ = ["ENDED", "STATES", "STEPS", "Control", "SessionStateError", "StopRequested", "done"]

STATES = ("idle", "running", "waiting", "paused", "stopping", "finished", "stopped", "failed")
ENDED = ("finished", "stopped", "failed")
STEPS = ("batch", "generation")


class SessionStateError(MsvizError, RuntimeError):
    """A control call that makes no sense in the session's current state."""


class StopRequested(Exception):
    """Raised in the worker at a checkpoint when a stop was asked for."""


def done(result: Any = None) -> Future:
    """A Future that has its result already (a command applied at once)."""
    future: Future = Future()
    future.set_result(result)
    return future


class Control:
    """The state machine and command queue of one session.

    Parameters
    ----------
    name : str
        The session's name (events and error messages).
    emit : callable
        ``emit(kind, task, **data)``: the session's event log.
    trials : callable
        The trials done so far (told by ``paused``/``resumed``/``stopped`` events).
    apply : callable
        ``apply(name, arg) -> result``: applies one queued command on the worker thread.
    timeit : callable, optional
        A session's ``Profile.timeit``: commands and pauses are timed.
    """

    def __init__(self, name: str, *, emit: Callable[..., Any], trials: Callable[[], int],
                 apply: Callable[[str, Any], Any],
                 timeit: Callable[[str], Any] | None = None) -> None:
        self.name = name
        self._timeit = timeit or (lambda _stage: contextlib.nullcontext())
        self._emit, self._trials, self._apply = emit, trials, apply
        self.cond = threading.Condition(threading.RLock())
        self.state = "idle"
        self.pause_requested = False
        self.step_kind: str | None = None
        self.stop_requested = False
        self.commands: collections.deque = collections.deque()
        self.thread: threading.Thread | None = None
        self.end_reason: str | None = None

    # -- any thread -------------------------------------------------------------------------------

    def set_state(self, state: str) -> None:
        with self.cond:
            self.state = state
            self.cond.notify_all()

    def refuse(self, call: str, why: str) -> SessionStateError:
        return SessionStateError(f"Session.{call}() makes no sense now: the session is "
                                 f"{self.state}; {why}")

    def launch(self, work: Callable[[], None]) -> None:
        """Start the worker thread (the caller holds :attr:`cond`)."""
        self.state = "running"
        self.thread = threading.Thread(target=work, name="msviz-session", daemon=True)
        self.thread.start()
        self.cond.notify_all()

    def start(self, work: Callable[[], None]) -> bool:
        with self.cond:
            if self.state == "idle":
                self.launch(work)
                return True
            if self.state in ("running", "waiting", "paused", "stopping"):
                return False
            raise self.refuse("start", "a session runs once; open its work dir with "
                              "Session(..., work_dir=..., resume=True) to tune further")

    def pause(self) -> bool:
        with self.cond:
            if self.state in ("running", "waiting"):
                if self.pause_requested:
                    return False
                self.pause_requested = True
                self.cond.notify_all()
                return True
            if self.state == "paused":
                return False
            raise self.refuse("pause", "only a running session can pause" + (
                "; use step() to run one stage from idle" if self.state == "idle" else ""))

    def resume(self) -> bool:
        with self.cond:
            if self.state == "paused":
                self.state = "running"
                self.step_kind = None
                self.cond.notify_all()
                return True
            if self.state in ("running", "waiting"):
                changed = self.pause_requested or self.step_kind is not None
                self.pause_requested, self.step_kind = False, None
                return changed
            raise self.refuse("resume", "call start() first" if self.state == "idle"
                              else "only a paused session can resume")

    def step(self, kind: str, work: Callable[[], None]) -> bool:
        if kind not in STEPS:
            raise ValueError(f"step kind must be 'batch' or 'generation', not {kind!r}")
        with self.cond:
            if self.state in ("idle", "paused", "running"):
                self.step_kind, self.pause_requested = kind, False
                if self.state == "idle":
                    self.launch(work)
                elif self.state == "paused":
                    self.state = "running"
                    self.cond.notify_all()
                return True
            raise self.refuse("step", "it has ended or is stopping")

    def stop(self) -> bool:
        with self.cond:
            if self.state == "idle":
                self.state = "stopped"
                self.end_reason = "stopped before it started"
                self.cond.notify_all()
            elif self.state in ("running", "waiting", "paused"):
                self.stop_requested = True
                self.state = "stopping"
                self.cond.notify_all()
                return True
            else:
                return False
        self._emit("stopped", self.name, reason=self.end_reason, trials=self._trials())
        return True

    def wait(self, timeout: float | None = None) -> str:
        with self.cond:
            self.cond.wait_for(
                lambda: self.state not in ("running", "waiting", "stopping"), timeout=timeout)
            return self.state

    def command(self, name: str, arg: Any, *, now: Callable[[], Any] | None = None) -> Future:
        """Queue a command for the worker; before start, apply it at once with ``now()``."""
        with self.cond:
            if self.state in ENDED or self.state == "stopping":
                raise self.refuse(name, "it has ended")
            if self.state != "idle" or now is None:
                return self.enqueue(name, arg)
        return done(now())

    def queued(self, name: str, arg: Any) -> Future | None:
        """Queue a command for a worker that is running (or paused, or stopping); None when
        there is none (idle, or ended): the caller runs it aside."""
        with self.cond:
            if self.state in ("running", "paused", "stopping") and self.thread is not None:
                return self.enqueue(name, arg)
        return None

    def enqueue(self, name: str, arg: Any) -> Future:
        future: Future = Future()
        with self.cond:
            self.commands.append((name, arg, future))
            self.cond.notify_all()
        return future

    def take_pending(self) -> list[tuple[str, Any, Future]]:
        """The commands not applied (the session ended), removed from the queue."""
        with self.cond:
            pending, self.commands = list(self.commands), collections.deque()
        return pending

    # -- the worker thread ------------------------------------------------------------------------

    def interrupted(self) -> bool:
        """A stop or pause was asked for (ends a wait for devices)."""
        return self.stop_requested or self.pause_requested

    def enter_waiting(self) -> None:
        with self.cond:
            if self.state == "running":
                self.state = "waiting"
                self.cond.notify_all()

    def leave_waiting(self) -> None:
        with self.cond:
            if self.state == "waiting":
                self.state = "running"
                self.cond.notify_all()

    def run_commands(self) -> None:
        """Apply the queued commands, one at a time, in order."""
        while True:
            with self.cond:
                if not self.commands:
                    return
                name, arg, future = self.commands.popleft()
            try:
                with self._timeit("msviz/Commands"):
                    result = self._apply(name, arg)
                future.set_result(result)
            except Exception as err:
                self._emit("warning", self.name,
                           message=f"{name} failed: {type(err).__name__}: {err}")
                future.set_exception(err)

    def checkpoint(self, kind: str) -> None:
        """Between stages: apply commands, stop, or pause (waiting there for commands)."""
        self.run_commands()
        with self.cond:
            if self.stop_requested:
                raise StopRequested
            pause = self.pause_requested or self.step_kind == "generation" or (
                self.step_kind == "batch" and kind == "batch")
            if not pause:
                return
            self.pause_requested, self.step_kind = False, None
            self.state = "paused"
            self.cond.notify_all()
        self._emit("paused", self.name, after=kind, trials=self._trials())
        with self._timeit("msviz/Paused"):
            while True:
                self.run_commands()
                with self.cond:
                    if self.stop_requested:
                        raise StopRequested
                    if self.state == "running":
                        break
                    if not self.commands:
                        self.cond.wait(timeout=0.5)
        self._emit("resumed", self.name, step=self.step_kind, trials=self._trials())
