"""Measuring through TVM's RPC tracker: the runner spec, tracker queries, waiting for devices,
and collecting a batch's remote runs.

``msviz.rpc("127.0.0.1:9190", key="cpu-fleet")`` names a tracker and a device key; a Session
given it (or MetaSchedule's own ``RPCRunner``) measures through MetaSchedule's ``RPCRunner``, with
two worker functions of msviz's own that also record which server measured each candidate (the
tracker's match, ``"host:port"``): those run in the runner's workers and live in
:mod:`msviz.engine.measure.rpc_session`. Before tuning and whenever the fleet is empty, the
session waits for devices (:func:`wait_for_devices`), visibly, stoppably, and for at most the
spec's ``wait_timeout``.
"""
from __future__ import annotations

import ipaddress
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from msviz import compat
from msviz.engine.measure import tracker
from msviz.engine.measure.results import MeasureResult, is_infra_error
from msviz.engine.measure.rpc_session import (
    DEVICE_FILE,
    cleanup_files,
    create_session,
    is_device_lost,
    read_device,
    reused_session,
    upload_module,
)
from msviz.errors import MsvizError, MsvizWarning

__all__ = [
    "DEVICE_FILE",
    "NoDevicesError",
    "RPCSpec",
    "TrackerError",
    "TrackerStatus",
    "fleet_of",
    "from_env",
    "is_exposed",
    "parse_rpc",
    "rpc",
    "tracker_status",
    "wait_for_devices",
]


class TrackerError(MsvizError, ConnectionError):
    """The RPC tracker could not be reached or did not answer."""


class NoDevicesError(MsvizError, RuntimeError):
    """No RPC server registered under the key before the wait timeout."""


def is_exposed(host: str) -> bool:
    """True when ``host`` is neither loopback nor a private address (a name that does not
    resolve counts as exposed)."""
    import socket

    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        try:
            addr = ipaddress.ip_address(socket.gethostbyname(host))
        except OSError:
            return True
    return not (addr.is_loopback or addr.is_private)


@dataclass(frozen=True)
class RPCSpec:
    """Where to measure: a tracker, a device key, and MetaSchedule's RPC options.

    Made by :func:`rpc`; pass it as ``Session(..., runner=spec)``.
    """

    host: str
    port: int
    key: str
    session_timeout: float | None = None
    session_priority: int = 1
    max_workers: int | None = None
    wait_timeout: float = 600.0
    poll_interval: float = 1.0
    reuse_sessions: bool = True

    @property
    def tracker(self) -> str:
        return f"{self.host}:{self.port}"

    def config(self, session_timeout: float) -> Any:
        """MetaSchedule's ``RPCConfig`` (``session_timeout`` when the spec has none)."""
        timeout = self.session_timeout if self.session_timeout is not None else session_timeout
        return tracker.rpc_config(self.host, self.port, self.key, session_timeout=timeout,
                                 priority=self.session_priority)

    def make_runner(self, evaluator_config: Any, *, session_timeout: float,
                    servers: int = 1) -> Any:
        """MetaSchedule's ``RPCRunner`` with msviz's session functions (device recording).

        ``max_workers`` (parallel RPC sessions) defaults to the servers holding the key now.
        """
        workers = self.max_workers or max(1, servers)
        reuse = self.reuse_sessions
        return compat.ms.runner.RPCRunner(
            rpc_config=self.config(session_timeout), evaluator_config=evaluator_config,
            f_create_session=reused_session if reuse else create_session,
            f_upload_module=upload_module, f_cleanup=cleanup_files if reuse else None,
            max_workers=workers)


def parse_rpc(text: str) -> RPCSpec:
    """``"HOST:PORT:KEY"`` (the CLI's ``--rpc``) as an :class:`RPCSpec`."""
    parts = str(text).rsplit(":", 2)
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"--rpc wants HOST:PORT:KEY (e.g. 127.0.0.1:9190:cpu-fleet), "
                         f"got {text!r}")
    return rpc(f"{parts[0]}:{parts[1]}", key=parts[2])


def _split_address(address: str) -> tuple[str, int]:
    if not isinstance(address, str) or address.count(":") != 1:
        raise ValueError(f"tracker address must be 'HOST:PORT', got {address!r}")
    host, port_text = address.split(":")
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not host or not 0 < port < 65536:
        raise ValueError(f"tracker address must be 'HOST:PORT' with a port in 1..65535, "
                         f"got {address!r}")
    return host, port


def rpc(address: str, *, key: str, session_timeout: float | None = None,
        session_priority: int = 1, max_workers: int | None = None,
        wait_timeout: float = 600.0, reuse_sessions: bool = True) -> RPCSpec:
    """A runner that measures on the RPC servers registered at a tracker under ``key``.

    Parameters
    ----------
    address : str
        The tracker, ``"HOST:PORT"``. msviz warns when it is neither loopback nor a private
        address: TVM RPC has no authentication.
    key : str
        The device key the servers registered with (``rpc_server --key``).
    session_timeout : float, optional
        Seconds one RPC session (upload, run, time) may last (``RPCConfig.session_timeout_sec``);
        the session's ``runner_timeout`` when None.
    session_priority : int
        The requests' priority in the tracker's queue (``RPCConfig.session_priority``).
    max_workers : int, optional
        RPC sessions in parallel (``RPCRunner(max_workers=)``); default: the servers holding
        the key when measuring starts.
    wait_timeout : float
        Seconds the session waits for a server under ``key`` (before tuning, or when the whole
        fleet is gone) before it gives up with :class:`NoDevicesError`.
    reuse_sessions : bool
        Keep each runner worker's RPC session for the next candidates (for at most half the
        session timeout) instead of asking the tracker for a new one per candidate, as
        MetaSchedule's own session function does; a new session costs about 100 ms on
        loopback. The worker then holds its server between batches: pass False on a fleet
        shared with other users.

    Returns
    -------
    spec : RPCSpec
    """
    host, port = _split_address(address)
    if not isinstance(key, str) or not key or ":" in key:
        raise ValueError(f"key must be a non-empty string without ':', got {key!r}")
    for name, value in (("session_timeout", session_timeout), ("wait_timeout", wait_timeout)):
        if value is not None and not (isinstance(value, (int, float)) and value > 0):
            raise ValueError(f"{name} must be a number of seconds > 0, got {value!r}")
    if max_workers is not None and (isinstance(max_workers, bool) or
                                    not isinstance(max_workers, int) or max_workers < 1):
        raise ValueError(f"max_workers must be an int >= 1, got {max_workers!r}")
    if is_exposed(host):
        warnings.warn(exposure_warning(host), MsvizWarning, stacklevel=2)
    return RPCSpec(host, port, key, None if session_timeout is None else float(session_timeout),
                   int(session_priority), max_workers, float(wait_timeout),
                   reuse_sessions=bool(reuse_sessions))


def from_env() -> RPCSpec:
    """The tracker named by ``TVM_TRACKER_HOST``, ``TVM_TRACKER_PORT`` and ``TVM_TRACKER_KEY``
    (what ``runner="rpc"`` means, as for MetaSchedule's ``RPCConfig``)."""
    names = ("TVM_TRACKER_HOST", "TVM_TRACKER_PORT", "TVM_TRACKER_KEY")
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        raise ValueError(f"runner='rpc' reads the tracker from {', '.join(names)}; "
                         f"{', '.join(missing)} not set: set them, or pass "
                         "runner=msviz.rpc('HOST:PORT', key=...)")
    host, port, key = (os.environ[n] for n in names)
    return rpc(f"{host}:{port}", key=key)


def exposure_warning(host: str) -> str:
    return (f"the RPC tracker {host} is neither loopback nor a private address: TVM RPC has no "
            "authentication, anyone who can reach a server's port can run code on it")


def fleet_of(runner: Any) -> RPCSpec | None:
    """The tracker and key a runner measures on (an :class:`RPCSpec`, ``"rpc"`` (see
    :func:`from_env`), or MetaSchedule's ``RPCRunner``, whose ``rpc_config`` is read); None for
    any other runner."""
    if isinstance(runner, RPCSpec):
        return runner
    if isinstance(runner, str) and runner == "rpc":
        return from_env()
    if tracker.is_rpc_runner(runner):
        cfg = runner.rpc_config
        return RPCSpec(str(cfg.tracker_host), int(cfg.tracker_port), str(cfg.tracker_key),
                       float(cfg.session_timeout_sec), int(cfg.session_priority))
    return None


# -- tracker queries ----------------------------------------------------------------------------

class TrackerStatus(NamedTuple):
    """What the tracker says about one key (and all its servers)."""

    tracker: str
    key: str
    total: int  # servers registered under the key
    free: int  # of them, not in a session now
    pending: int  # requests for the key waiting in the queue
    servers: list[dict]  # every server: {"address": "ip:port", "key": KEY}
    queue: dict[str, dict]  # per key: {"total", "free", "pending"}


def tracker_status(address: str, key: str, *, timeout: float = 5.0) -> TrackerStatus:
    """Ask the tracker at ``address`` (``"HOST:PORT"``) for its servers and queue."""
    host, port = _split_address(address)
    try:
        summary = tracker.tracker_summary(host, port, timeout=timeout)
    except (OSError, RuntimeError, ValueError) as err:
        raise TrackerError(f"the RPC tracker at {address} does not answer "
                           f"({type(err).__name__}: {err})") from None
    servers = []
    totals: dict[str, int] = {}
    for item in summary.get("server_info", []):
        server_key = str(item.get("key", "")).split(":", 1)[-1]
        addr = item.get("addr") or [None, None]
        servers.append({"address": f"{addr[0]}:{addr[1]}", "key": server_key})
        totals[server_key] = totals.get(server_key, 0) + 1
    queue = {}
    for name in sorted(set(totals) | set(summary.get("queue_info", {}))):
        info = summary.get("queue_info", {}).get(name, {})
        queue[name] = {"total": totals.get(name, 0), "free": int(info.get("free", 0)),
                       "pending": int(info.get("pending", 0))}
    mine = queue.get(key, {"total": 0, "free": 0, "pending": 0})
    return TrackerStatus(address, key, mine["total"], mine["free"], mine["pending"],
                         sorted(servers, key=lambda s: (s["key"], s["address"])), queue)


def servers_under(spec: RPCSpec, *, default: int) -> int:
    """Servers the tracker holds under the spec's key, or ``default`` when it does not answer."""
    try:
        return tracker_status(spec.tracker, spec.key).total
    except TrackerError:
        return default


def status_event(status: TrackerStatus | None, spec: RPCSpec, error: str | None = None) -> dict:
    """The data of a ``devices`` / ``waiting_for_devices`` event."""
    if status is None:
        return {"tracker": spec.tracker, "key": spec.key, "free": 0, "total": 0, "pending": 0,
                "servers": [], "queue": {}, "error": error}
    return {"tracker": status.tracker, "key": status.key, "free": status.free,
            "total": status.total, "pending": status.pending, "servers": status.servers,
            "queue": status.queue, "error": error}


def wait_for_devices(spec: RPCSpec, *, emit: Callable[..., None], stop: Callable[[], bool],
                     first: TrackerStatus | None = None, error: str | None = None,
                     clock: Callable[[], float] = time.monotonic) -> TrackerStatus:
    """Block until a server holds ``spec.key``; emit ``waiting_for_devices`` when it starts
    waiting and whenever what the tracker says changes.

    ``stop()`` is checked every ``spec.poll_interval`` s: when it returns True, waiting ends by
    returning the last status (the caller raises). After ``spec.wait_timeout`` s,
    :class:`NoDevicesError` names the tracker, the key and the last answer.
    """
    start = clock()
    status, last_seen = first, None
    while True:
        if status is not None and status.total > 0:
            return status
        seen = (None if status is None else (status.total, status.free, status.pending), error)
        if seen != last_seen:
            emit(**status_event(status, spec, error), waited=round(clock() - start, 1),
                 wait_timeout=spec.wait_timeout)
            last_seen = seen
        if stop():
            return status if status is not None else TrackerStatus(
                spec.tracker, spec.key, 0, 0, 0, [], {})
        if clock() - start >= spec.wait_timeout:
            why = error or "the tracker lists no server under that key"
            raise NoDevicesError(
                f"no RPC server registered under key {spec.key!r} at tracker {spec.tracker} "
                f"within {spec.wait_timeout:g} s ({why}); start one with: python -m "
                f"tvm.exec.rpc_server --host 127.0.0.1 --tracker {spec.tracker} --key {spec.key}")
        time.sleep(min(spec.poll_interval, max(0.05, spec.wait_timeout - (clock() - start))))
        try:
            status, error = tracker_status(spec.tracker, spec.key), None
        except TrackerError as err:
            status, error = None, str(err)


# -- collecting a batch's remote runs -----------------------------------------------------------

def _done(fut: Any) -> bool:
    inner = getattr(fut, "future", None)
    return bool(inner.done() if inner is not None else fut.done())


def collect(futures: list, artifacts: list[str | None], spec: RPCSpec, *,
            runner_timeout: float) -> tuple[list[MeasureResult], str | None]:
    """Wait for a batch's RPC futures while watching the tracker; classify each outcome.

    A candidate whose server died is ``device_lost`` (not the candidate's fault: it is offered
    again later); when no server holds the key any more, the candidates still queued are given
    up as ``device_lost`` instead of waiting in the tracker's queue forever. Returns the results
    and, in that case, why the fleet is gone (the caller replaces the runner's pool, whose
    workers the queued requests still hold), else None.
    """
    pending = set(range(len(futures)))
    empty_since: float | None = None
    next_check = time.monotonic() + spec.poll_interval
    gone: str | None = None
    at_start = servers_under(spec, default=0)
    while pending:
        pending -= {k for k in pending if _done(futures[k])}
        if not pending:
            break
        now = time.monotonic()
        if now >= next_check:
            next_check = now + spec.poll_interval
            try:
                total, why = tracker_status(spec.tracker, spec.key).total, \
                    f"no RPC server holds key {spec.key!r} any more"
            except TrackerError as err:
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
        device = read_device(artifacts[k])
        if k in pending:
            results.append(MeasureResult(None, f"msviz: {gone}; the candidate was given up "
                                         "while it waited for a server", "device_lost", device))
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
            results.append(MeasureResult(tuple(float(s) for s in inner.result()), None, None,
                                         device))
            continue
        if isinstance(err, TimeoutError):
            limit = spec.session_timeout or runner_timeout
            results.append(MeasureResult(None, f"RPCRunner: Timeout, killed after {limit} "
                                         "seconds", "run", device))
            continue
        text = f"RPCRunner: An exception occurred\n{type(err).__name__}: {err}"
        lost = is_device_lost(err)
        if not lost:  # did the server it ran on (or, unknown, any server) leave the tracker?
            if servers is None:
                # the tracker drops a dead server when its connection closes, about when the
                # client's does: give it a moment before asking
                time.sleep(0.5)
                try:
                    servers = {s["address"] for s in tracker_status(spec.tracker,
                                                                    spec.key).servers}
                except TrackerError:
                    servers = set()
            lost = device not in servers if device is not None else len(servers) < at_start
        results.append(MeasureResult(None, text, "device_lost" if lost else "run", device))
    return results, gone
