"""What ``msviz tune`` prints while it tunes: a progress bar, the stage, and why it waits."""

from __future__ import annotations

import sys
import time
from typing import Any

from msviz.engine import Session
from msviz.engine.arguments import TIME_ONLY_MAX_TRIALS
from msviz.records.row import gflops

__all__ = ["Progress", "stage_text", "waiting_text"]


class Progress:
    """One progress bar per run: redrawn in place on a terminal; otherwise one plain line now
    and then (every ``every`` seconds, or each tenth of the trials), never a flood of ``\\r``."""

    def __init__(self, session: Session, *, stream: Any = None, every: float = 30.0) -> None:
        self.session = session
        self.stream = stream or sys.stdout
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = every
        self.start = time.perf_counter()
        self._last_time = -1e9
        self._last_tenth = -1
        self._drawn = False

    def line(self) -> str:
        session = self.session
        best_us = session.best_secs * 1e6
        if best_us == float("inf"):
            best_text = "-"
        elif session.model is None:
            best_text = f"{best_us:.2f} us ({gflops(session.workload.flop, best_us):.1f} GFLOPS)"
        else:
            best_text = f"model ~{best_us:.2f} us"
        done = min(session.trials_done, session.max_trials)
        width, share = 20, done / max(1, session.max_trials)
        limit, elapsed = session.config.max_seconds, time.perf_counter() - self.start
        if limit is not None:  # the budget nearer its end fills the bar
            share = max(share if session.max_trials != TIME_ONLY_MAX_TRIALS else 0.0,
                        min(1.0, elapsed / limit))
        bar = "#" * int(width * share) + "." * (width - int(width * share))
        stage = stage_text(session.events.snapshot(), session.state)
        total = "" if session.max_trials == TIME_ONLY_MAX_TRIALS else f"/{session.max_trials}"
        return (f"[{bar}] {done}{total} trials "
                f"[{time.perf_counter() - self.start:6.1f} s] {session.state:<8} {stage:<18} "
                f"best {best_text}")

    def update(self, *, force: bool = False) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K" + self.line())
            self._drawn = True
        else:
            now = time.perf_counter()
            tenth = 10 * self.session.trials_done // max(1, self.session.max_trials)
            if force or now - self._last_time >= self.every or tenth > self._last_tenth:
                self.stream.write(self.line() + "\n")
                self._last_time, self._last_tenth = now, tenth
        self.stream.flush()

    def print(self, text: str) -> None:
        """Print lines above the bar (the bar is redrawn at the next update)."""
        if self.tty and self._drawn:
            self.stream.write("\r\x1b[K")
            self._drawn = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.update(force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def stage_text(events: list, state: str) -> str:
    """What the session did last (the newest event's kind, logs and warnings left out), or ""
    when that is its state already (``finished``: the bar shows the state once)."""
    stage = next((e.kind for e in reversed(events) if e.kind not in ("log", "warning")), "")
    return "" if stage == state else stage


def waiting_text(session: Session) -> str:
    """While the session waits for RPC devices: for what, why (e.g. the tracker refuses the
    connection) and how long at most; else ""."""
    if session.state != "waiting":
        return ""
    event = next((e for e in reversed(session.events.snapshot())
                  if e.kind == "waiting_for_devices"), None)
    if event is None:
        return ""
    why = event.get("error") or "no server is registered under the key yet"
    return (f"msviz: waiting for an RPC server under key {event['key']!r} at tracker "
            f"{event['tracker']}: {why}; giving up after {event['wait_timeout']:g} s "
            "(--rpc-wait)")
