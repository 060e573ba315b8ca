"""The Devices tab: rendered from events and trials; shown only for sessions that use RPC."""

from __future__ import annotations

from pathlib import Path

import msviz
from msviz.engine.events import EventLog
from msviz.engine.measure.rpc import RPCSpec
from msviz.records import row
from msviz.views.devices import DevicesInfo
from msviz.widgets.devices_view import DevicesView


def test_devices_view_shows_servers_queue_and_waiting() -> None:
    log = EventLog()
    status = {"tracker": "127.0.0.1:9190", "key": "cpu", "free": 0, "total": 0, "pending": 1,
              "servers": [], "queue": {"cpu": {"total": 0, "free": 0, "pending": 1}},
              "error": None}
    log.emit("waiting_for_devices", "GMM-0", **status)
    view = DevicesView(log.snapshot())
    assert view.info == DevicesInfo(
        tracker="127.0.0.1:9190", key="cpu", waiting=True, error=None, servers=(),
        queue=({"key": "cpu", "total": 0, "free": 0, "pending": 1},), per_device=(),
        per_minute=(), unknown=0)
    assert view.info.waiting and "waiting for devices" in view.summary.value
    assert "no server registered" in view.summary.value
    assert view.error.text == ""
    assert "no trial measured" in view.figure.layout.annotations[0].text

    log.emit("devices", "GMM-0", **{**status, "total": 1, "free": 1, "pending": 0,
                                    "servers": [{"address": "127.0.0.1:9001", "key": "cpu"}],
                                    "queue": {"cpu": {"total": 1, "free": 1, "pending": 0}}})
    trials = row.trials_frame({"status": ["ok", "ok"], "device": ["127.0.0.1:9001"] * 2,
                               "timestamp": ["2026-01-01T00:00:00+00:00"] * 2})
    view.update(log.snapshot(), trials)
    assert view.info == DevicesInfo(
        tracker="127.0.0.1:9190", key="cpu", waiting=False, error=None,
        servers=({"address": "127.0.0.1:9001", "key": "cpu", "trials": 2},),
        queue=({"key": "cpu", "total": 1, "free": 1, "pending": 0},),
        per_device=({"device": "127.0.0.1:9001", "trials": 2, "ok": 2, "device_lost": 0,
                     "failed": 0, "registered": True},),
        per_minute=({"minute": 0, "device": "127.0.0.1:9001", "trials": 2},), unknown=0)
    assert not view.info.waiting and "waiting" not in view.summary.value
    assert "<code>127.0.0.1:9001</code>" in view.summary.value
    assert [t.name for t in view.figure.data] == ["127.0.0.1:9001"]
    assert list(view.figure.data[0].y) == [2]


def test_dashboard_has_a_devices_tab_last_only_over_rpc(tmp_path: Path) -> None:
    local = msviz.Session("GMM-0", work_dir=tmp_path / "a", max_trials=4)
    assert "Devices" not in msviz.dashboard(local).tabs.titles
    remote = msviz.Session("GMM-0", work_dir=tmp_path / "b", max_trials=4,
                           runner=RPCSpec("127.0.0.1", 9, "cpu"))
    dash = msviz.dashboard(remote)
    assert dash.tabs.titles[-1] == "Devices" and dash.devices is not None
    assert "no server registered" in dash.devices.summary.value


def test_the_trials_table_shows_the_device_column_only_when_known() -> None:
    from msviz.views.tables import trial_page_info

    frame = row.trials_frame({"trial": [0, 1], "task_trial": [0, 1], "task": ["t", "t"],
                              "status": ["ok", "ok"],
                              "latency_us": [1.0, 2.0], "gflops": [1.0, 0.5],
                              "error": [None, None], "device": ["127.0.0.1:9001", None]})
    assert "device" in trial_page_info(frame).columns
    assert "device" not in trial_page_info(frame.assign(device=None)).columns
