"""Builders by name, as ``scheduler.create`` makes task schedulers: ``create("local")`` or a
MetaSchedule ``Builder`` as it is.

``"local"`` is :class:`WarmLocalBuilder`: MetaSchedule's ``LocalBuilder`` (the same worker
function, errors and timeouts) with msviz's fast build function, whose worker processes stay up
from one batch to the next. The stock ``LocalBuilder`` starts a new pool for every batch (against
a slow memory leak in long-lived workers): about 1.2 s of two processes importing TVM, and their
first build's warm-up, in every batch. The warm pool is replaced every :data:`RECYCLE_AFTER`
batches, which bounds that leak the same way.
"""

from __future__ import annotations

from typing import Any

from msviz import compat
from msviz.engine.measure.worker_pool import NamingPoolExecutor

__all__ = ["BUILDERS", "RECYCLE_AFTER", "WarmLocalBuilder", "build_artifact", "create"]

#: The builders msviz makes by name.
BUILDERS = ("local",)
#: Batches a warm builder pool builds before it is replaced.
RECYCLE_AFTER = 50

# TVM's LocalBuilder worker (build with f_build, export with the default export)
_build_one = compat.local_builder_worker


def build_artifact(f_build: Any, mod: Any, target: Any) -> str:
    """Build one candidate as ``LocalBuilder``'s worker does (``f_build``, or MetaSchedule's
    default build when None, then its default export); returns the artifact's path."""
    return _build_one(f_build, None, mod, target, None)


class _WarmLocalBuilder(compat.ms.builder.PyBuilder):
    """``LocalBuilder`` with :func:`msviz.compat.fast_build`, its worker pool kept warm.

    Parameters
    ----------
    max_workers : int
        Build processes.
    timeout_sec : float
        Seconds per candidate (a worker past it is killed and restarted by the pool).
    recycle_after : int
        Batches before the pool is replaced.
    """

    def __init__(self, max_workers: int, timeout_sec: float,
                 recycle_after: int = RECYCLE_AFTER) -> None:
        super().__init__()
        self.max_workers = int(max_workers)
        self.timeout_sec = float(timeout_sec)
        self.recycle_after = int(recycle_after)
        #: The warm pool (None until the first batch, and after :meth:`reset`).
        self.pool: NamingPoolExecutor | None = None
        #: Batches the current pool built.
        self.batches = 0
        #: Pools started so far.
        self.pools_started = 0

    def build(self, build_inputs: list) -> list:
        if self.pool is None or self.batches >= self.recycle_after:
            self.reset()
            self.pool = NamingPoolExecutor(max_workers=self.max_workers, timeout=self.timeout_sec)
            self.pools_started += 1
        self.batches += 1
        jobs = [(compat.fast_build, None, inp.mod, inp.target, None) for inp in build_inputs]
        results = []
        for out in self.pool.map_with_error_catching(lambda job: _build_one(*job), jobs):
            if out.status == compat.StatusKind.COMPLETE:
                results.append(compat.ms.builder.BuilderResult(out.value, None))
            elif out.status == compat.StatusKind.TIMEOUT:
                results.append(compat.ms.builder.BuilderResult(
                    None, f"LocalBuilder: Timeout, killed after {self.timeout_sec:g} seconds"))
            else:
                results.append(compat.ms.builder.BuilderResult(
                    None, f"LocalBuilder: An exception occurred\n{out.value}"))
        return results

    def reset(self) -> None:
        """Shut the pool down (its workers were killed, or it built enough); the next batch
        starts a new one."""
        pool, self.pool, self.batches = self.pool, None, 0
        if pool is not None:
            try:
                pool.shutdown(wait=False)
            except Exception:  # workers already killed: nothing left to stop
                pass


WarmLocalBuilder = compat.derived_object(_WarmLocalBuilder)


def create(kind: Any = "local", *, max_workers: int, timeout: float) -> Any:
    """A MetaSchedule builder.

    Parameters
    ----------
    kind : str | Builder
        ``"local"``: :class:`WarmLocalBuilder` (the fast build function: no 13-20 s import of
        the tensor intrinsics in every worker; workers kept up between batches); a ``Builder``
        object is used as it is.
    max_workers : int
        Build processes.
    timeout : float
        Seconds per candidate.
    """
    if isinstance(kind, str):
        if kind == "local":
            return WarmLocalBuilder(max_workers=max_workers, timeout_sec=timeout)
        raise ValueError(f"unknown builder {kind!r}: use one of {', '.join(BUILDERS)} or a "
                         "MetaSchedule Builder")
    return kind
