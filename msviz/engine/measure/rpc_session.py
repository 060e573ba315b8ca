"""The functions MetaSchedule's ``RPCRunner`` calls in its popen workers for an RPC session
(``f_create_session``, ``f_upload_module``, ``f_cleanup``), which also record the server that
measured each candidate, and reading that record back.

The session functions are the stock ones plus one thing: the tracker's match (the server,
``"host:port"``) is written next to the build artifact (:data:`DEVICE_FILE`); with
``reuse_sessions`` a worker keeps its session for the next candidates. The spec that installs
them, the tracker queries and the collecting of a batch's remote runs are in
:mod:`msviz.engine.measure.rpc`.
"""

from __future__ import annotations

import os
import time
from typing import Any

from msviz.engine.measure import tracker

__all__ = [
    "DEVICE_FILE",
    "cleanup_files",
    "create_session",
    "is_device_lost",
    "read_device",
    "reused_session",
    "upload_module",
]

#: Written next to a build artifact by the runner's worker: the server that measured it.
DEVICE_FILE = "msviz_device.txt"

_WORKER: dict[str, str] = {}
_SESSION: dict[str, Any] = {}  # the kept session of this worker process (reuse_sessions)


def create_session(rpc_config: Any) -> Any:
    """``f_create_session``: the stock request, remembering which server the tracker matched."""
    session, where = tracker.rpc_request(rpc_config)
    _WORKER["device"] = where
    return session


def reused_session(rpc_config: Any) -> Any:
    """``f_create_session`` keeping this worker's session while it is younger than half the
    session timeout (the server ends a session at its timeout, counted from its start)."""
    held = _SESSION.get("session")
    if held is not None and time.monotonic() - _SESSION["since"] < \
            rpc_config.session_timeout_sec / 2 and _SESSION["config"] == rpc_config:
        _WORKER["device"] = _SESSION["device"]
        return held
    _SESSION.clear()  # drops the old session: the server becomes free again
    session = create_session(rpc_config)
    _SESSION.update(session=session, since=time.monotonic(), config=rpc_config,
                    device=_WORKER["device"])
    return session


def cleanup_files(session: Any, remote_path: str | None) -> None:
    """``f_cleanup`` for a kept session: delete this candidate's files only (the stock one
    also deletes the session's directory); a session that failed is not kept."""
    if session is None:
        return
    try:
        if remote_path is not None:
            session.remove(remote_path)
            session.remove(remote_path + ".so")
    except Exception:
        _SESSION.clear()
        raise


def upload_module(session: Any, local_path: str, remote_path: str) -> Any:
    """``f_upload_module``: the stock upload, after writing the server's address next to the
    artifact (the measuring service reads it before deleting the artifact)."""
    try:
        with open(os.path.join(os.path.dirname(local_path), DEVICE_FILE), "w") as f:
            f.write(_WORKER.get("device", ""))
    except OSError:
        pass
    session.upload(local_path, remote_path)
    return session.load_module(remote_path)


def read_device(artifact: str | None) -> str | None:
    """The server that measured ``artifact`` (None when unknown)."""
    if not artifact:
        return None
    try:
        with open(os.path.join(os.path.dirname(artifact), DEVICE_FILE)) as f:
            return f.read().strip() or None
    except OSError:
        return None


def is_device_lost(error: BaseException) -> bool:
    """Whether an exception of a remote run says the device or the connection to it failed
    (TVM's RPC errors, a socket that broke), not the candidate."""
    if isinstance(error, tracker.RPCSessionTimeoutError):
        return False  # the run itself took too long: a run timeout
    return isinstance(error, (*tracker.RPC_ERRORS, ConnectionError, EOFError, OSError))
