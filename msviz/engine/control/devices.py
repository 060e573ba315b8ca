"""Waiting for RPC devices: what the tracker holds (a ``devices`` event), and with no server
under the key, the state ``"waiting"`` (``waiting_for_devices`` events), pausable and stoppable,
until one registers or the runner's ``wait_timeout`` passes.

The same concept drawn: :mod:`msviz.views.devices`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msviz.engine.control.state import Control
from msviz.engine.measure import rpc

__all__ = ["await_devices"]


def await_devices(control: Control, spec: rpc.RPCSpec | None, *, task: str,
                  emit: Callable[..., Any], first: bool = False) -> None:
    """Return once a server holds the key (at once when not measuring over RPC).

    Parameters
    ----------
    control : Control
        The session's control: its state becomes ``"waiting"`` while no server holds the key;
        a pause or stop asked for meanwhile is honoured at a ``"waiting"`` checkpoint.
    spec : RPCSpec, optional
        The tracker and key (None: no RPC).
    task : str
        The task of the events.
    emit : callable
        The session's event log.
    first : bool
        The session's first look (warns once about a tracker on a public address).
    """
    if spec is None:
        return
    if first and rpc.is_exposed(spec.host):
        emit("warning", task, message=rpc.exposure_warning(spec.host))
    while True:
        status, error = None, None
        try:
            status = rpc.tracker_status(spec.tracker, spec.key)
        except rpc.TrackerError as err:
            error = str(err)
        emit("devices", task, **rpc.status_event(status, spec, error))
        if status is not None and status.total > 0:
            return
        control.enter_waiting()
        try:
            rpc.wait_for_devices(
                spec, first=status, error=error,
                emit=lambda **data: emit("waiting_for_devices", task, **data),
                stop=control.interrupted)
        finally:
            control.leave_waiting()
        if not control.interrupted():
            continue  # a server registered: emit what the tracker holds now
        control.checkpoint("waiting")  # stops, or pauses until resumed; then look again
