"""Measuring through a real TVM RPC tracker and loopback servers (msviz.engine.measure.loopback)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import tvm

import msviz
from msviz import compat
from msviz.engine.measure import rpc as rpc_mod
from msviz.engine.measure import tracker
from msviz.engine.measure.loopback import LocalFleet, free_port
from msviz.engine.measure.rpc import NoDevicesError, RPCSpec, parse_rpc, rpc
from msviz.errors import MsvizWarning
from msviz.records import database as db_files


@pytest.fixture(scope="module")
def fleet() -> Any:
    with LocalFleet(2, key="test-rpc") as f:
        yield f


def _served(fleet: LocalFleet, member: Any) -> int:
    """Candidates a server loaded, from its own log (one ``load_module`` line each)."""
    return fleet.log(member.name).count("load_module")


def _wait_state(session: Any, state: str, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while session.state != state and time.monotonic() < deadline:
        time.sleep(0.05)
    return session.state == state


# -- the spec ------------------------------------------------------------------------------------

def test_rpc_spec_checks_and_warns(tiny_session: Any) -> None:
    spec = rpc("127.0.0.1:9190", key="cpu-fleet", session_timeout=20, max_workers=2)
    assert spec == RPCSpec("127.0.0.1", 9190, "cpu-fleet", 20.0, 1, 2, 600.0)
    assert parse_rpc("10.0.0.7:9190:board") == RPCSpec("10.0.0.7", 9190, "board")
    with pytest.raises(ValueError, match="HOST:PORT"):
        rpc("127.0.0.1", key="k")
    with pytest.raises(ValueError, match=r"port in 1\.\.65535"):
        rpc("127.0.0.1:0", key="k")
    with pytest.raises(ValueError, match="key must be"):
        rpc("127.0.0.1:9190", key="")
    with pytest.raises(ValueError, match="--rpc wants HOST:PORT:KEY"):
        parse_rpc("127.0.0.1:9190")
    with pytest.warns(MsvizWarning, match="no authentication"):
        rpc("8.8.8.8:9190", key="k")
    with pytest.raises(ValueError, match="TVM_TRACKER_HOST"):
        tiny_session(Path("/nonexistent-msviz-wd"), runner="rpc")


def test_a_stock_rpc_runner_is_watched_like_a_spec(fleet: LocalFleet) -> None:
    cfg = tracker.rpc_config("127.0.0.1", fleet.tracker_port, "test-rpc", session_timeout=30)
    runner = compat.ms.runner.RPCRunner(rpc_config=cfg)
    try:
        assert rpc_mod.fleet_of(runner) == RPCSpec("127.0.0.1", fleet.tracker_port,
                                                   "test-rpc", 30.0, 1)
    finally:
        runner.pool.shutdown()
    assert rpc_mod.fleet_of("local") is None


# -- measuring -----------------------------------------------------------------------------------

def test_two_servers_measure_every_trial(tiny_session: Any, fleet: LocalFleet,
                                         tmp_path: Path) -> None:
    before = {m.name: _served(fleet, m) for m in fleet.servers}
    session = tiny_session(tmp_path / "wd", runner=fleet.runner(), max_trials=16,
                                trials_per_batch=8)
    session.start()
    assert session.wait(600) == "finished", session.end_reason
    trials = msviz.open(session.work_dir).trials
    assert len(trials) == 16 and (trials["status"] == "ok").all()
    addresses = {f"127.0.0.1:{m.port}": m for m in fleet.servers}
    assert set(trials["device"]) == set(addresses)  # both servers got candidates
    # ... as many as each server's own log says it loaded
    per_device = trials["device"].value_counts().to_dict()
    assert per_device == {a: _served(fleet, m) - before[m.name] for a, m in addresses.items()}
    # the live table equals the work dir's, device column included
    assert session.trials["device"].tolist() == trials["device"].tolist()
    devices = session.events.of_kind("devices")
    assert devices[0]["total"] == 2 and devices[0]["key"] == "test-rpc"
    assert not session.events.of_kind("waiting_for_devices")
    # stock MetaSchedule reads the work dir
    db = compat.JSONDatabase(work_dir=str(session.work_dir))
    sch = compat.ms.tir_integration.compile_tir(db, session.workload.mod, session.target)
    # ... and compiles msviz's best trial: its trace replayed on the workload is the same program
    best = msviz.open(session.work_dir).best()
    assert best.latency_us == trials["latency_us"].min()
    expected = compat.Schedule(session.workload.mod)
    best.trace.apply_to_schedule(expected, remove_postproc=False)
    tvm.ir.assert_structural_equal(sch.mod, expected.mod)


def test_a_server_killed_mid_session(tiny_session: Any, tmp_path: Path) -> None:
    with LocalFleet(2, key="test-kill") as fleet:
        # each run lasts at least min_repeat_ms on any CPU: the window in which the watcher
        # below sees a server load a module of batch 1 and kills it mid-run (1 s: room for a
        # loaded host to stall the watcher's thread)
        session = tiny_session(
            tmp_path / "wd", runner=fleet.runner(), max_trials=8, trials_per_batch=4,
            evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 1000})
        killed: list = []

        def kill_when_measuring() -> None:  # the first server that loads a module of batch 1
            base = {m.name: _served(fleet, m) for m in fleet.servers}
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                for i, m in enumerate(fleet.live_servers()):
                    if _served(fleet, m) > base[m.name]:
                        killed.append(fleet.kill_server(i, wait=False))
                        return
                time.sleep(0.01)

        def on_event(event: Any) -> None:
            if event.kind == "built" and event["batch"] == 1:
                threading.Thread(target=kill_when_measuring, daemon=True).start()

        session.subscribe(on_event)
        session.start()
        assert session.wait(600) == "finished", session.end_reason
        events = list(session.events)
        survivor = next(f"127.0.0.1:{m.port}" for m in fleet.servers if m.alive)
    dead = f"127.0.0.1:{killed[0].port}"
    rows = [t for e in events if e.kind == "measured" for t in e["trials"]]
    lost = [t for t in rows if t["error_kind"] == "device_lost"]
    assert lost and all(t["batch"] == 1 for t in lost)
    assert all(t["device"] in (dead, None) for t in lost)
    assert all("RPCRunner" in t["error"] or "msviz" in t["error"] for t in lost)
    # the session finished with the other server: 8 measured trials, later all on the survivor
    trials = msviz.open(tmp_path / "wd").trials
    assert (trials["status"] == "ok").sum() == 8
    assert set(trials[trials["batch"] > 1]["device"]) == {survivor}
    assert (trials["status"] == "device_lost").sum() == len(lost)
    # the lost candidates did not train the cost model
    updated = {e["batch"]: e["trained_on"] for e in events if e.kind == "cost_model_updated"
               and e.get("source") == "batch"}
    per_batch: dict[int, int] = {}
    for t in rows:
        per_batch[t["batch"]] = per_batch.get(t["batch"], 0) + (t["error_kind"] is None)
    assert updated == per_batch
    # nothing measured is missing: every row of every event is in the database, in order
    lines = [int(x) for x in trials["line"]]
    assert lines == [t["line"] for t in rows] == list(range(1, len(rows) + 1))
    assert db_files.read_records(tmp_path / "wd" / db_files.RECORD_FILE, 10**9)[-1].line \
        == len(rows)
    ok = {t["line"]: t["run_secs"] for t in rows if t["error_kind"] is None}
    stored = dict(zip(trials["line"], trials["run_secs"]))
    assert all(tuple(stored[line]) == tuple(secs) for line, secs in ok.items())


# -- no devices ----------------------------------------------------------------------------------

def test_no_server_the_session_waits_and_can_be_paused_and_stopped(tiny_session: Any,
        fleet: LocalFleet, tmp_path: Path) -> None:
    session = tiny_session(tmp_path / "wd", runner=fleet.runner().__class__(
        "127.0.0.1", fleet.tracker_port, "nobody-holds-this", poll_interval=0.2))
    session.start()
    assert _wait_state(session, "waiting", 60)
    waiting = session.events.of_kind("waiting_for_devices")
    assert waiting and {k: waiting[0][k] for k in ("tracker", "key", "free", "total")} == {
        "tracker": fleet.address, "key": "nobody-holds-this", "free": 0, "total": 0}
    assert waiting[0]["servers"] == [{"address": f"127.0.0.1:{m.port}", "key": "test-rpc"}
                                     for m in sorted(fleet.servers, key=lambda m:
                                                     f"127.0.0.1:{m.port}")]
    assert session.wait(0.5) == "waiting"  # wait() counts waiting as running
    assert session.pause() is True
    assert _wait_state(session, "paused", 60)
    assert session.resume() is True
    assert _wait_state(session, "waiting", 60)
    # the stop ends the wait for devices (600 s by default) at its next poll: a generous bound
    # for a loaded host, far below that wait
    tic = time.monotonic()
    assert session.stop() is True
    assert session.wait(120) == "stopped"
    assert time.monotonic() - tic < 60
    assert session.trials_done == 0


def test_no_server_gives_up_after_the_wait_timeout(tiny_session: Any, fleet: LocalFleet,
                                                    tmp_path: Path) -> None:
    spec = rpc(fleet.address, key="nobody-either", wait_timeout=2)
    session = tiny_session(tmp_path / "wd", runner=spec)
    session.start()
    assert session.wait(300) == "failed"  # setting the session up, then the 2 s wait
    assert session.end_reason.startswith("NoDevicesError: no RPC server registered under key "
                                         f"'nobody-either' at tracker {fleet.address} within 2 s")


def test_a_tracker_that_is_gone_is_not_retried_forever(tiny_session: Any, tmp_path: Path) -> None:
    spec = rpc(f"127.0.0.1:{free_port()}", key="k", wait_timeout=3)
    session = tiny_session(tmp_path / "wd", runner=spec)
    tic = time.monotonic()
    session.start()
    assert session.wait(300) == "failed"
    # setting the session up, then at most the 3 s wait: a generous bound for a loaded host
    assert time.monotonic() - tic < 120
    assert "does not answer" in session.end_reason
    assert issubclass(NoDevicesError, msviz.MsvizError)


def test_cli_devices_and_rpc_flag(fleet: LocalFleet, capsys: Any) -> None:
    from msviz.cli import _runner, build_parser, main

    assert main(["devices", fleet.address]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"tracker {fleet.address}\n")
    rows = [line.split() for line in out.splitlines()]
    servers = sorted(f"127.0.0.1:{member.port}" for member in fleet.servers)
    assert sorted(r[0] for r in rows if r and r[0].startswith("127.0.0.1:")
                  and r[0] != fleet.address) == servers
    assert ["key", "total", "free", "pending"] in rows
    assert ["test-rpc", "2", "2", "0"] in rows  # both servers free, nothing queued
    assert main(["devices", f"127.0.0.1:{free_port()}"]) == 2
    assert "does not answer" in capsys.readouterr().err
    args = build_parser().parse_args(["tune", "GMM-0", "--rpc", "127.0.0.1:9190:cpu-fleet"])
    assert _runner(args) == {"runner": RPCSpec("127.0.0.1", 9190, "cpu-fleet")}
