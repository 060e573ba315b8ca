"""A deadline around MetaSchedule's builder and runner, and killing their worker processes.

``LocalBuilder``/``LocalRunner`` enforce their timeouts only inside a worker that got the job; a
pool that stops answering (seen on loaded machines: the main thread waits on ``recv`` forever)
is not caught. :func:`with_deadline` calls them on a helper thread with its own deadline; when it
passes, the caller kills the pool's worker processes and replaces the pool.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import psutil

from msviz import compat

__all__ = [
    "WatchdogTimeout",
    "kill",
    "kill_pool_workers",
    "popen_children",
    "shutdown_pool",
    "with_deadline",
]


class WatchdogTimeout(RuntimeError):
    """The builder or runner did not answer before the watchdog's deadline."""


def popen_children() -> set[int]:
    out = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            if any("popen_worker" in part for part in proc.cmdline()):
                out.add(proc.pid)
        except psutil.Error:
            continue
    return out


def kill(pids: Sequence[int]) -> None:
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            for child in proc.children(recursive=True):
                child.kill()
            proc.kill()
        except psutil.Error:
            continue


def with_deadline(fn: Callable[[], Any], deadline: float, on_timeout: Callable[[], None], *,
                  grace: float = 10.0, name: str = "msviz-measure") -> Any:
    """``fn()`` on a daemon thread; past ``deadline`` seconds, ``on_timeout()``, up to
    ``grace`` more seconds for the thread to end, then :class:`WatchdogTimeout`."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:
            box["error"] = err

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    thread.join(deadline)
    if thread.is_alive():
        on_timeout()
        thread.join(grace)
        raise WatchdogTimeout(f"no answer after {deadline:.0f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def kill_pool_workers(runner: Any) -> None:
    """Kill the worker processes of a runner's (or a warm builder's) ``PopenPoolExecutor``.

    TVM's pool has no public way to name its workers; its private ``_worker_map`` (worker ID to
    ``PopenWorker``, each with its ``_proc``) is read here and nowhere else in msviz.
    """
    pool = getattr(runner, "pool", None)
    workers = compat.pool_workers(pool)
    kill([proc.pid for worker in list(workers.values())
          if (proc := compat.worker_process(worker)) is not None])


def shutdown_pool(runner: Any) -> None:
    """Shut a runner's worker pool down without waiting (best effort)."""
    pool = getattr(runner, "pool", None)
    if pool is not None:
        try:
            pool.shutdown(wait=False)
        except Exception:  # pragma: no cover - best effort
            pass
