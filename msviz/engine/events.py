"""Events a tuning session emits: plain snapshots, an append-only log, and its subscribers.

Every stage of the engine (design spaces generated, initial population, each genetic iteration,
the batch picked, built, measured, cost model updated, paused, resumed, finished, ...) becomes one
:class:`Event`. An event holds plain Python data only (numbers, strings, lists, dicts), never a live
TVM object, so a subscriber may keep it as long as it likes and read it from any thread.

Fields of the main kinds (every task event also has ``task_index``):

* ``started``: ``work_dir``, ``seed``, ``preset``, ``strategy``, ``target`` (the full target
  as a dict, ``Target.export()``), ``target_kind`` (its kind name), ``flop`` (the workload's
  FLOP count), ``max_trials``, ``trials_per_batch``, ``resumed``, ``knobs``.
  It also has ``model`` (the model's name, None for a single PrimFunc) and ``num_tasks``.
* ``tasks`` (once per run, right after ``started``; again when budgets or pins change):
  ``tasks``, one ``{"index", "name", "flop", "weight", "max_trials", "pinned", "skipped"}``
  per task. Session-level events (``started``, ``tasks``, ``scheduled``, ``end_to_end``, the
  end) have ``task`` = the model's (or workload's) name.
* ``scheduled`` (once per batch, before the picked task's search runs): ``batch`` (global,
  continues on resume), ``scheduler`` (``"forecast"`` | ``"gradient"`` |
  ``"round-robin"``), ``pick`` (task
  index), ``pick_name``, ``reason``, ``forced``, and per task: ``gradients``, ``best_us``,
  ``trials``, ``done``.
* ``task_done``: ``task_index``, ``reason`` (``"reached max_trials_per_task"``, the search's
  end, ``"every candidate failed"``, ...).
* ``end_to_end``: ``untuned_us``, ``tuned_us`` (the least of ``draws`` fresh processes),
  ``match``, ``max_abs_diff``, ``fallback`` (names of the tasks with no tuned record),
  ``error``, ``draws``, ``untuned_draws_us`` / ``tuned_draws_us`` (each draw's time) and
  ``untuned_spread`` / ``tuned_spread`` (the slowest draw over the least); see
  :func:`msviz.bench.model_check.check_model`.
* ``untuned`` (a model's, once, after setting up; see :mod:`msviz.engine.measure.untuned`):
  ``tasks``, one ``{"index", "name", "untuned_us", "error"}`` per task.
* ``model_latency`` (after setting up and after each measured batch, before a pause; the
  sidecar has the same line): ``batch`` (the global batch, None before the first),
  ``trials``, ``elapsed`` (seconds since the worker started, pauses left out), ``paused``,
  ``started`` (its ``time.time()``), ``estimate_us`` (sum of weight x best latency, a task
  not tuned yet at its untuned time; None while unknown), ``untuned_tasks``,
  ``untuned_model_us`` (every task untuned) and ``best_us`` (per task, None while none);
  see :mod:`msviz.records.quality`.
* ``initial_population`` / ``generation`` / ``picked``: ``generation`` (continues across a
  resume) and ``failures``: ``{step: count}``, each failed try counted once, in the stage where
  it happened, under the step that failed (``"trace replay"``, a postproc's class name, or
  ``"mutator <Name>"``); see :meth:`msviz.engine.search.evolution.EvolutionarySearch.generate`.
* ``measured``: ``batch``, ``best_us`` and ``trials``, one dict per trial with everything a
  trials-table row needs: ``line``, ``task``, ``workload``, ``task_trial``, ``batch``,
  ``generation``, ``timestamp`` (``time.time()``; the sidecar line has the same instant),
  ``run_secs``, ``latency_us``, ``error_kind`` (None, ``"build"``, ``"run"`` or ``"infra"``),
  ``error``, ``shash`` and the lineage: ``design_space``, ``origin``, ``parent``, ``mutator``,
  ``iteration``, ``ancestor_line``, ``pick``, ``predicted_score``
  (see :func:`msviz.engine.measure.callbacks.add_to_database`); over RPC also ``device``
  (the server's ``"host:port"``), and ``error_kind`` may be ``"device_lost"``.
* ``profile`` (after each batch, after setting up, at the end, after the end-to-end check; see
  :mod:`msviz.engine.profile`): ``task``, ``batch`` (None for what is no batch), ``wall`` and
  ``stages`` (seconds per stage; they sum to ``wall``).
* ``environment`` (each time the session writes an ``environment`` sidecar line: when its
  tuners are set up, and when rules are set while tuning): the line's fields (versions, host,
  target, seed, preset, knobs, ``rules``, ``task_rules``, ``first_line``; see
  :mod:`msviz.engine.environment`), so a live trials table knows the rules each record was
  made with (``Trial.own_postprocs``).
* ``quarantine``: ``where``, ``what``, ``message``, ``last_message``, ``count`` (an entry of
  :attr:`Session.quarantine`, after each search stage in which it changed).
* ``devices`` / ``waiting_for_devices`` (over RPC, :mod:`msviz.engine.measure.rpc`): ``tracker``,
  ``key``, ``total`` / ``free`` / ``pending`` (servers under the key), ``servers``, ``queue``,
  ``error``;
  ``waiting_for_devices`` adds ``waited`` and ``wait_timeout`` (the session's state is
  ``"waiting"``).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EVENT_KINDS", "Event", "EventLog"]

#: The kinds of event the engine emits, in the order a tuning batch produces them.
EVENT_KINDS = (
    "started",
    "tasks",
    "design_spaces",
    "scheduled",
    "initial_population",
    "generation",
    "picked",
    "built",
    "measured",
    "cost_model_updated",
    "profile",
    "devices",
    "waiting_for_devices",
    "paused",
    "resumed",
    "rules_set",
    "environment",
    "remeasured",
    "task_done",
    "end_to_end",
    "untuned",
    "model_latency",
    "warning",
    "quarantine",
    "log",
    "callback_error",
    "finished",
    "stopped",
    "failed",
)


@dataclass(frozen=True)
class Event:
    """One thing that happened in a session.

    Parameters
    ----------
    seq : int
        Position in the session's event list (0-based).
    kind : str
        One of :data:`EVENT_KINDS`.
    time : float
        When it happened (``time.time()``).
    task : str
        The task (workload name) it belongs to; ``""`` for session-wide events.
    data : Mapping
        Plain data describing the event (see the engine's docs for each kind).
    """

    seq: int
    kind: str
    time: float
    task: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        """``data[key]``, or ``default`` when the event has no such field."""
        return self.data.get(key, default)

    def __repr__(self) -> str:
        keys = ", ".join(list(self.data)[:6])
        return f"Event(seq={self.seq}, kind={self.kind!r}, task={self.task!r}, data=[{keys}])"


Callback = Callable[[Event], Any]


class EventLog:
    """An append-only, thread-safe list of events with subscribers.

    Subscribers are called synchronously, in order, on the thread that emits (usually the
    engine's worker thread); a UI should hand the event to its own loop and return. A callback
    that raises is reported once as a ``callback_error`` event and unsubscribed; it never stops
    the engine.
    """

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._subscribers: list[Callback] = []
        # Re-entrant: a callback may emit (or subscribe) without deadlocking.
        self._lock = threading.RLock()

    def subscribe(self, callback: Callback, *, replay: bool = False) -> Callable[[], None]:
        """Call ``callback(event)`` for every later event.

        Parameters
        ----------
        callback : callable
            Receives one :class:`Event`.
        replay : bool
            Also call it now with every event emitted so far.

        Returns
        -------
        unsubscribe : callable
            Call it (no arguments) to stop receiving events.
        """
        if not callable(callback):
            raise TypeError(f"callback must be callable, not {type(callback).__name__}")
        with self._lock:
            self._subscribers.append(callback)
            past = list(self._events) if replay else []
        for event in past:
            if not self._deliver(callback, event):
                break
        return lambda: self.unsubscribe(callback)

    def unsubscribe(self, callback: Callback) -> bool:
        """Stop calling ``callback``; returns False if it was not subscribed."""
        with self._lock:
            if callback in self._subscribers:
                self._subscribers.remove(callback)
                return True
            return False

    def emit(self, kind: str, task: str = "", **data: Any) -> Event:
        """Append an event and hand it to every subscriber.

        Parameters
        ----------
        kind : str
            One of :data:`EVENT_KINDS`.
        task : str
            The task the event belongs to.
        **data
            Plain data; the caller guarantees it holds no live TVM object.
        """
        with self._lock:
            event = Event(len(self._events), kind, time.time(), task, data)
            self._events.append(event)
            subscribers = list(self._subscribers)
            for callback in subscribers:
                self._deliver(callback, event)
        return event

    def _deliver(self, callback: Callback, event: Event) -> bool:
        try:
            callback(event)
            return True
        except Exception as err:
            self.unsubscribe(callback)
            name = getattr(callback, "__qualname__", None) or repr(callback)
            self.emit(
                "callback_error",
                event.task,
                callback=name,
                event_kind=event.kind,
                error=f"{type(err).__name__}: {err}",
                traceback="".join(traceback.format_exception(err)),
            )
            return False

    def snapshot(self) -> list[Event]:
        """A copy of the events so far."""
        with self._lock:
            return list(self._events)

    def of_kind(self, *kinds: str) -> list[Event]:
        """The events whose kind is one of ``kinds``."""
        return [e for e in self.snapshot() if e.kind in kinds]

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.snapshot())

    def __getitem__(self, index: int) -> Event:
        return self._events[index]
