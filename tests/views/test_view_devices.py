"""The devices view's info, compared whole with a hand-computed one."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from msviz.errors import MsvizWarning
from msviz.records import row
from msviz.views.devices import DevicesInfo, devices_figure, devices_info, devices_text

A, B = "127.0.0.1:9001", "127.0.0.1:9002"

STATUS = {
    "tracker": "127.0.0.1:9190", "key": "cpu", "error": None,
    "servers": [{"address": A, "key": "cpu"}, {"address": "127.0.0.1:9100", "key": "gpu"}],
    "queue": {"gpu": {"total": 1, "free": 0, "pending": 2},
              "cpu": {"total": 1, "free": 1, "pending": 0}},
}


def _trials() -> pd.DataFrame:
    stamps = ["2026-01-01T00:00:05+00:00", "2026-01-01T00:00:30+00:00",
              "2026-01-01T00:01:10+00:00", "2026-01-01T00:01:20+00:00",
              "2026-01-01T00:02:59+00:00", "2026-01-01T00:03:00+00:00"]
    return row.trials_frame({
        "status": ["ok", "ok", "device_lost", "ok", "run_error", "ok"],
        "device": [A, B, B, A, A, None],
        "timestamp": stamps,
    })


def test_devices_info_counts_per_device_and_minute(same: Any) -> None:
    info = devices_info(STATUS, _trials(), waiting=False)
    expected = DevicesInfo(
        tracker="127.0.0.1:9190", key="cpu", waiting=False, error=None,
        servers=({"address": A, "key": "cpu", "trials": 3},
                 {"address": "127.0.0.1:9100", "key": "gpu", "trials": 0}),
        queue=({"key": "cpu", "total": 1, "free": 1, "pending": 0},
               {"key": "gpu", "total": 1, "free": 0, "pending": 2}),
        per_device=({"device": A, "trials": 3, "ok": 2, "device_lost": 0, "failed": 1,
                     "registered": True},
                    {"device": B, "trials": 2, "ok": 1, "device_lost": 1, "failed": 0,
                     "registered": False}),
        # minutes since the first trial with a device (00:00:05): A at 0, 1, 2; B at 0, 1
        per_minute=({"minute": 0, "device": A, "trials": 1},
                    {"minute": 0, "device": B, "trials": 1},
                    {"minute": 1, "device": A, "trials": 1},
                    {"minute": 1, "device": B, "trials": 1},
                    {"minute": 2, "device": A, "trials": 1}),
        unknown=1)
    assert same(info, expected)
    fig = devices_figure(info)
    assert [t.name for t in fig.data] == [A, B]
    assert list(fig.data[0].x) == [0, 1, 2] and list(fig.data[1].y) == [1, 1]
    assert fig.layout.title.text == "Candidates per device and minute"
    assert devices_text(info) == "\n".join([
        "tracker 127.0.0.1:9190, key cpu",
        "",
        "        server key  trials",
        "127.0.0.1:9001 cpu       3",
        "127.0.0.1:9100 gpu       0",
        "",
        "key  total  free  pending",
        "cpu      1     1        0",
        "gpu      1     0        2",
    ])


def test_devices_info_when_empty_still_draws_its_axes_and_warns(same: Any) -> None:
    with pytest.warns(MsvizWarning, match="no tracker status and no trials"):
        info = devices_info(None, None)
    assert same(info, DevicesInfo(None, None, False, None, (), (), (), (), 0))
    fig = devices_figure(info)
    assert fig.layout.title.text == "Candidates per device and minute"
    assert "no trial measured" in fig.layout.annotations[0].text
    waiting = devices_info({**STATUS, "servers": [], "queue": {}}, None, waiting=True)
    assert same(waiting, DevicesInfo("127.0.0.1:9190", "cpu", True, None, (), (), (), (), 0))
    assert devices_text(waiting) == "\n".join([
        "tracker 127.0.0.1:9190, key cpu",
        "waiting for a server under key 'cpu'",
        "",
        "(no server registered)",
        "",
        "(empty queue)",
    ])
