"""One writer per work dir: a second session is refused with the holder's pid and start time,
no record is lost, and the lock of a killed process is taken over (and said so)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from msviz.engine.control.lock import LOCK_FILE, WorkDirBusyError
from msviz.records import database as db_files
from msviz.records.sidecar import SIDECAR_FILE
from tests.engine.conftest import make_tiny_session


def _record_lines(work_dir: Path) -> int:
    text = (work_dir / db_files.RECORD_FILE).read_text()
    return sum(1 for line in text.splitlines() if line.strip())


def test_a_second_session_on_a_work_dir_is_refused(tmp_path: Path) -> None:
    work_dir = tmp_path / "wd"
    early = make_tiny_session(work_dir, seed=2)  # made before the first starts: fails on start
    first = make_tiny_session(work_dir, max_trials=4, trials_per_batch=2)
    assert first.step("batch") is True
    assert first.wait(300) == "paused"  # one batch measured; the lock is held while paused
    holder = json.loads((work_dir / LOCK_FILE).read_text())
    assert holder["pid"] == os.getpid()

    with pytest.raises(WorkDirBusyError) as err:
        make_tiny_session(work_dir, resume=True)
    assert f"process {os.getpid()}" in str(err.value)
    assert str(work_dir) in str(err.value)

    sidecar = (work_dir / SIDECAR_FILE).read_bytes()
    early.start()
    assert early.wait(60) == "failed"
    assert (work_dir / SIDECAR_FILE).read_bytes() == sidecar  # the refused one wrote nothing
    assert "WorkDirBusyError" in early.end_reason and f"process {os.getpid()}" in \
        early.end_reason

    first.resume()
    assert first.wait(300) == "finished"
    assert not (work_dir / LOCK_FILE).exists()  # released at the end
    # every trial the first session measured is a record; the second added none
    assert _record_lines(work_dir) == len(first.trials) == first.trials_done == 4
    again = make_tiny_session(work_dir, resume=True)  # free again
    assert again.state == "idle"


_HOLD_AND_DIE = """
import os, signal, sys
from msviz.engine.control.lock import WorkDirLock
WorkDirLock(sys.argv[1]).acquire()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_holders_lock_is_taken_over_and_said(tmp_path: Path) -> None:
    work_dir = tmp_path / "wd"
    done = subprocess.run([sys.executable, "-c", _HOLD_AND_DIE, str(work_dir)],
                          env={**os.environ, "PYTHONPATH": str(Path.cwd())}, check=False)
    assert done.returncode == -signal.SIGKILL
    dead = json.loads((work_dir / LOCK_FILE).read_text())["pid"]
    session = make_tiny_session(work_dir)
    session.step("generation")  # the lock is taken first; the design spaces, then a pause
    assert session.wait(300) == "paused"
    assert json.loads((work_dir / LOCK_FILE).read_text())["pid"] == os.getpid()
    session.stop()
    assert session.wait(60) == "stopped"
    notes = [e["message"] for e in session.events.of_kind("warning")]
    assert any(f"took over the lock of process {dead}" in n for n in notes), notes
