"""Builds on a Ray cluster: :func:`ray_builder`, a MetaSchedule ``Builder`` whose candidates are
built as Ray tasks, one per candidate, on any machine of the cluster.

Each candidate's IRModule and target cross the process boundary as TVM JSON
(``tvm.ir.save_json``); a Ray worker builds it as ``LocalBuilder``'s worker does (msviz's fast
build, then MetaSchedule's default export) and sends the exported file's bytes back. They are
written to a temp dir on the tuning host, so the runner (local, or the RPC fleet) finds the
artifact by path as it would a local build's.

Errors read as the local builder's: ``"LocalBuilder: An exception occurred\\n<traceback>"`` for
a candidate that fails to build, ``"LocalBuilder: Timeout, killed after N seconds"`` for one
past the timeout (its task is cancelled, which kills its worker process). A worker that dies
or a machine that leaves the cluster mid-build, or a worker that cannot run the task (msviz or
TVM missing there), is no fault of the candidate: its error starts ``"RayBuilder:
infrastructure error"`` (:data:`~msviz.engine.measure.results.BUILDER_INFRA`), which the
measurer turns into an ``infra`` failure (never trained, offered again later).

Ray is an optional extra (``pip install msviz[ray]``), imported only when a builder is made.
Every machine of the cluster needs the same Python packages as the tuning host (TVM, msviz).
"""

from __future__ import annotations

import contextlib
import importlib
import ipaddress
import logging
import os
import re
import shutil
import socket
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Iterator
from typing import Any

from msviz import compat
from msviz.engine.measure import watchdog
from msviz.engine.measure.builder import build_artifact
from msviz.errors import MissingExtraError, MsvizWarning, RayClusterError

#: The node address of a new local Ray instance. Ray's servers (GCS, raylet, workers, agents,
#: the autoscaler's metrics) listen on loopback when the node address is loopback, and on all
#: interfaces otherwise; loopback keeps the instance off the network (a Ray cluster runs
#: whatever code reaches it). See :func:`_loopback_node`.
LOCAL_HOST = "127.0.0.1"
#: Milliseconds a local instance's raylet waits for Ray's metrics agent to start.
AGENT_START_MS = 120_000

__all__ = ["RayBuilder", "connect", "ray_builder"]


def _import_ray() -> Any:
    try:
        import ray  # optional: the msviz[ray] extra
    except ImportError as err:
        raise MissingExtraError(
            "msviz.ray_builder needs Ray, an optional extra: install it with "
            f"`pip install msviz[ray]` ({err})") from None
    return ray


# -- the Ray task ---------------------------------------------------------------------------------


def _build_task(f_build: Any, mod_json: str, target_json: str) -> tuple[str, str, bytes]:
    """Runs on a Ray worker: ``("ok", file name, artifact bytes)``, or ``("error", traceback,
    b"")`` when the candidate fails to build (the text ``LocalBuilder``'s worker sends)."""
    try:
        mod, target = compat.ir_load_json(mod_json), compat.ir_load_json(target_json)
        path = build_artifact(f_build, mod, target)
    except Exception:
        return "error", traceback.format_exc(), b""
    try:
        with open(path, "rb") as f:
            return "ok", os.path.basename(path), f.read()
    finally:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


# -- connecting -----------------------------------------------------------------------------------


def _host_port(address: str) -> tuple[str, int]:
    rest = address.split("://", 1)[-1]
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"Ray address {address!r} is not HOST:PORT (e.g. '10.0.0.5:6379'), "
                         "'ray://HOST:PORT', 'auto' or 'local'")
    if not 1 <= int(port) <= 65535:
        raise ValueError(f"Ray address {address!r}: port {int(port)} is out of range (a port is "
                         "1..65535)")
    return host.strip("[]"), int(port)


def connect(address: str | None = None, *, num_cpus: int | None = None,
            connect_timeout: float = 20.0) -> Any:
    """Connect this process to a Ray cluster (or start a local one); returns the ``ray`` module.

    Parameters
    ----------
    address : str, optional
        ``None`` or ``"local"``: the Ray instance this process already has, else a new local
        one, bound to 127.0.0.1 only. ``"HOST:PORT"`` (the head's GCS address, ``ray start
        --head`` prints it; a port 1..65535), ``"ray://HOST:PORT"`` (Ray Client) or
        ``"auto"`` (a cluster started on this machine).
    num_cpus : int, optional
        CPUs of a new local instance (default: all); not for an existing cluster.
    connect_timeout : float
        Seconds to reach a cluster (checked with a TCP connect first, then ``ray.init``). A
        new local instance starts in the calling thread, under Ray's own start-up timeouts.
    """
    if connect_timeout <= 0:
        raise ValueError(f"connect_timeout must be > 0 seconds, not {connect_timeout!r}")
    local = address is None or address == "local"
    if not local and address != "auto":
        host, port = _host_port(address)  # type: ignore[arg-type]  # checked before Ray loads
    ray = _import_ray()
    if not local and num_cpus is not None:
        raise ValueError(f"num_cpus={num_cpus!r} is for a new local Ray instance; the cluster at "
                         f"{address} has the CPUs its machines gave it")
    if not local and address != "auto":
        try:
            socket.create_connection((host, port), timeout=connect_timeout).close()
        except OSError as err:
            raise RayClusterError(
                f"no Ray cluster answers at {address} ({type(err).__name__}: {err}; waited at "
                f"most {connect_timeout:g} s): is `ray start --head` running there, and is the "
                "port reachable from this machine?") from None
    if ray.is_initialized():
        if local:
            if num_cpus is not None:
                raise ValueError(f"num_cpus={num_cpus!r}: this process is already connected to "
                                 "Ray; its instance keeps its CPUs")
            return ray
        if _same_cluster(ray, address):  # type: ignore[arg-type]
            return ray
        raise RayClusterError(
            f"this process is already connected to the Ray cluster at "
            f"{ray.get_runtime_context().gcs_address}, not {address}: call ray.shutdown() "
            "first")
    options = {"include_dashboard": False, "log_to_driver": False,
               "logging_level": logging.WARNING}
    if local:
        # In this thread, not a helper: Ray's head processes get a parent-death signal tied to
        # the thread that started them (when a helper thread ends, the instance dies with it).
        # Ray waits a fixed 30 s for its raylet to register; a loaded machine can miss that
        # once (seen on 2 cores at load 7), so a failed start is tried once more.
        # The raylet also gives up when Ray's metrics agent has not written its port within
        # agent_register_timeout_ms (it took 17 s to start on a loaded 2-core machine): allow 2
        # minutes.
        system = {"agent_register_timeout_ms": AGENT_START_MS}
        for _ in range(2):
            try:
                # on loopback only: a local instance is for this machine, never the network
                with _loopback_node():
                    ray.init(address="local", num_cpus=num_cpus, _system_config=system,
                             _node_ip_address=LOCAL_HOST, **options)
            except Exception as err:
                failure = err
                ray.shutdown()
                continue
            _warn_unless_loopback(ray)
            return ray
        raise RayClusterError(f"could not start a local Ray instance (2 tries): "
                              f"{type(failure).__name__}: {failure}")
    try:
        # a helper thread with a deadline: ray.init retries an address that does not answer
        # for a long time (connecting starts no process here)
        # (ray.init cannot be cancelled: past the deadline it is left running on its thread)
        watchdog.with_deadline(lambda: ray.init(address=address, **options), connect_timeout,
                               lambda: None, grace=0.0, name="msviz-ray-init")
    except watchdog.WatchdogTimeout:
        raise RayClusterError(
            f"could not connect to the Ray cluster at {address} within {connect_timeout:g} s "
            "(something answers at that address, but ray.init did not finish: is it a Ray "
            "head's GCS port, of the same Ray version? A cluster with token authentication "
            "needs RAY_AUTH_MODE=token and its token on this machine too); "
            "ray.init goes on in the background, so restart this Python process before trying "
            "again") from None
    except Exception as err:
        raise RayClusterError(f"could not connect to the Ray cluster at {address}: "
                              f"{type(err).__name__}: {err}") from None
    return ray


@contextlib.contextmanager
def _loopback_node() -> Iterator[None]:
    """While a local instance starts, Ray's "clusters off" setting: the node address stays
    ``127.0.0.1``, so every Ray process listens on loopback only.

    ``ray.init(_node_ip_address="127.0.0.1")`` alone does not do it: Ray turns a loopback node
    address into this machine's network address (``services.resolve_ip_for_localhost``), and
    then its servers listen on all interfaces (``*:port``). Only with Ray clusters off
    (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``) does it keep loopback, and Ray reads that variable
    once, when ``ray`` is imported (``ray._private.ray_constants.ENABLE_RAY_CLUSTER``): this
    sets the value it gives, for the start only (the node's processes get the address from
    their command line; a later ``ray.init`` of a cluster is as Ray made it). A Ray without
    that constant starts as it would; :func:`_warn_unless_loopback` then says so.
    """
    try:
        constants = importlib.import_module("ray._private.ray_constants")
    except ImportError:
        constants = None
    if not hasattr(constants, "ENABLE_RAY_CLUSTER"):
        yield
        return
    before = constants.ENABLE_RAY_CLUSTER
    constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        constants.ENABLE_RAY_CLUSTER = before


def _warn_unless_loopback(ray: Any) -> None:
    """Warn when the local instance just started has a node address beyond loopback: its
    processes then listen on all interfaces (a Ray version msviz does not know)."""
    node = ray.util.get_node_ip_address()
    try:
        address = ipaddress.ip_address(node)
        loopback = (getattr(address, "ipv4_mapped", None) or address).is_loopback
    except ValueError:
        loopback = node == "localhost"
    if not loopback:
        warnings.warn(
            f"the local Ray instance msviz started has node address {node}, not loopback: "
            f"msviz could not keep Ray {getattr(ray, '__version__', '?')} on loopback, so its "
            f"processes (the GCS at {ray.get_runtime_context().gcs_address}, the raylet, the "
            "workers) may listen on all interfaces, and whoever reaches their ports can run "
            "code on this machine; keep it behind a firewall, or end the instance with "
            "ray.shutdown()", MsvizWarning, stacklevel=4)


def _same_cluster(ray: Any, address: str) -> bool:
    """True when ``address`` names the GCS this process is connected to (loopback and the
    node's own IP are the same machine)."""
    if address == "auto" or "://" in address:
        return False
    try:
        gcs_host, gcs_port = _host_port(ray.get_runtime_context().gcs_address)
        host, port = _host_port(address)
        names = {socket.gethostbyname(host)}
    except (OSError, ValueError):
        return False
    if names & {"127.0.0.1", "0.0.0.0"}:
        names.add(ray.util.get_node_ip_address())
    return port == gcs_port and socket.gethostbyname(gcs_host) in names


# -- the builder ----------------------------------------------------------------------------------


class _RayBuilder(compat.ms.builder.PyBuilder):
    """A MetaSchedule builder whose candidates are Ray tasks (see the module's doc); made by
    :func:`ray_builder`.

    Parameters
    ----------
    timeout_sec : float
        Seconds per candidate, from the moment its task is submitted (at most as many tasks
        as the cluster has CPUs are submitted at once, so a task starts when it is submitted,
        unless other jobs hold the cluster's CPUs).
    f_build : callable, optional
        ``(mod, target, params) -> runtime.Module``, run on the worker (must be importable
        there, or defined in ``__main__``/a notebook so that Ray sends it by value); default
        :func:`msviz.compat.fast_build`.
    max_retries : int
        Ray's retries of a task whose worker died (0: the candidate comes back as ``infra``
        and the engine offers it again later).
    poll_sec : float
        How often the driver looks for finished, timed-out or cancelled tasks.
    """

    def __init__(self, timeout_sec: float = 30.0, f_build: Any = None, max_retries: int = 0,
                 poll_sec: float = 0.2) -> None:
        super().__init__()
        self.timeout_sec = float(timeout_sec)
        self.f_build = f_build if f_build is not None else compat.fast_build
        self.max_retries = int(max_retries)
        self.poll_sec = float(poll_sec)
        self._ray = _import_ray()
        self._task = self._ray.remote(num_cpus=1, max_retries=self.max_retries)(_build_task)
        self._abort = threading.Event()
        #: Batches built, and tasks cancelled past their timeout, so far.
        self.batches = 0
        self.timeouts = 0

    @property
    def max_workers(self) -> int:
        """Candidates built at once: the cluster's CPUs now (machines may join or leave; 1
        when this process is not connected)."""
        if not self._ray.is_initialized():
            return 1
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def build(self, build_inputs: list) -> list:
        ray = self._ray
        if not ray.is_initialized():  # else .remote() would start a local instance of its own
            raise RayClusterError("this process is no longer connected to Ray (ray.shutdown() "
                                  "was called): make a new msviz.ray_builder")
        self._abort.clear()
        self.batches += 1
        results: list[Any] = [None] * len(build_inputs)
        queue = list(range(len(build_inputs)))[::-1]
        running: dict[Any, tuple[int, float]] = {}
        window = self.max_workers
        try:
            while queue or running:
                while queue and len(running) < window:
                    i = queue.pop()
                    inp = build_inputs[i]
                    ref = self._task.remote(self.f_build, compat.ir_save_json(inp.mod),
                                            compat.ir_save_json(inp.target))
                    running[ref] = (i, time.monotonic())
                ready, _ = ray.wait(list(running), num_returns=1, timeout=self.poll_sec)
                for ref in ready:
                    i, _ = running.pop(ref)
                    results[i] = self._result(ref)
                if self._abort.is_set():  # reset() by the measurer's watchdog
                    raise RuntimeError("the batch was abandoned (RayBuilder.reset)")
                now = time.monotonic()
                for ref, (i, start) in list(running.items()):
                    if now - start > self.timeout_sec:
                        ray.cancel(ref, force=True)  # kills the worker process
                        del running[ref]
                        self.timeouts += 1
                        results[i] = compat.ms.builder.BuilderResult(
                            None, f"LocalBuilder: Timeout, killed after {self.timeout_sec:g} "
                                  "seconds")
        finally:
            for ref in running:
                ray.cancel(ref, force=True)
        return results

    def _result(self, ref: Any) -> Any:
        BuilderResult = compat.ms.builder.BuilderResult
        try:
            status, text, data = self._ray.get(ref)
        except self._ray.exceptions.TaskCancelledError:
            return BuilderResult(
                None, f"LocalBuilder: Timeout, killed after {self.timeout_sec:g} seconds")
        except self._ray.exceptions.RayTaskError as err:  # _build_task catches build errors
            return BuilderResult(None, _infra_text(
                err, "the build task could not run on its worker (every machine of the cluster "
                     "needs the same TVM and msviz as this one)"))
        except self._ray.exceptions.RayError as err:  # a dead worker, a lost node, ...
            return BuilderResult(None, _infra_text(err, "the worker building it was lost"))
        if status == "error":
            return BuilderResult(None, f"LocalBuilder: An exception occurred\n{text}")
        path = os.path.join(tempfile.mkdtemp(prefix="msviz-ray-build-"), text)
        with open(path, "wb") as f:
            f.write(data)
        return BuilderResult(path, None)

    def reset(self) -> None:
        """Abandon the batch being built (its tasks are cancelled); called by the measurer's
        watchdog. The Ray connection stays (``ray.shutdown()`` ends it)."""
        self._abort.set()


RayBuilder = compat.derived_object(_RayBuilder)


def _infra_text(err: Exception, what: str) -> str:
    detail = re.sub(r"\x1b\[[0-9;]*m", "", str(err)).strip()  # Ray colours its task names
    return f"RayBuilder: infrastructure error ({type(err).__name__}): {what}\n{detail}"


def ray_builder(address: str | None = None, *, num_cpus: int | None = None,
                timeout: float = 30.0, connect_timeout: float = 20.0, f_build: Any = None,
                max_retries: int = 0) -> Any:
    """A MetaSchedule builder that builds each candidate as a Ray task on a Ray cluster.

    ``msviz.Session(..., builder=msviz.ray_builder("10.0.0.5:6379"))``; on the command line
    ``msviz tune ... --ray 10.0.0.5:6379``. Connects (or starts a local instance) now, so a
    cluster that does not answer fails here, within ``connect_timeout``.

    Parameters
    ----------
    address : str, optional
        ``None`` or ``"local"``: this process's Ray instance, else a new local one (on
        127.0.0.1 only: it serves no other machine).
        ``"HOST:PORT"``: the head's GCS address (``ray start --head --port 6379``);
        ``"ray://HOST:PORT"``: Ray Client; ``"auto"``: a cluster started on this machine.
    num_cpus : int, optional
        CPUs of a new local instance (default: all of this machine's).
    timeout : float
        Seconds per candidate (as the local builder's ``builder_timeout``).
    connect_timeout : float
        Seconds to reach the cluster before :class:`~msviz.errors.RayClusterError`.
    f_build : callable, optional
        Build function run on the workers, ``(mod, target, params) -> runtime.Module``, as
        ``LocalBuilder``'s (default :func:`msviz.compat.fast_build`).
    max_retries : int
        Ray's retries of a candidate whose worker died (default 0: it comes back as an
        ``infra`` failure, and the engine offers it again later).

    Returns
    -------
    Builder
        A :class:`RayBuilder` (a MetaSchedule ``PyBuilder``).

    Raises
    ------
    MissingExtraError
        Ray is not installed (``pip install msviz[ray]``).
    RayClusterError
        The cluster could not be reached or started in time.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds, not {timeout!r}")
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, not {max_retries!r}")
    if f_build is not None and not callable(f_build):
        raise TypeError(f"f_build must be a function (mod, target, params) -> runtime.Module, "
                        f"not {type(f_build).__name__}")
    connect(address, num_cpus=num_cpus, connect_timeout=connect_timeout)
    return RayBuilder(timeout_sec=timeout, f_build=f_build, max_retries=max_retries)
