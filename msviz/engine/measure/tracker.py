"""TVM's RPC tracker on the wire: its summary, a session request that says which server
answered, MetaSchedule's ``RPCConfig``, and a runner's Python futures.

``tvm.rpc.connect_tracker`` retries a refused connection for 60 s and ``TrackerSession.request``
does not tell which server it got; msviz asks the tracker itself, with TVM's own protocol
constants (``tvm.rpc.base``), so that a tracker that is gone fails at once.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from msviz import compat

__all__ = [
    "RPC_ERRORS",
    "RPCSessionTimeoutError",
    "is_rpc_runner",
    "rpc_config",
    "rpc_request",
    "runner_futures",
    "tracker_summary",
]

#: Exceptions of TVM's RPC layer: the connection to a server or its session failed.
RPC_ERRORS: tuple[type[BaseException], ...] = (compat.RPC_ERROR,)
#: TVM's error for an RPC session that ran past its ``session_timeout``.
RPCSessionTimeoutError = compat.RPCSessionTimeoutError


def rpc_config(host: str, port: int, key: str, *, session_timeout: float,
               priority: int = 1) -> Any:
    """MetaSchedule's ``RPCConfig`` for a tracker."""
    return compat.ms.runner.RPCConfig(tracker_host=host, tracker_port=int(port), tracker_key=key,
                               session_priority=priority, session_timeout_sec=session_timeout)


def is_rpc_runner(runner: Any) -> bool:
    """Whether ``runner`` is MetaSchedule's ``RPCRunner``."""
    return isinstance(runner, compat.ms.runner.RPCRunner)


def tracker_summary(host: str, port: int, *, timeout: float = 5.0) -> dict:
    """The tracker's ``summary()``: ``{"server_info": [{"addr": [ip, port], "key":
    "server:KEY"}, ...], "queue_info": {KEY: {"free": n, "pending": n}}}``.

    ``tvm.rpc.connect_tracker`` retries a refused connection for 60 s; a plain connect is tried
    first so that a tracker that is gone fails at once (``OSError``).
    """
    with socket.create_connection((host, int(port)), timeout=timeout):
        pass
    tracker = compat.connect_tracker(host, int(port))
    try:
        compat.set_tracker_timeout(tracker, timeout)
        return dict(tracker.summary())
    finally:
        tracker.close()


def rpc_request(config: Any, *, timeout: float = 10.0, max_retry: int = 5) -> tuple[Any, str]:
    """Ask the tracker for a server under ``config.tracker_key`` (waiting in its queue) and open
    an RPC session on it, as ``TrackerSession.request`` does; also return the server's
    ``"host:port"``, which ``request`` does not tell. A tracker that refuses or is gone fails at
    once instead of retrying for 60 s."""
    base = compat.rpc_base  # TVM's RPC protocol constants
    last: BaseException | None = None
    for _ in range(max_retry):
        sock = socket.create_connection((config.tracker_host, int(config.tracker_port)),
                                        timeout=timeout)
        try:
            sock.settimeout(None)  # the request waits in the tracker's queue for a free server
            sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
            magic = struct.unpack("<i", base.recvall(sock, 4))[0]
            if magic != base.RPC_TRACKER_MAGIC:
                raise RuntimeError(f"{config.tracker_host}:{config.tracker_port} is not an RPC "
                                   "tracker")
            base.sendjson(sock, [base.TrackerCode.REQUEST, config.tracker_key, "",
                                 config.session_priority])
            value = base.recvjson(sock)
        finally:
            sock.close()
        if value[0] != base.TrackerCode.SUCCESS:
            last = RuntimeError(f"the tracker answered {value!r}")
            continue
        url, port, matchkey = value[1]
        try:
            session = compat.rpc_connect(url, port, matchkey, config.session_timeout_sec)
        except (OSError, RuntimeError) as err:  # the server went away between match and connect
            last = err
            continue
        return session, f"{url}:{port}"
    raise RuntimeError(f"no RPC session under key {config.tracker_key!r} after {max_retry} "
                       f"tries: {last}")


def runner_futures(runner: Any, inputs: list) -> list:
    """``runner.run(inputs)``; for a runner written in Python (``RPCRunner``, any ``PyRunner``)
    its own Python futures, not the FFI's ``RunnerFuture`` copies, so that an RPC future's
    underlying ``concurrent.futures.Future`` (``.future``), and the type of the exception a
    failed run raised, stay reachable."""
    inst = compat.python_instance(runner)
    return list((inst if inst is not None else runner).run(inputs))
