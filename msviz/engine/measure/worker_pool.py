"""Build and run worker pools that say how a worker died.

MetaSchedule's ``LocalBuilder`` and ``LocalRunner`` hand each candidate to a worker process of a
TVM ``PopenPoolExecutor``. When that process dies under a candidate (a crash in the compiled
kernel, the kernel's out-of-memory killer, a user's ``kill``), TVM's pool raises
``ChildProcessError("Subprocess terminated")``, the candidate fails with that text, and the pool
starts a new worker for the next candidate. The user is left to guess what happened.
:class:`NamingPoolExecutor` is TVM's pool with one change: its error names the signal or exit
status of the worker (``killed by SIGSEGV``) and its pid. Nothing else differs: the same
workers, timeouts and restart. A failed candidate is never picked again (the search keeps every
measured schedule's hash), so a candidate that kills a worker is not measured twice.

TVM's pool keeps its workers in private attributes (``_worker_map``, ``_lock``, each worker's
``_proc``): this subclass uses its own, and :mod:`msviz.compat` reads a worker's process.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from msviz import compat

__all__ = ["NamingPoolExecutor", "death_message", "name_deaths"]


def death_message(returncode: int | None) -> str:
    """How a worker process ended, from its ``returncode`` (negative: the signal)."""
    if returncode is None:
        return "the worker process stopped answering"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the worker process was killed by {name}"
    return f"the worker process exited with status {returncode}"


class NamingPoolExecutor(compat.PopenPoolExecutor):
    """TVM's ``PopenPoolExecutor`` whose ``ChildProcessError`` says how the worker died."""

    def _worker_run(self, fn: Any, args: Any, kwargs: Any) -> Any:
        with self._lock:
            tid = threading.get_ident()
            worker = self._worker_map.get(tid)
            if worker is None:
                worker = self._worker_map[tid] = compat.PopenWorker(
                    self._initializer, self._initargs, self._maximum_process_uses,
                    self._stdout, self._stderr)
        worker.send(fn, args, kwargs, self._timeout)
        process = compat.worker_process(worker)  # the process this candidate runs in
        try:
            return worker.recv()
        except ChildProcessError:
            # TVM's worker has killed and reaped the process: its return code says how it ended
            code = process.returncode if process is not None else None
            pid = f" (pid {process.pid})" if process is not None else ""
            raise ChildProcessError(
                f"Subprocess terminated: {death_message(code)}{pid}; a new worker takes the "
                "next candidate") from None


def name_deaths(obj: Any) -> Any:
    """Make the ``pool`` of a MetaSchedule ``LocalRunner`` (or any object with a TVM
    ``PopenPoolExecutor`` as ``pool``) a :class:`NamingPoolExecutor`; returns ``obj``.

    The pool is already built (``LocalRunner`` makes its own); only its class changes, which
    adds no state."""
    pool = getattr(obj, "pool", None)
    if type(pool) is compat.PopenPoolExecutor:
        pool.__class__ = NamingPoolExecutor
    return obj
