"""The Devices tab: the RPC tracker's servers and queue, candidates per device and per minute."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from msviz.views.common import quiet_empty
from msviz.views.devices import DevicesInfo, devices_figure, devices_info, latest_status
from msviz.widgets.common import ErrorArea, figure_widget
from msviz.widgets.plots import show_figure

__all__ = ["DevicesView", "devices_html"]


def _table(rows: list[list[str]], head: list[str]) -> str:
    cells = "".join(f"<th style='text-align:left;padding:2px 10px'>{html.escape(h)}</th>"
                    for h in head)
    body = "".join("<tr>" + "".join(f"<td style='padding:2px 10px'>{c}</td>" for c in row)
                   + "</tr>" for row in rows)
    return f"<table class='msviz-devices'><tr>{cells}</tr>{body}</table>"


def devices_html(info: DevicesInfo) -> str:
    """The tracker, its servers and queue, and the per-device counts, as HTML."""
    esc = html.escape
    head = (f"<b>Tracker</b> <code>{esc(info.tracker or '?')}</code>, key "
            f"<code>{esc(info.key or '?')}</code>")
    if info.waiting:
        head += (" &middot; <b style='color:#b26a00' class='msviz-waiting'>waiting for "
                 "devices</b>: no server holds the key")
    if info.error:
        head += f"<br><span style='color:#b00020'>{esc(info.error)}</span>"
    servers = _table([[f"<code>{esc(s['address'])}</code>", esc(s["key"]), str(s["trials"])]
                      for s in info.servers], ["server", "key", "candidates measured"]) \
        if info.servers else "<i>no server registered</i>"
    queue = _table([[esc(q["key"]), str(q["total"]), str(q["free"]), str(q["pending"])]
                    for q in info.queue], ["key", "servers", "free", "pending"]) \
        if info.queue else "<i>empty queue</i>"
    rows = [[f"<code>{esc(d['device'])}</code>", str(d["trials"]), str(d["ok"]),
             str(d["device_lost"]), str(d["failed"]),
             "yes" if d["registered"] else "<b style='color:#b00020'>gone</b>"]
            for d in info.per_device]
    per_device = _table(rows, ["device", "trials", "ok", "device lost", "failed",
                               "registered"]) if rows else "<i>no trial measured yet</i>"
    if info.unknown:
        per_device += f"<br>{info.unknown} trial(s) with no recorded device"
    return (f"{head}<h4>Servers</h4>{servers}<h4>Queue</h4>{queue}"
            f"<h4>Candidates per device</h4>{per_device}")


class DevicesView(W.VBox):
    """Where a session measures over RPC; :meth:`update` with its events and trials."""

    def __init__(self, events: list | None = None, trials: Any = None) -> None:
        self.info = DevicesInfo(None, None, False, None, (), (), (), (), 0)
        self.summary = W.HTML()
        self.figure = figure_widget()
        self.error = ErrorArea()
        super().__init__([self.summary, self.figure, self.error])
        self.update(events or [], trials)

    def update(self, events: list, trials: Any = None) -> None:
        """Recompute from the newest tracker status in ``events`` and the trials table."""
        with self.error.guard(self) as guard:
            status, waiting = latest_status(events)
            with quiet_empty():  # empty: the note says so
                self.info = devices_info(status, trials, waiting=waiting)
        if guard.failed:
            return
        with self.hold_sync():
            self.summary.value = devices_html(self.info)
        show_figure(self.figure, devices_figure(self.info))
