"""A local loopback fleet: a TVM RPC tracker and N RPC servers, for tutorials, tests and benchmarks.

Everything binds to 127.0.0.1 (TVM's tracker and server default to 0.0.0.0, and TVM RPC has no
authentication: anyone who can reach a server's port can run code on it). Each member runs in its
own process group under a small guard process, so that :meth:`LocalFleet.stop` can ``os.killpg``
the whole group (SIGTERM to the tracker alone leaves its ``popen_worker`` child listening), and so
that the members stop by themselves when the Python process that started them exits (the guard
watches its parent). ``atexit`` stops them too.

Example
-------
>>> fleet = msviz.engine.measure.loopback.LocalFleet(servers=2).start()      # doctest: +SKIP
>>> session = msviz.Session("GMM-0", runner=fleet.runner()) # doctest: +SKIP
>>> fleet.kill_server(0); fleet.stop()                      # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass
from typing import Any

from msviz import compat
from msviz.engine.measure.rpc import TrackerError, rpc, tracker_status
from msviz.errors import MsvizError

__all__ = ["FleetError", "FleetMember", "LocalFleet", "free_port"]

LOOPBACK = "127.0.0.1"

#: Runs one fleet member as its child, in the guard's own process group. When the member exits,
#: the guard gets SIGTERM, or the process that started the fleet goes away, it takes the whole
#: group down (TERM, then KILL). Plain ``python -c``: importing msviz (and TVM) here would cost
#: seconds per member.
_GUARD = """
import os, signal, subprocess, sys, time
parent = int(sys.argv[1])
child = subprocess.Popen(sys.argv[2:])
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
while not stop and child.poll() is None and os.getppid() == parent:
    time.sleep(0.2)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
try:
    os.killpg(0, signal.SIGTERM)
    for _ in range(30):
        if child.poll() is not None:
            break
        time.sleep(0.1)
finally:
    os.killpg(0, signal.SIGKILL)
"""


class FleetError(MsvizError, RuntimeError):
    """The local fleet could not be started (a member exited, or did not register in time)."""


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nobody listens on now (bound and released on ``host``)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass
class FleetMember:
    """One process of the fleet: its name, port, guard process and log file."""

    name: str
    port: int
    proc: subprocess.Popen
    log: str

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    @property
    def pgid(self) -> int:
        return self.proc.pid  # the guard leads its own session, so its group id is its pid


class LocalFleet:
    """A tracker and ``servers`` RPC servers on 127.0.0.1, each in its own process group.

    Parameters
    ----------
    servers : int
        RPC servers to start (0 is allowed: a tracker with an empty fleet).
    key : str
        The device key the servers register under.
    tracker_port : int, optional
        The tracker's port (a free one if None).
    wait : float
        Seconds :meth:`start` waits for every server to register.
    threads_per_server : int, optional
        Threads each server runs kernels on (``TVM_NUM_THREADS``). The servers share this
        machine's cores: the default splits them (at least 1 each), because TVM's spinning
        thread pools slow down many times over when more threads than cores run kernels.
    """

    def __init__(self, servers: int = 2, *, key: str = "msviz-local",
                 tracker_port: int | None = None, wait: float = 60.0,
                 threads_per_server: int | None = None) -> None:
        if isinstance(servers, bool) or not isinstance(servers, int) or servers < 0:
            raise ValueError(f"servers must be an int >= 0, got {servers!r}")
        if not isinstance(key, str) or not key or ":" in key:
            raise ValueError(f"key must be a non-empty string without ':', got {key!r}")
        self.key = key
        self.num_servers = servers
        if threads_per_server is not None and (
            isinstance(threads_per_server, bool) or not isinstance(threads_per_server, int)
            or threads_per_server < 1
        ):
            raise ValueError(f"threads_per_server must be an int >= 1, got {threads_per_server!r}")
        self.threads_per_server = threads_per_server or max(
            1, compat.host_cores() // max(1, servers))
        self.tracker_port = int(tracker_port) if tracker_port else free_port()
        self.wait = float(wait)
        self.host = LOOPBACK
        self.tracker: FleetMember | None = None
        self.servers: list[FleetMember] = []
        self._logdir = ""  # made by start()
        self._started = 0
        atexit.register(_stop_ref, weakref.ref(self))

    @property
    def address(self) -> str:
        """``host:port`` of the tracker."""
        return f"{self.host}:{self.tracker_port}"

    # -- start / stop -------------------------------------------------------------------------

    def start(self) -> LocalFleet:
        """Start the tracker, then the servers; wait until they are all registered."""
        if self.tracker is not None:
            raise FleetError("this fleet is already started")
        self._logdir = tempfile.mkdtemp(prefix="msviz-fleet-")
        self.tracker = self._spawn("tracker", self.tracker_port, [
            "tvm.exec.rpc_tracker", "--host", LOOPBACK, "--port", str(self.tracker_port),
            "--port-end", str(self.tracker_port + 1)])
        self._wait_listening(self.tracker)
        for _ in range(self.num_servers):
            self.add_server(wait=False)
        self.wait_for_servers(self.num_servers)
        return self

    def add_server(self, *, wait: bool = True) -> FleetMember:
        """Start one more server under the fleet's key (and wait for it to register)."""
        if self.tracker is None:
            raise FleetError("start the fleet first")
        port = free_port()
        name = f"server{self._started}"
        self._started += 1
        member = self._spawn(name, port, [
            "tvm.exec.rpc_server", "--host", LOOPBACK, "--port", str(port),
            "--port-end", str(port + 1), "--tracker", self.address, "--key", self.key],
            threads=self.threads_per_server)
        self.servers.append(member)
        if wait:
            self.wait_for_servers(len(self.live_servers()))
        return member

    def _spawn(self, name: str, port: int, args: list[str],
               threads: int | None = None) -> FleetMember:
        log = os.path.join(self._logdir, f"{name}.log")
        env = dict(os.environ)
        if threads is not None:
            env["TVM_NUM_THREADS"] = str(threads)
        with open(log, "w") as out:
            proc = subprocess.Popen(
                [sys.executable, "-c", _GUARD, str(os.getpid()), sys.executable, "-m", *args],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env=env)
        return FleetMember(name, port, proc, log)

    def _wait_listening(self, member: FleetMember) -> None:
        deadline = time.monotonic() + self.wait
        while time.monotonic() < deadline:
            if not member.alive:
                raise FleetError(f"the {member.name} exited: {self.log(member.name)[-2000:]}")
            try:
                with socket.create_connection((LOOPBACK, member.port), timeout=1.0):
                    return
            except OSError:
                time.sleep(0.1)
        raise FleetError(f"the {member.name} did not listen on {LOOPBACK}:{member.port} "
                         f"within {self.wait:.0f} s")

    def wait_for_servers(self, count: int, timeout: float | None = None) -> float:
        """Wait until the tracker lists exactly ``count`` servers under the key; returns the
        seconds waited. Raises :class:`FleetError` after ``timeout`` (default: ``wait``)."""
        start = time.monotonic()
        limit = self.wait if timeout is None else float(timeout)
        last = None
        while time.monotonic() - start < limit:
            try:
                last = tracker_status(self.address, self.key)
                if last.total == count:
                    return time.monotonic() - start
            except TrackerError:
                pass
            time.sleep(0.2)
        have = "no answer" if last is None else f"{last.total}"
        raise FleetError(f"the tracker at {self.address} did not list {count} server(s) under "
                         f"key {self.key!r} within {limit:.0f} s ({have})")

    def live_servers(self) -> list[FleetMember]:
        return [m for m in self.servers if m.alive]

    def kill_server(self, index: int = 0, *, wait: bool = True) -> FleetMember:
        """Kill server ``index`` (of :meth:`live_servers`) at once, with SIGKILL to its whole
        group, as a device that dies would; wait until the tracker drops it."""
        alive = self.live_servers()
        member = alive[index]
        _killpg(member, signal.SIGKILL)
        member.proc.wait()
        if wait:
            self.wait_for_servers(len(alive) - 1)
        return member

    def stop(self) -> None:
        """Stop every member (``os.killpg`` of each group), tracker last; idempotent."""
        members = [*self.servers, *([self.tracker] if self.tracker else [])]
        for member in members:
            if member.alive:
                _killpg(member, signal.SIGTERM)
        for member in members:
            try:
                member.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _killpg(member, signal.SIGKILL)
                member.proc.wait()
            _killpg(member, signal.SIGKILL)  # whatever the guard left in its group
        self.servers, self.tracker = [], None
        if self._logdir:
            shutil.rmtree(self._logdir, ignore_errors=True)

    def __enter__(self) -> LocalFleet:
        return self if self.tracker is not None else self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- what to measure with -----------------------------------------------------------------

    def runner(self, **options: Any) -> Any:
        """``msviz.rpc(self.address, key=self.key, **options)``: a runner for a Session."""
        return rpc(self.address, key=self.key, **options)

    def pids(self) -> list[int]:
        """Every process of the fleet (guards, members and their children)."""
        import psutil

        out = []
        for member in [*([self.tracker] if self.tracker else []), *self.servers]:
            try:
                proc = psutil.Process(member.proc.pid)
                out += [proc.pid, *(c.pid for c in proc.children(recursive=True))]
            except psutil.Error:
                continue
        return out

    def log(self, name: str) -> str:
        """The output of member ``name`` (``"tracker"``, ``"server0"``, ...)."""
        try:
            with open(os.path.join(self._logdir, f"{name}.log")) as f:
                return f.read()
        except OSError:
            return ""

    def __repr__(self) -> str:
        state = "stopped" if self.tracker is None else \
            f"{len(self.live_servers())}/{len(self.servers)} servers alive"
        return f"LocalFleet({self.address!r}, key={self.key!r}, {state})"


def _killpg(member: FleetMember, sig: int) -> None:
    try:
        os.killpg(member.pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_ref(ref: weakref.ref) -> None:
    fleet = ref()
    if fleet is not None:
        fleet.stop()
