"""A build or run worker killed under a candidate: the candidate fails naming the signal, a new
worker takes the next one, and the session goes on."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import psutil
import pytest

from msviz import compat
from msviz.engine.measure import runner as runner_mod
from msviz.engine.measure.worker_pool import NamingPoolExecutor, death_message
from tests.engine.conftest import make_tiny_session


def _is_worker(process: psutil.Process) -> bool:
    try:
        return "tvm.exec.popen_worker" in " ".join(process.cmdline())
    except psutil.Error:  # gone, or a zombie not yet reaped
        return False


def test_death_messages() -> None:
    assert death_message(-9) == "the worker process was killed by SIGKILL"
    assert death_message(-11) == "the worker process was killed by SIGSEGV"
    assert death_message(3) == "the worker process exited with status 3"
    assert death_message(-200) == "the worker process was killed by signal 200"


@pytest.mark.parametrize(("sig", "name"), [(signal.SIGKILL, "SIGKILL"),
                                           (signal.SIGSEGV, "SIGSEGV")])
def test_a_dead_worker_is_named_and_replaced(sig: int, name: str) -> None:
    pool = NamingPoolExecutor(max_workers=1, timeout=60)
    try:
        first = pool.submit(os.getpid).result()  # builtins pickle by name
        with pytest.raises(ChildProcessError,
                           match=rf"^Subprocess terminated: the worker process was killed by "
                                 rf"{name} \(pid {first}\); a new worker takes the next candidate"):
            pool.submit(os.kill, first, sig).result()  # the worker kills itself
        second = pool.submit(os.getpid).result()  # a new process took over
        assert second != first and not psutil.pid_exists(first)
    finally:
        pool.shutdown(wait=True)


def test_the_local_runner_names_deaths() -> None:
    runner = runner_mod.create("local", compat.make_target("llvm"), timeout=30)
    assert type(runner.pool) is NamingPoolExecutor


def test_a_session_survives_killed_workers(tmp_path: Path) -> None:
    session = make_tiny_session(tmp_path / "wd", max_trials=16)
    me, killed = psutil.Process(), []

    def kill_a_worker(event: Any) -> None:
        # on the session's worker thread, as batches 0 and 1 end (4 and 8 of 16 trials): the
        # run cannot finish before the kills, however fast the host (a poll could miss them)
        if event.kind == "measured" and len(killed) < 2:
            workers = [p for p in me.children(recursive=True) if _is_worker(p)]
            if workers:
                os.kill(workers[-1].pid, signal.SIGKILL)
                killed.append(workers[-1].pid)

    session.subscribe(kill_a_worker)
    session.start()
    assert session.wait(600) == "finished", session.end_reason
    assert len(killed) == 2
    trials = session.trials
    assert session.trials_done == 16 == len(trials)
    # the next candidate a killed worker was given fails, naming the signal and the pid (a
    # runner's or builder's pool replaced after the kill gives none)
    died = trials[trials["error"].fillna("").str.contains("Subprocess terminated")]
    assert 1 <= len(died) <= 2, trials[["status", "error"]]
    for error in died["error"]:
        pid = int(error.split("(pid ")[1].split(")")[0])
        assert pid in killed and "killed by SIGKILL" in error, error
