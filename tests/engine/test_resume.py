"""Resuming a work dir: after a kill -9 mid-run, and with a torn last line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msviz
from msviz.records import database as db_files
from tests.engine.conftest import batch_column

CHILD = """
import pathlib, sys, time
from msviz.engine import Session
s = Session("GMM-0", work_dir=sys.argv[1], max_trials=int(sys.argv[2]), trials_per_batch=4,
            population_size=16, init_min_unmeasured=8, genetic_num_iters=1, seed=5,
            evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})
def hold(event):  # the worker, mid-run: batch 2 built, not measured; held till the kill
    if event.kind == "built" and event["batch"] == 2:
        pathlib.Path(sys.argv[3]).touch()
        time.sleep(3600)
s.subscribe(hold)
s.start()
s.wait()
"""


def _records(work_dir: Path) -> list[tuple[int, Any]]:
    path = work_dir / db_files.RECORD_FILE
    out = []
    for number, text in enumerate(path.read_bytes().split(b"\n")[:-1], start=1):
        try:
            out.append((number, json.loads(text)[1][1]))
        except ValueError:
            pass
    return out


def test_kill_9_then_resume_loses_nothing(tmp_path: Path, tiny_session: Any) -> None:
    wd = tmp_path / "wd"
    # the child holds its worker once batch 2 is built (8 trials measured, 8 to go), so the kill
    # lands mid-run however fast the host (racing a poll against the run could miss it)
    held, err = tmp_path / "held", tmp_path / "child.err"
    with open(err, "wb") as stderr:  # a file: a pipe nobody reads while it runs could fill up
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(wd), "16", str(held)],
                                 stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and child.poll() is None and not held.exists():
            time.sleep(0.05)
        assert child.poll() is None, err.read_text()[-2000:]
        assert held.exists(), "the child did not reach batch 2 in 600 s"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    before = _records(wd)
    assert 2 <= len(before) <= 8  # batches 0 and 1 (a batch may pick fewer than it asks for)
    session = tiny_session(wd, max_trials=16, resume=True, seed=6)
    session.start()
    assert session.wait(300) == "finished"
    trials = msviz.open(wd).trials
    assert len(trials) == 16 == session.trials_done
    by_line = {int(r.line): r.run_secs for r in trials.itertuples()}
    for line, secs in before:  # every trial measured before the kill is still there
        assert by_line[line] == tuple(secs)
    started = session.events.of_kind("started")[0]
    assert started["resumed"] is True
    first = session.events.of_kind("measured")[0]["trials"][0]
    assert first["line"] == len(before) + 1
    # The resumed population is warm-started from the database's best records.
    init = session.events.of_kind("initial_population")[0]
    assert init["from_database"] >= 1


def test_torn_work_dir_resumes(stepped: Any, tmp_path: Path, tiny_session: Any) -> None:
    done, _ = stepped
    wd = tmp_path / "torn"
    shutil.copytree(done.work_dir, wd)
    record = (wd / db_files.RECORD_FILE).read_bytes()
    last = record.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    with open(wd / db_files.RECORD_FILE, "ab") as f:
        f.write(last[: len(last) // 2])  # a crash mid-append
    with open(wd / "msviz_sidecar.jsonl", "ab") as f:
        f.write(b'{"v":1,"kind":"trial","li')
    session = tiny_session(wd, max_trials=12, resume=True)
    session.start()
    assert session.wait(300) == "finished"
    warnings = session.events.of_kind("warning")
    assert any("torn" in w["message"] for w in warnings)
    assert (wd / "msviz_torn_lines.txt").read_bytes().strip().endswith(last[: len(last) // 2])
    trials = msviz.open(wd).trials  # no MsvizWarning (they are errors in tests)
    assert len(trials) == 12 and list(trials["line"]) == list(range(1, 13))
    # Counters continue: the stepped session measured batches 0 .. k-1 in generations 0 .. k-1
    # (k >= 2: a batch may pick fewer than 4, see batch_column).
    earlier = batch_column(done, 8, 4)
    k = earlier[-1] + 1
    after = batch_column(session, 12, 4, done=8, first_batch=k)
    assert list(trials["batch"]) == earlier + after
    assert list(trials["generation"].iloc[8:]) == after  # one batch per generation
    assert session.events.of_kind("initial_population")[0]["generation"] == k
    assert trials["predicted_score"].notna().all()
    # Records from before the resume keep their lineage: a database candidate of the resumed
    # population names its record line, and has that record's decisions.
    before = [c for e in done.events.of_kind("picked") for c in e["candidates"]]
    init = session.events.of_kind("initial_population")[0]["candidates"]
    stored = [c for c in init if c["origin"] == "database"]
    assert stored
    for cand in stored:
        line = cand["ancestor_line"]
        assert line is not None and 1 <= line <= 8
        assert cand["decisions"] == before[line - 1]["decisions"]
        # Its design space, found from its trace, is the one the sidecar stored for that line.
        assert cand["design_space"] == before[line - 1]["design_space"] is not None
    # So every trial names its design space, mutants of database records too.
    assert trials["design_space"].notna().all()
