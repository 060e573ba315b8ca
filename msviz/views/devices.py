"""The devices view: the RPC tracker's servers and queue, and what each device measured.

Pure functions: :func:`devices_info` takes what the tracker said (a ``devices`` /
``waiting_for_devices`` event's data, or :func:`msviz.engine.measure.rpc.status_event` of a
query) and the trials table (its ``device`` and ``timestamp`` columns), and returns a small info;
:func:`devices_figure` draws candidates per device and per minute; :func:`devices_text` is the
CLI's rendering.

The same concept in the engine: :mod:`msviz.engine.control.devices` waits for them.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import pandas as pd

from msviz.errors import MsvizWarning
from msviz.views._plotly_imports import go
from msviz.views.common import note_figure

__all__ = ["DevicesInfo", "devices_figure", "devices_info", "devices_text", "latest_status"]


class DevicesInfo(NamedTuple):
    """What the devices view shows.

    Attributes
    ----------
    tracker, key : str | None
        The tracker (``host:port``) and the key the session measures under.
    waiting : bool
        The session is waiting for a server under ``key``.
    error : str | None
        Why the tracker could not be asked, if it could not.
    servers : tuple of dict
        ``{"address", "key", "trials"}`` per server the tracker lists (``trials``: candidates
        of this session it measured).
    queue : tuple of dict
        ``{"key", "total", "free", "pending"}`` per key.
    per_device : tuple of dict
        ``{"device", "trials", "ok", "device_lost", "failed", "registered"}`` per device that
        measured a trial of this session (``registered``: the tracker still lists it).
    per_minute : tuple of dict
        ``{"minute", "device", "trials"}``: trials per device in each minute since the first.
    unknown : int
        Trials with no device (measured locally, or before msviz recorded devices).
    """

    tracker: str | None
    key: str | None
    waiting: bool
    error: str | None
    servers: tuple[dict, ...]
    queue: tuple[dict, ...]
    per_device: tuple[dict, ...]
    per_minute: tuple[dict, ...]
    unknown: int


def latest_status(events: list) -> tuple[dict | None, bool]:
    """The data of the newest ``devices`` / ``waiting_for_devices`` event and whether the
    session is waiting (the newest one is ``waiting_for_devices``)."""
    for event in reversed(events):
        if event.kind in ("devices", "waiting_for_devices"):
            return dict(event.data), event.kind == "waiting_for_devices"
    return None, False


def devices_info(status: dict | None, trials: pd.DataFrame | None = None, *,
                 waiting: bool = False) -> DevicesInfo:
    """The devices view's info (see :class:`DevicesInfo`).

    Parameters
    ----------
    status : dict, optional
        ``tracker``, ``key``, ``servers`` (``{"address", "key"}``), ``queue`` (key ->
        ``{"total", "free", "pending"}``) and ``error``, as a ``devices`` event carries them.
    trials : DataFrame, optional
        The trials table (``device``, ``status`` and ``timestamp`` columns).
    waiting : bool
        Whether the session waits for devices.
    """
    status = status or {}
    if not status and (trials is None or not len(trials)):
        warnings.warn("devices view: no tracker status and no trials yet", MsvizWarning,
                      stacklevel=2)
    per_device: list[dict] = []
    per_minute: list[dict] = []
    unknown = 0
    counts: dict[str, int] = {}
    listed = {s["address"] for s in status.get("servers", [])}
    if trials is not None and len(trials) and "device" in trials:
        device = trials["device"]
        known = trials[device.notna()]
        unknown = int(device.isna().sum())
        for name, group in known.groupby("device", sort=True):
            st = group["status"]
            counts[str(name)] = len(group)
            per_device.append({
                "device": str(name), "trials": len(group), "ok": int((st == "ok").sum()),
                "device_lost": int((st == "device_lost").sum()),
                "failed": int(((st != "ok") & (st != "device_lost")).sum()),
                "registered": str(name) in listed})
        stamps = known["timestamp"].dropna() if "timestamp" in known else pd.Series([])
        if len(stamps):
            start = stamps.min()
            minute = ((known["timestamp"] - start).dt.total_seconds() // 60)
            table = known.assign(minute=minute).dropna(subset=["minute"])
            for (m, name), n in table.groupby(["minute", "device"]).size().items():
                per_minute.append({"minute": int(m), "device": str(name), "trials": int(n)})
    elif trials is not None:
        unknown = len(trials)
    servers = tuple({"address": s["address"], "key": s["key"],
                     "trials": counts.get(s["address"], 0)}
                    for s in status.get("servers", []))
    queue = tuple({"key": k, **{f: int(v.get(f, 0)) for f in ("total", "free", "pending")}}
                  for k, v in sorted((status.get("queue") or {}).items()))
    return DevicesInfo(status.get("tracker"), status.get("key"), bool(waiting),
                       status.get("error"), servers, queue, tuple(per_device),
                       tuple(per_minute), unknown)


def devices_figure(info: DevicesInfo) -> Any:
    """Candidates measured per minute, one bar colour per device (stacked)."""
    fig = go.Figure(layout={
        "title": {"text": "Candidates per device and minute"},
        "xaxis": {"title": {"text": "minute since the first trial"}, "dtick": 1},
        "yaxis": {"title": {"text": "candidates"}},
        "barmode": "stack", "height": 320, "margin": {"t": 50, "l": 60, "r": 20, "b": 50},
        "legend": {"title": {"text": "device"}}})
    if not info.per_minute:
        return note_figure(fig, "no trial measured on an RPC device yet")
    for name in sorted({row["device"] for row in info.per_minute}):
        rows = [r for r in info.per_minute if r["device"] == name]
        fig.add_bar(x=[r["minute"] for r in rows], y=[r["trials"] for r in rows], name=name)
    return fig


def devices_text(info: DevicesInfo) -> str:
    """The info as plain text (``msviz devices``)."""
    lines = [f"tracker {info.tracker or '?'}" + (f", key {info.key}" if info.key else "")]
    if info.error:
        lines.append(f"error: {info.error}")
    if info.waiting:
        lines.append(f"waiting for a server under key {info.key!r}")
    servers = pd.DataFrame(list(info.servers), columns=["address", "key", "trials"])
    queue = pd.DataFrame(list(info.queue), columns=["key", "total", "free", "pending"])
    lines += ["", servers.rename(columns={"address": "server"}).to_string(index=False)
              if len(servers) else "(no server registered)",
              "", queue.to_string(index=False) if len(queue) else "(empty queue)"]
    return "\n".join(lines)
