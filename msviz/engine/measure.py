"""Building and running candidates with MetaSchedule's builder and runner, under a watchdog.

``LocalBuilder``/``LocalRunner`` enforce their timeouts only inside a worker that got the job; a
pool that stops answering (seen on loaded machines: the main thread waits on ``recv`` forever)
is not caught. :class:`Measurer` therefore calls them on a helper thread with its own deadline;
when it passes, it kills the pool's worker processes (its own, by PID), replaces the pool, and
reports the batch as failed with a clear error, so the session goes on.

Over RPC (:mod:`msviz.engine.rpc`) the runner's futures are collected one by one while the
tracker is watched: a candidate whose server died is ``device_lost`` (not the candidate's
fault: it is offered again later), and when no server holds the key any more the candidates
still queued are given up as ``device_lost`` instead of waiting in the tracker's queue forever.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from msviz import compat
from msviz.engine import rpc

__all__ = [
    "ERROR_KINDS",
    "UNMEASURED_KINDS",
    "BuildOutcome",
    "MeasureResult",
    "Measurer",
    "cuda_available",
    "is_infra_error",
]


#: Error kinds of a :class:`MeasureResult`: the candidate failed to build, failed (or timed
#: out) when run, or could not be measured for reasons outside it ("infra": a watchdog
#: timeout, no CUDA device, a builder or runner that raised or lost the batch, an RPC error),
#: or its RPC server died or left the fleet while it was measured ("device_lost").
ERROR_KINDS = ("build", "run", "infra", "device_lost")

#: Error kinds that say nothing about the candidate: stored and shown, never counted toward
#: ``max_trials``, never trained into the cost model, and offered again later.
UNMEASURED_KINDS = ("infra", "device_lost")

#: Error texts of a runner that failed around the candidate rather than in it.
_INFRA_MARKERS = (
    "RPCSessionTimeoutError",
    "RPCError",
    "Connection refused",
    "Connection reset",
    "Broken pipe",
    "tracker",
    "no CUDA device",
    "CUDA_ERROR_NO_DEVICE",
    "no CUDA-capable device",
)


def is_infra_error(text: str | None) -> bool:
    """True when a runner's error text says the infrastructure failed, not the candidate."""
    return text is not None and any(m in text for m in _INFRA_MARKERS)


@dataclass(frozen=True)
class BuildOutcome:
    """One candidate's build: the artifact path, or the builder's error text.

    ``infra`` is True when the builder itself failed (watchdog, exception), not the candidate.
    """

    artifact: str | None
    error: str | None
    infra: bool = False


@dataclass(frozen=True)
class MeasureResult:
    """One candidate's measurement: ``run_secs``, or an error and where it happened."""

    run_secs: tuple[float, ...] | None
    error: str | None
    error_kind: str | None  # one of ERROR_KINDS, or None
    device: str | None = None  # the RPC server that measured it ("host:port"), if known

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.run_secs)


class WatchdogTimeout(RuntimeError):
    """The builder or runner did not answer before the watchdog's deadline."""


def cuda_available() -> str | None:
    """None if a CUDA device can run kernels here, else why not."""
    import tvm

    if not tvm.runtime.enabled("cuda"):
        return "no CUDA device: this TVM build has no CUDA runtime loaded (libcuda.so.1 missing?)"
    try:
        if not tvm.cuda(0).exist:
            return "no CUDA device: no GPU is visible to this process"
    except Exception as err:  # pragma: no cover - driver errors
        return f"no CUDA device: {err}"
    return None


def _popen_children() -> set[int]:
    import psutil

    out = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            if any("popen_worker" in part for part in proc.cmdline()):
                out.add(proc.pid)
        except psutil.Error:
            continue
    return out


def _kill(pids: Sequence[int]) -> None:
    import psutil

    for pid in pids:
        try:
            proc = psutil.Process(pid)
            for child in proc.children(recursive=True):
                child.kill()
            proc.kill()
        except psutil.Error:
            continue


def _with_deadline(fn: Callable[[], Any], deadline: float, on_timeout: Callable[[], None]) -> Any:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:
            box["error"] = err

    thread = threading.Thread(target=target, name="msviz-measure", daemon=True)
    thread.start()
    thread.join(deadline)
    if thread.is_alive():
        on_timeout()
        thread.join(10.0)
        raise WatchdogTimeout(f"no answer after {deadline:.0f} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


class Measurer:
    """Builds and runs candidates, one batch at a time.

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
        self.evaluator_config = self._evaluator(evaluator_config)
        if runner == "rpc":
            runner = rpc.from_env()
        self._builder_spec, self._runner_spec = builder, runner
        #: The tracker and key when measuring over RPC, else None.
        self.fleet = rpc.fleet_of(runner)
        self.builder = self._make_builder(builder)
        self.runner = self._make_runner(runner, self.evaluator_config)
        self.pools_replaced = 0

    @staticmethod
    def _evaluator(config: Any) -> Any:
        cls = compat.ms.runner.EvaluatorConfig
        if config is None:
            return cls()
        if isinstance(config, dict):
            return cls(**config)
        return config

    def _make_builder(self, spec: Any) -> Any:
        if spec == "local":
            return compat.ms.builder.LocalBuilder(
                max_workers=self.max_workers,
                timeout_sec=self.builder_timeout,
                f_build=compat.fast_build,
            )
        if isinstance(spec, str):
            raise ValueError(f"unknown builder {spec!r}: use 'local' or a MetaSchedule Builder")
        return spec

    def _make_runner(self, spec: Any, evaluator_config: Any) -> Any:
        runner_mod = compat.ms.runner
        if spec == "local":
            threads = compat.kernel_threads(self.target)
            return runner_mod.LocalRunner(
                timeout_sec=self.runner_timeout, evaluator_config=evaluator_config,
                initializer=None if threads is None
                else functools.partial(compat.set_kernel_threads, threads),
            )
        if isinstance(spec, rpc.RPCSpec):
            try:
                servers = rpc.tracker_status(spec.tracker, spec.key).total
            except rpc.TrackerError:
                servers = 1
            return spec.make_runner(evaluator_config, session_timeout=self.runner_timeout,
                                    servers=servers)
        if isinstance(spec, str):
            raise ValueError(
                f"unknown runner {spec!r}: use 'local', 'rpc' or a MetaSchedule Runner"
            )
        return spec

    # -- build ------------------------------------------------------------------------------------

    def build(self, mods: Sequence[Any]) -> list[BuildOutcome]:
        """Build each IRModule; a builder that hangs fails the whole batch with an error."""
        if not mods:
            return []
        inputs = [compat.ms.builder.BuilderInput(mod, self.target) for mod in mods]
        before = _popen_children()
        rounds = math.ceil(len(mods) / max(1, self.max_workers))
        deadline = self.builder_timeout * rounds + 2 * self.watchdog_slack

        def on_timeout() -> None:
            _kill(sorted(_popen_children() - before))
            self.pools_replaced += 1

        try:
            results = _with_deadline(lambda: self.builder.build(inputs), deadline, on_timeout)
        except WatchdogTimeout as err:
            msg = f"msviz watchdog: the builder's worker pool stopped answering ({err}); " \
                  "its workers were killed and the pool replaced"
            return [BuildOutcome(None, msg, infra=True) for _ in mods]
        except Exception as err:
            msg = f"msviz: the builder raised {type(err).__name__}: {err}"
            return [BuildOutcome(None, msg, infra=True) for _ in mods]
        return [BuildOutcome(r.artifact_path, r.error_msg) for r in results]

    # -- run --------------------------------------------------------------------------------------

    def run(
        self,
        built: Sequence[BuildOutcome],
        args_infos: Sequence[Any],
        *,
        evaluator_config: Any = None,
    ) -> list[MeasureResult]:
        """Run what built; failed builds come back as ``build`` errors, in order.

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
        out: list[MeasureResult | None] = [
            MeasureResult(None, b.error, "infra" if b.infra else "build")
            if b.error or not b.artifact else None
            for b in built
        ]
        todo = [i for i, r in enumerate(out) if r is None]
        if not todo:
            return out  # type: ignore[return-value]
        if self.device_type == "cuda" and self._runner_spec == "local":
            why = cuda_available()
            if why is not None:
                for i in todo:
                    out[i] = MeasureResult(None, f"LocalRunner: {why}", "infra")
                return out  # type: ignore[return-value]
        runner = self.runner
        temporary = evaluator_config is not None and isinstance(self._runner_spec,
                                                                 (str, rpc.RPCSpec))
        if temporary:
            runner = self._make_runner(self._runner_spec, self._evaluator(evaluator_config))
        inputs = [
            compat.ms.runner.RunnerInput(built[i].artifact, self.device_type, args_infos[i])
            for i in todo
        ]
        deadline = (self.runner_timeout + self.watchdog_slack / 3) * len(todo) + self.watchdog_slack

        def call() -> list[Any]:
            if self.fleet is not None:
                return self._collect_rpc(compat.runner_futures(runner, inputs),
                                         [built[i].artifact for i in todo])
            return [f.result() for f in runner.run(inputs)]

        def on_timeout() -> None:
            self._kill_runner(runner)

        try:
            results = _with_deadline(call, deadline, on_timeout)
        except WatchdogTimeout as err:
            if runner is self.runner:
                self.runner = self._make_runner(self._runner_spec, self.evaluator_config) \
                    if isinstance(self._runner_spec, (str, rpc.RPCSpec)) else self.runner
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
                self._shutdown_runner(runner)
        for i, res in zip(todo, results):
            if isinstance(res, MeasureResult):  # over RPC: classified already
                out[i] = res
                continue
            secs = tuple(float(s) for s in res.run_secs) if res.run_secs else None
            error = None if res.error_msg is None else str(res.error_msg)
            kind = None if not error else "infra" if is_infra_error(error) else "run"
            out[i] = MeasureResult(secs, error, kind)
        return out  # type: ignore[return-value]

    def _collect_rpc(self, futures: list, artifacts: list[str | None]) -> list[MeasureResult]:
        """Wait for RPC futures while watching the tracker; classify each outcome."""
        spec = self.fleet
        assert spec is not None
        pending = set(range(len(futures)))
        empty_since: float | None = None
        next_check = time.monotonic() + spec.poll_interval
        gone: str | None = None
        try:
            at_start = rpc.tracker_status(spec.tracker, spec.key).total
        except rpc.TrackerError:
            at_start = 0
        while pending:
            for k in sorted(pending):
                if _future_done(futures[k]):
                    pending.discard(k)
            if not pending:
                break
            now = time.monotonic()
            if now >= next_check:
                next_check = now + spec.poll_interval
                try:
                    total, why = rpc.tracker_status(spec.tracker, spec.key).total, \
                        f"no RPC server holds key {spec.key!r} any more"
                except rpc.TrackerError as err:
                    total, why = 0, str(err)
                if total:
                    empty_since = None
                elif empty_since is None:
                    empty_since = now
                elif now - empty_since >= 2 * spec.poll_interval:
                    gone = why
                    break
            time.sleep(0.02)
        servers: set[str] | None = None
        results = []
        for k, fut in enumerate(futures):
            device = rpc.read_device(artifacts[k])
            if k in pending:
                results.append(MeasureResult(None, f"msviz: {gone}; the candidate was given up "
                                             "while it waited for a server", "device_lost",
                                             device))
                continue
            inner = getattr(fut, "future", None)
            if inner is None:  # an RPCRunner subclass with its own futures: its text only
                res = fut.result()
                error = None if res.error_msg is None else str(res.error_msg)
                secs = tuple(float(s) for s in res.run_secs) if res.run_secs else None
                kind = None if not error else "device_lost" if is_infra_error(error) else "run"
                results.append(MeasureResult(secs, error, kind, device))
                continue
            err = inner.exception()
            if err is None:
                secs = tuple(float(s) for s in inner.result())
                results.append(MeasureResult(secs, None, None, device))
                continue
            if isinstance(err, TimeoutError):
                limit = spec.session_timeout or self.runner_timeout
                text = f"RPCRunner: Timeout, killed after {limit} seconds"
                results.append(MeasureResult(None, text, "run", device))
                continue
            text = f"RPCRunner: An exception occurred\n{type(err).__name__}: {err}"
            lost = rpc.is_device_lost(err)
            if not lost:  # did the server it ran on (or, unknown, any server) leave the tracker?
                if servers is None:
                    # the tracker drops a dead server when its connection closes, about when
                    # the client's does: give it a moment before asking
                    time.sleep(0.5)
                    try:
                        servers = {s["address"] for s in rpc.tracker_status(
                            spec.tracker, spec.key).servers}
                    except rpc.TrackerError:
                        servers = set()
                lost = device not in servers if device is not None else len(servers) < at_start
            results.append(MeasureResult(None, text, "device_lost" if lost else "run", device))
        if gone is not None:  # the queued requests still hold the pool's workers: replace it
            self._kill_runner(self.runner)
            self._shutdown_runner(self.runner)
            self.runner = self._make_runner(self._runner_spec, self.evaluator_config) \
                if isinstance(self._runner_spec, (str, rpc.RPCSpec)) else self.runner
        return results

    def _kill_runner(self, runner: Any) -> None:
        pool = getattr(runner, "pool", None)
        workers = getattr(pool, "_worker_map", {}) if pool is not None else {}
        for worker in list(workers.values()):
            proc = getattr(worker, "_proc", None)
            if proc is not None:
                _kill([proc.pid])
        self.pools_replaced += 1

    @staticmethod
    def _shutdown_runner(runner: Any) -> None:
        pool = getattr(runner, "pool", None)
        if pool is not None:
            try:
                pool.shutdown(wait=False)
            except Exception:  # pragma: no cover - best effort
                pass

    @staticmethod
    def cleanup(built: Sequence[BuildOutcome]) -> None:
        """Delete build artifacts (``RemoveBuildArtifact``)."""
        for b in built:
            if b.artifact:
                shutil.rmtree(os.path.dirname(b.artifact), ignore_errors=True)

    def close(self) -> None:
        """Stop the runner's persistent worker."""
        self._shutdown_runner(self.runner)


def _future_done(fut: Any) -> bool:
    inner = getattr(fut, "future", None)
    return bool(inner.done() if inner is not None else fut.done())
