"""The one bridge from the engine thread to the widgets: batched hand-off to the kernel loop.

The engine calls :meth:`UIAdapter._on_event` on its worker thread; that only appends to a list.
At most ``max_rate`` times a second, the pending events are handed, in one batch, to the
handlers on the kernel's asyncio loop (``loop.call_soon_threadsafe``), where widgets may be
changed safely; an event the user waits for (:data:`URGENT_KINDS`: a batch measured, a state
change) goes at once, with whatever is pending. A slow handler delays only the next redraw,
never the engine.
"""

from __future__ import annotations

import asyncio
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

__all__ = ["UIAdapter", "running_loop"]

Handler = Callable[[list], Any]

#: Events the user waits to see (a batch measured, the state changed): delivered at once.
#: The chatty rest (log lines, search stages) waits for the next slot of ``max_rate``.
URGENT_KINDS = frozenset({"measured", "remeasured", "started", "paused", "resumed", "finished",
                          "stopped", "failed"})


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop (the kernel's, in a notebook cell), or None (a plain script)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class UIAdapter:
    """Subscribe to an event source and deliver its events to handlers in batches.

    Parameters
    ----------
    source : object with ``subscribe(callback) -> unsubscribe``
        A :class:`msviz.Session` (or its event log).
    loop : asyncio.AbstractEventLoop, optional
        Where handlers run; default: the running loop (the kernel's, in a notebook cell). With no
        loop (a plain script), handlers run on a small timer thread instead.
    max_rate : float
        Most deliveries per second.
    """

    def __init__(self, source: Any, *, loop: asyncio.AbstractEventLoop | None = None,
                 max_rate: float = 10.0) -> None:
        self.loop = loop if loop is not None else running_loop()
        self.min_interval = 1.0 / max_rate
        self.handlers: list[Handler] = []
        self.errors: list[str] = []
        self.deliveries = 0
        self._pending: list = []
        self._lock = threading.Lock()
        self._deliver = threading.Lock()  # handlers never run twice at once (timer threads)
        self._scheduled = False
        self._last = 0.0
        self._closed = False
        self._unsubscribe = source.subscribe(self._on_event)

    def add_handler(self, handler: Handler) -> None:
        """Call ``handler(events)`` with each batch of new events."""
        self.handlers.append(handler)

    def _on_event(self, event: Any) -> None:  # engine thread: append and return
        urgent = getattr(event, "kind", None) in URGENT_KINDS
        with self._lock:
            if self._closed:
                return
            self._pending.append(event)
            if self._scheduled and not urgent:
                return
            self._scheduled = True
        delay = 0.0 if urgent else max(0.0, self._last + self.min_interval - time.monotonic())
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.call_later, delay, self.flush)
        else:
            timer = threading.Timer(delay, self.flush)
            timer.daemon = True
            timer.start()

    def flush(self) -> int:
        """Deliver the pending events now; returns how many there were."""
        with self._deliver:
            with self._lock:
                events, self._pending = self._pending, []
                self._scheduled = False
            self._last = time.monotonic()
            if not events:
                return 0
            self.deliveries += 1
            for handler in list(self.handlers):
                try:
                    handler(events)
                except Exception:  # a broken view must not stop the others
                    self.errors.append(traceback.format_exc())
            return len(events)

    def close(self) -> None:
        """Stop listening to the source."""
        with self._lock:
            self._closed = True
        if callable(self._unsubscribe):
            self._unsubscribe()
