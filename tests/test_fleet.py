"""The local loopback fleet: a real TVM tracker and servers, loopback only, stopped for good."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from msviz.engine.measure.loopback import FleetError, LocalFleet
from msviz.engine.measure.rpc import tracker_status


def _listening(pids: list[int]) -> list[tuple[str, int]]:
    """(ip, port) of every listening TCP socket (IPv4 and IPv6) the processes hold."""
    mine = set(pids)
    return sorted((c.laddr.ip, c.laddr.port) for c in psutil.net_connections(kind="tcp")
                  if c.pid in mine and c.status == psutil.CONN_LISTEN)


def _alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def _wait_gone(pids: list[int], deadline_s: float = 60.0) -> None:
    """Poll until none of ``pids`` is alive, or a generous deadline (a loaded host) passes."""
    deadline = time.monotonic() + deadline_s
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)


def test_fleet_listens_on_loopback_only_and_stops_for_good() -> None:
    with LocalFleet(2, key="fleet-test") as fleet:
        status = tracker_status(fleet.address, "fleet-test")
        assert (status.total, status.free, status.pending) == (2, 2, 0)
        assert sorted(s["address"] for s in status.servers) == sorted(
            f"127.0.0.1:{m.port}" for m in fleet.servers)
        pids = fleet.pids()
        sockets = _listening(pids)
        ports = {port for _, port in sockets}
        # the tracker and both servers listen, and nothing of the fleet listens beyond loopback
        assert {fleet.tracker_port, *(m.port for m in fleet.servers)} <= ports
        assert {ip for ip, _ in sockets} == {"127.0.0.1"}, sockets
        # the two servers split the cores: more kernel threads than cores slow TVM's pools
        cores = min(len(os.sched_getaffinity(0)), psutil.cpu_count(logical=False) or 1)
        for member in fleet.servers:
            tree = [psutil.Process(member.proc.pid),
                    *psutil.Process(member.proc.pid).children(recursive=True)]
            assert {p.environ().get("TVM_NUM_THREADS") for p in tree} == {
                str(max(1, cores // 2))}, member.name
        fleet.kill_server(0)
        assert tracker_status(fleet.address, "fleet-test").total == 1
    # stop() killed every group; the members' children end as the kernel gets to them
    _wait_gone(pids)
    assert _alive(pids) == []
    assert not _listening(pids)


def test_fleet_stops_when_the_python_process_that_started_it_exits(tmp_path) -> None:
    script = textwrap.dedent("""
        import os, sys
        from msviz.engine.measure.loopback import LocalFleet
        fleet = LocalFleet(1, key="orphan").start()
        print(" ".join(map(str, fleet.pids())), flush=True)
        os._exit(0)  # no atexit, no stop(): only the guards can clean up
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) >= 4  # two guards, the tracker, the server (and their children)
    _wait_gone(pids)  # each guard sees its parent gone within 0.2 s, then TERM, KILL in 3 s
    assert _alive(pids) == []


def test_fleet_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="servers must be an int >= 0"):
        LocalFleet(-1)
    with pytest.raises(ValueError, match="key must be a non-empty string without ':'"):
        LocalFleet(1, key="a:b")
    with pytest.raises(ValueError, match="threads_per_server must be an int >= 1"):
        LocalFleet(1, threads_per_server=0)
    with pytest.raises(FleetError, match="start the fleet first"):
        LocalFleet(1).add_server()
