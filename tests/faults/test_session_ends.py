"""A session always ends: a work dir that cannot be written is refused at once (naming it), and
a disk that fills mid-run fails the session, naming the file and the cause, even when the
worker's own teardown (the profile's last sidecar line) fails again."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from msviz.errors import WriteError
from msviz.records.sidecar import SIDECAR_FILE
from tests.engine.conftest import make_tiny_session


@pytest.mark.parametrize("where", ["under-a-file", "proc"])
def test_an_unwritable_work_dir_is_refused_naming_it(tmp_path: Path, where: str) -> None:
    # tests run as root, so chmod cannot make a folder unwritable: a path under a regular
    # file, and a path in /proc (which refuses new entries even to root), cannot be made
    if where == "under-a-file":
        (tmp_path / "plain").write_text("not a folder")
        work_dir = tmp_path / "plain" / "wd"
    else:
        work_dir = Path("/proc/msviz-faults-wd")
    started = time.monotonic()
    with pytest.raises(WriteError) as err:
        make_tiny_session(work_dir)
    assert time.monotonic() - started < 60
    assert str(work_dir) in str(err.value)
    assert "cannot be written" in str(err.value)


def test_a_full_disk_fails_the_session_and_it_ends(tmp_path: Path) -> None:
    """The sidecar is /dev/full: every flush fails with ENOSPC, as on a full disk. The worker
    fails on its first sidecar line, then again in its teardown (the last profile row): the
    state must still become ``failed``, the error naming the file and "No space left"."""
    work_dir = tmp_path / "wd"
    work_dir.mkdir()
    os.symlink("/dev/full", work_dir / SIDECAR_FILE)
    session = make_tiny_session(work_dir)
    session.start()
    assert session.wait(120) == "failed"
    reason = session.end_reason
    assert "No space left on device" in reason, reason
    assert str(work_dir / SIDECAR_FILE) in reason, reason
    failed = session.events.of_kind("failed")
    assert len(failed) == 1 and failed[0]["error"] == reason
    # no trial is claimed that the work dir does not hold
    assert len(session.trials) == len(session.open().trials)
