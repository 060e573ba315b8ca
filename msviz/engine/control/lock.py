"""One writer per work dir: a lock file held for a session's tuning.

Two sessions appending to one work dir would interleave their record lines, and each one's
sidecar rows would name the other's records. A session holds an exclusive ``flock`` on
``work_dir/msviz.lock`` from :meth:`Session.start` until it ends; the file names the holder's
pid and start time, so a second session (in this process or another) is refused with both.
The kernel releases the lock of a process that dies (``kill -9``, a crash): the next session
takes over the file and says so.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from msviz.errors import WorkDirError

__all__ = ["LOCK_FILE", "WorkDirBusyError", "WorkDirLock", "check_unlocked", "holder_of"]

LOCK_FILE = "msviz.lock"


class WorkDirBusyError(WorkDirError):
    """The work dir is tuned by another live session (the message names its pid and start)."""


def holder_of(work_dir: str | Path) -> dict | None:
    """What the lock file says about its holder (``pid``, ``started``, ``host``), or None."""
    try:
        text = (Path(work_dir) / LOCK_FILE).read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _describe(holder: dict | None) -> str:
    if not holder:
        return "another session (its lock file names no holder)"
    started = holder.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)) \
        if isinstance(started, (int, float)) else "an unknown time"
    return f"process {holder.get('pid')} on {holder.get('host', '?')}, started {when}"


def _busy(work_dir: Path, holder: dict | None) -> WorkDirBusyError:
    return WorkDirBusyError(
        f"work_dir {str(work_dir)!r} is being tuned by {_describe(holder)} (lock file "
        f"{work_dir / LOCK_FILE}): two sessions on one work dir would mix their records. Wait "
        "for it to end (or stop it), or choose another work_dir")


class WorkDirLock:
    """The exclusive lock of one work dir (see the module's doc).

    Parameters
    ----------
    work_dir : str | Path
        The work dir (created if missing).
    """

    def __init__(self, work_dir: str | Path) -> None:
        self.work_dir = Path(work_dir)
        self.path = self.work_dir / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> str | None:
        """Take the lock; returns a note when a dead process's lock was taken over.

        Raises
        ------
        WorkDirBusyError
            Another live session holds it.
        """
        self.work_dir.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise _busy(self.work_dir, holder_of(self.work_dir)) from None
            try:  # the holder before us may have removed the file meanwhile: lock the new one
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        stale = holder_of(self.work_dir)
        me = {"pid": os.getpid(), "started": time.time(), "host": socket.gethostname()}
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(me).encode())
        self._fd = fd
        if stale:
            return (f"took over the lock of {_describe(stale)}, which ended without releasing "
                    f"it (a crash or kill?): {self.path}")
        return None

    def release(self) -> None:
        """Remove the lock file and release the lock (idempotent)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(fd)

    def __enter__(self) -> WorkDirLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def check_unlocked(work_dir: str | Path) -> None:
    """Raise :class:`WorkDirBusyError` now if a live session holds ``work_dir``'s lock."""
    path = Path(work_dir) / LOCK_FILE
    if not path.is_file():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _busy(Path(work_dir), holder_of(work_dir)) from None
    finally:
        os.close(fd)
