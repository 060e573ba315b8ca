"""The measuring service: the one way msviz builds, runs and times kernels.

:class:`MeasuringService` builds and runs lists of candidates for a target with MetaSchedule's
builder and runner (from :mod:`~msviz.engine.measure.builder` and
:mod:`~msviz.engine.measure.runner`'s ``create``; the settings of a
:class:`~msviz.engine.config.SessionConfig` through :meth:`MeasuringService.for_config`), and
owns :data:`MEASURING_LOCK`, the process-wide lock every build and run holds: one measurement
at a time in this process, so nothing times a kernel on the same cores as another's batch. A
session's tuning batches, re-measurements, untuned times, a shape cover's cross-measurement,
``msviz.coverage``'s untuned times and a reproduce's re-timing all measure through it; what is
not a list of schedules (a trial's check, a model profiled or compared, a forced schedule) is
:mod:`~msviz.engine.measure.requests`', under the same lock.

The builder and runner are called under :mod:`~msviz.engine.measure.watchdog`'s deadline: when
it passes, the pool's worker processes are killed (its own, by PID), the pool is replaced, and
the batch is reported as failed with a clear error, so the session goes on.

Over RPC (:mod:`msviz.engine.measure.rpc`) the runner's futures are collected one by one while the
tracker is watched: a candidate whose server died is ``device_lost`` (not the candidate's
fault: it is offered again later), and when no server holds the key any more the candidates
still queued are given up as ``device_lost`` instead of waiting in the tracker's queue forever.
"""

from __future__ import annotations

import math
import os
import shutil
import threading
from collections.abc import Sequence
from typing import Any

from msviz import compat
from msviz.engine.measure import builder as builder_mod
from msviz.engine.measure import rpc, tracker, watchdog
from msviz.engine.measure import runner as runner_mod
from msviz.engine.measure.results import (
    BuildOutcome,
    MeasureResult,
    is_infra_build_error,
    is_infra_error,
)
from msviz.engine.measure.untuned import measure_untuned

__all__ = ["MEASURING_LOCK", "MeasuringService"]

#: Held by every build and run in this process: a session worker's batches, its untuned and
#: end-to-end timings, a trial's check, a model's fresh profile or comparison, a forced
#: schedule's timing, the workflows' measurements. Re-entrant: a measurement may call another
#: (a session's check inside its worker's turn, a batch's build and then its run).
MEASURING_LOCK = threading.RLock()


class MeasuringService:
    """Builds and runs candidates, one batch at a time, each build and run under
    :data:`MEASURING_LOCK` (also :attr:`lock`).

    Parameters
    ----------
    target : tvm.target.Target
        What to build for.
    builder : str | Builder
        ``"local"`` (MetaSchedule's ``LocalBuilder`` with msviz's fast build function) or any
        MetaSchedule ``Builder``.
    runner : str | RPCSpec | Runner
        ``"local"`` (``LocalRunner``), ``"rpc"`` (the tracker named by the ``TVM_TRACKER_*``
        environment variables), :func:`msviz.rpc`'s spec, or any MetaSchedule ``Runner``
        (an ``RPCRunner`` is watched like a spec: its tracker is read from ``rpc_config``).
    builder_timeout, runner_timeout : float
        Seconds per candidate, enforced by the builder and runner workers.
    evaluator_config : EvaluatorConfig | dict, optional
        How the runner times a kernel (stock defaults when None).
    max_workers : int, optional
        Build processes (default: the host's cores).
    watchdog_slack : float
        Seconds the watchdog allows on top of the per-candidate timeouts before it declares a
        pool dead.
    """

    def __init__(
        self,
        target: Any,
        *,
        builder: Any = "local",
        runner: Any = "local",
        builder_timeout: float = 30.0,
        runner_timeout: float = 30.0,
        evaluator_config: Any = None,
        max_workers: int | None = None,
        watchdog_slack: float = 30.0,
    ) -> None:
        self.target = target
        self.device_type = compat.device_type(target)
        self.builder_timeout = float(builder_timeout)
        self.runner_timeout = float(runner_timeout)
        self.max_workers = max_workers or os.cpu_count() or 1
        self.watchdog_slack = float(watchdog_slack)
        self.evaluator_config = runner_mod.evaluator_config(evaluator_config)
        if runner == "rpc":
            runner = rpc.from_env()
        self._builder_spec, self._runner_spec = builder, runner
        #: The tracker and key when measuring over RPC, else None.
        self.fleet = rpc.fleet_of(runner)
        self.builder = builder_mod.create(builder, max_workers=self.max_workers,
                                          timeout=self.builder_timeout)
        self.runner = self._make_runner(self.evaluator_config)
        self.pools_replaced = 0

    #: The process-wide lock (:data:`MEASURING_LOCK`).
    lock = MEASURING_LOCK

    @classmethod
    def for_config(cls, target: Any, config: Any) -> MeasuringService:
        """A service with a :class:`~msviz.engine.config.SessionConfig`'s builder, runner,
        timeouts and evaluator settings, for ``target``; no Session needed."""
        return cls(target, **config.measurer_options())

    def measure(self, mods: Sequence[Any], args_infos: Sequence[Any] | None = None, *,
                evaluator_config: Any = None) -> list[MeasureResult]:
        """Build and run each IRModule (its ``args_info`` read from it unless given) in one turn
        of the lock, their artifacts removed after; in order, failures as results."""
        if args_infos is None:
            args_infos = [compat.ArgInfo.from_entry_func(m, remove_preproc=True) for m in mods]
        with MEASURING_LOCK:
            built: list[BuildOutcome] = []
            try:
                built = self.build(mods)
                return self.run(built, args_infos, evaluator_config=evaluator_config)
            finally:
                self.cleanup(built)

    def time_untuned(self, tasks: list) -> list[dict]:
        """Every task's workload built and timed as it is, in one batch
        (:func:`~msviz.engine.measure.untuned.measure_untuned`)."""
        with MEASURING_LOCK:
            return measure_untuned(self, tasks)

    def _make_runner(self, evaluator: Any) -> Any:
        return runner_mod.create(self._runner_spec, self.target, timeout=self.runner_timeout,
                                 evaluator=evaluator)

    def _replace_runner(self) -> None:
        """A fresh runner for one whose pool was killed (a runner object given by the user is
        kept: msviz cannot make another)."""
        if runner_mod.remakeable(self._runner_spec):
            self.runner = self._make_runner(self.evaluator_config)

    # -- build ------------------------------------------------------------------------------------

    def build(self, mods: Sequence[Any]) -> list[BuildOutcome]:
        """Build each IRModule under the lock; a builder that hangs fails the whole batch with
        an error."""
        with MEASURING_LOCK:
            return self._build(mods)

    def _build(self, mods: Sequence[Any]) -> list[BuildOutcome]:
        if not mods:
            return []
        inputs = [compat.ms.builder.BuilderInput(mod, self.target) for mod in mods]
        before = watchdog.popen_children()
        # a builder that says how many candidates it builds at once and its own per-candidate
        # timeout (a Ray builder: the cluster's CPUs) is timed by those
        workers = getattr(self.builder, "max_workers", None) or self.max_workers
        per_build = getattr(self.builder, "timeout_sec", None) or self.builder_timeout
        rounds = math.ceil(len(mods) / max(1, int(workers)))
        deadline = float(per_build) * rounds + 2 * self.watchdog_slack

        def on_timeout() -> None:
            watchdog.kill_pool_workers(self.builder)  # a warm pool's workers predate the batch
            watchdog.kill(sorted(watchdog.popen_children() - before))
            if hasattr(self.builder, "reset"):
                self.builder.reset()
            self.pools_replaced += 1

        try:
            results = watchdog.with_deadline(lambda: self.builder.build(inputs), deadline,
                                             on_timeout)
        except watchdog.WatchdogTimeout as err:
            msg = f"msviz watchdog: the builder's worker pool stopped answering ({err}); " \
                  "its workers were killed and the pool replaced"
            return [BuildOutcome(None, msg, infra=True) for _ in mods]
        except Exception as err:
            msg = f"msviz: the builder raised {type(err).__name__}: {err}"
            return [BuildOutcome(None, msg, infra=True) for _ in mods]
        return [BuildOutcome(r.artifact_path, r.error_msg, infra=is_infra_build_error(r.error_msg))
                for r in results]

    # -- run --------------------------------------------------------------------------------------

    def run(
        self,
        built: Sequence[BuildOutcome],
        args_infos: Sequence[Any],
        *,
        evaluator_config: Any = None,
    ) -> list[MeasureResult]:
        """Run what built, under the lock; failed builds come back as ``build`` errors, in
        order.

        A failure of the measuring infrastructure (the builder's or runner's watchdog, a
        builder or runner that raised, no CUDA device, an RPC session error) comes back with
        ``error_kind="infra"``; a real build or run error of the candidate as ``"build"`` /
        ``"run"``.

        Parameters
        ----------
        built : sequence of BuildOutcome
            From :meth:`build`.
        args_infos : sequence
            Each candidate's ``args_info``.
        evaluator_config : EvaluatorConfig | dict, optional
            Time with these settings instead (a temporary runner, e.g. for re-measuring).
        """
        with MEASURING_LOCK:
            return self._run(built, args_infos, evaluator_config)

    def _run(self, built: Sequence[BuildOutcome], args_infos: Sequence[Any],
             evaluator_config: Any) -> list[MeasureResult]:
        out: list[MeasureResult | None] = [
            MeasureResult(None, b.error, "infra" if b.infra else "build")
            if b.error or not b.artifact else None
            for b in built
        ]
        todo = [i for i, r in enumerate(out) if r is None]
        if not todo:
            return out  # type: ignore[return-value]
        if self.device_type == "cuda" and self._runner_spec == "local":
            why = runner_mod.cuda_available()
            if why is not None:
                for i in todo:
                    out[i] = MeasureResult(None, f"LocalRunner: {why}", "infra")
                return out  # type: ignore[return-value]
        runner = self.runner
        temporary = evaluator_config is not None and runner_mod.remakeable(self._runner_spec)
        if temporary:
            runner = self._make_runner(evaluator_config)
        inputs = [
            compat.ms.runner.RunnerInput(built[i].artifact, self.device_type, args_infos[i])
            for i in todo
        ]
        deadline = (self.runner_timeout + self.watchdog_slack / 3) * len(todo) + self.watchdog_slack

        def call() -> list[Any]:
            if self.fleet is None:
                return [f.result() for f in runner.run(inputs)]
            results, gone = rpc.collect(tracker.runner_futures(runner, inputs),
                                        [built[i].artifact for i in todo], self.fleet,
                                        runner_timeout=self.runner_timeout)
            if gone is not None:  # the queued requests still hold the pool's workers
                self._kill_runner(self.runner)
                watchdog.shutdown_pool(self.runner)
                self._replace_runner()
            return results

        def on_timeout() -> None:
            self._kill_runner(runner)

        try:
            results = watchdog.with_deadline(call, deadline, on_timeout)
        except watchdog.WatchdogTimeout as err:
            if runner is self.runner:
                self._replace_runner()
            msg = f"msviz watchdog: the runner stopped answering ({err}); its worker was " \
                  "killed and replaced"
            for i in todo:
                out[i] = MeasureResult(None, msg, "infra")
            return out  # type: ignore[return-value]
        except Exception as err:
            msg = f"msviz: the runner raised {type(err).__name__}: {err}"
            for i in todo:
                out[i] = MeasureResult(None, msg, "infra")
            return out  # type: ignore[return-value]
        finally:
            if temporary:
                watchdog.shutdown_pool(runner)
        for i, res in zip(todo, results):
            if isinstance(res, MeasureResult):  # over RPC: classified already
                out[i] = res
                continue
            secs = tuple(float(s) for s in res.run_secs) if res.run_secs else None
            error = None if res.error_msg is None else str(res.error_msg)
            kind = None if not error else "infra" if is_infra_error(error) else "run"
            out[i] = MeasureResult(secs, error, kind)
        return out  # type: ignore[return-value]

    def _kill_runner(self, runner: Any) -> None:
        watchdog.kill_pool_workers(runner)
        self.pools_replaced += 1

    @staticmethod
    def cleanup(built: Sequence[BuildOutcome]) -> None:
        """Delete build artifacts (``RemoveBuildArtifact``)."""
        for b in built:
            if b.artifact:
                shutil.rmtree(os.path.dirname(b.artifact), ignore_errors=True)

    def close(self) -> None:
        """Stop the runner's persistent worker and a warm builder's pool."""
        watchdog.shutdown_pool(self.runner)
        if hasattr(self.builder, "reset"):
            self.builder.reset()
