"""A session with a tuning library (``library=``): an exact hit starts at the library's best
(committed, not measured, not counted), ``reuse="skip"`` gives it no trials, a sibling shape
measures the library's schedules carried to it first (results checked), the cost model starts
trained, and nothing is written into the library. Real TVM, GMM at two shapes."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import msviz
from msviz import workloads
from msviz.engine import Session
from msviz.errors import MsvizWarning
from msviz.records import database as db_files
from msviz.records.sidecar import read_sidecar
from tests.engine.conftest import TINY

#: The library's workload and a sibling of it (another M).
SHAPE, SIBLING = (1, 64, 64, 64), (1, 48, 64, 64)


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A library: msviz's session on GMM (1, 64, 64, 64), 12 trials."""
    wd = tmp_path_factory.mktemp("lib") / "gmm64"
    session = Session(workloads.get("GMM", shape=SHAPE), work_dir=wd, max_trials=12,
                      trials_per_batch=6, **TINY)
    session.start()
    assert session.wait(600) == "finished"
    return wd


def _records(work_dir: Path) -> list[list[Any]]:
    lines = (work_dir / db_files.RECORD_FILE).read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _mean_us(run_secs: list[float]) -> float:
    return float(np.mean(run_secs)) * 1e6


def _library_best_us(library: Path) -> float:
    ok = [_mean_us(r[1][1]) for r in _records(library) if r[1][1] and r[1][1][0] < 1e9]
    return min(ok)


def _trial_lines(work_dir: Path) -> list[dict]:
    trials = read_sidecar(work_dir).trials
    return [trials[line] for line in sorted(trials)]


def test_an_exact_hit_with_skip_starts_at_the_librarys_best_and_gets_no_trial(
        library: Path, tmp_path: Path) -> None:
    before = _digest(library)
    session = Session(workloads.get("GMM", shape=SHAPE), work_dir=tmp_path / "wd",
                      max_trials=8, trials_per_batch=4, library=library, reuse="skip", **TINY)
    session.start()
    assert session.wait(600) == "finished"
    assert session.trials_done == 0
    assert "reuse='skip'" in session.end_reason or "reuse='skip'" in json.dumps(
        [e.data for e in session.events.snapshot() if e.kind == "task_done"])
    # the run's database holds the library's fastest records, with their times, and no other
    lib_ok = sorted(_mean_us(r[1][1]) for r in _records(library)
                    if r[1][1] and r[1][1][0] < 1e9)
    got = sorted(_mean_us(r[1][1]) for r in _records(tmp_path / "wd"))
    assert got == pytest.approx(lib_ok[:16])
    assert session.best_secs * 1e6 == pytest.approx(_library_best_us(library))
    trials = _trial_lines(tmp_path / "wd")
    assert {(t["origin"], t["carry"]) for t in trials} == {("library", "exact")}
    assert all(t["carried_from"].startswith("gmm64/") for t in trials)
    cov = [e.data for e in session.events.snapshot() if e.kind == "library_coverage"]
    assert [t["match"] for t in cov[-1]["coverage"]["tasks"]] == ["exact"]
    assert _digest(library) == before  # nothing written into the library


def test_a_sibling_measures_carried_schedules_first_results_checked(
        library: Path, tmp_path: Path) -> None:
    before = _digest(library)
    wd = tmp_path / "wd"
    session = Session(workloads.get("GMM", shape=SIBLING), work_dir=wd, max_trials=8,
                      trials_per_batch=8, library=library, check="measured", **TINY)
    session.start()
    assert session.wait(600) == "finished"
    reuse = [e.data for e in session.events.snapshot() if e.kind == "library_reuse"][-1]
    row = reuse["tasks"][0]
    assert row["match"] == "sibling"
    # the library's 8 fastest successful records of its one workload were tried
    lib_ok = [r for r in _records(library) if r[1][1] and r[1][1][0] < 1e9]
    assert row["tried"] == min(8, len(lib_ok))
    trials = _trial_lines(wd)
    carried = [t for t in trials if t.get("origin") == "library"]
    assert len(carried) == row["measured"] >= 1
    assert row["measured"] <= row["replayed"] <= row["tried"]
    assert all(t["batch"] == 0 and t["carry"] == "sibling" for t in carried)
    # every carried schedule ran and its result matched numpy's (check="measured")
    assert all(t.get("error_kind") is None for t in carried)
    assert [t["check"] for t in carried] == ["ok"] * len(carried)
    # ranked by the cost model the library trained first, best predicted measured first
    scores = [t["predicted_score"] for t in carried]
    assert None not in scores and scores == sorted(scores, reverse=True), scores
    # M 64 -> 48: some tile of M had to change in every carried schedule
    assert all(t["adjusted"] for t in carried)
    # the batch is filled by the search: 8 trials, carried ones counted
    assert session.trials_done == 8
    assert reuse["pretrained"] >= 1  # the cost model learned the library's records first
    assert _digest(library) == before


def test_improve_tunes_on_from_the_librarys_best(library: Path, tmp_path: Path) -> None:
    session = Session(workloads.get("GMM", shape=SHAPE), work_dir=tmp_path / "wd",
                      max_trials=4, trials_per_batch=4, library=library, **TINY)
    session.start()
    assert session.wait(600) == "finished"
    assert session.trials_done == 4  # the library's records are not trials of this run
    rows = session.trials
    measured = rows[rows["origin"] != "library"]
    assert len(measured) == 4
    best_lib = _library_best_us(library)
    assert session.best_secs * 1e6 <= best_lib + 1e-6
    assert math.isfinite(session.best_secs)


def test_a_bad_library_or_reuse_is_named() -> None:
    with pytest.raises(ValueError, match="reuse must be one of 'improve', 'skip'"):
        Session("GMM-0", reuse="always")
    with pytest.raises(TypeError, match="library must be a path"):
        Session("GMM-0", library=3)
    with pytest.warns(MsvizWarning, match="library: somewhere: does not exist"):  # said now
        assert msviz.Session("GMM-0", library="somewhere").config.library == ("somewhere",)


def test_a_library_with_bad_sources_is_used_and_each_named_once(
        library: Path, tmp_path: Path) -> None:
    """A team folder: the good library, a work dir whose record file is garbage, a bundle of
    another TVM release and a work dir of another CPU: the session tunes on, each bad source
    is named once, the other CPU's records are siblings only, nothing is written there."""
    team = tmp_path / "team"
    shutil.copytree(library, team / "good")
    corrupt = team / "corrupt"
    shutil.copytree(library, corrupt)
    (corrupt / db_files.RECORD_FILE).write_text("not json\n{broken\n")
    msviz.bundle(library, tmp_path / "lib.zip")
    with zipfile.ZipFile(tmp_path / "lib.zip") as zin, \
            zipfile.ZipFile(team / "old.zip", "w") as zout:  # a bundle another TVM wrote
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "manifest.json":
                data = json.dumps({**json.loads(data), "environment": {
                    "versions": {"tvm": "0.19.0"}}}).encode()
            zout.writestr(info, data)
    other = Session(workloads.get("GMM", shape=SHAPE), work_dir=team / "haswell",
                    target={"kind": "llvm", "mcpu": "haswell", "num-cores": 2}, max_trials=4,
                    trials_per_batch=4, end_to_end_check=False, **TINY)
    other.start()
    assert other.wait(600) == "finished"
    before = _digest(team)
    with pytest.warns(MsvizWarning) as said:  # each bad source named when it is made, too
        session = Session(workloads.get("GMM", shape=SHAPE), work_dir=tmp_path / "wd",
                          max_trials=4, trials_per_batch=4, library=team, **TINY)
    for name in ("corrupt", "old.zip", "haswell"):
        assert sum(name in str(w.message) for w in said) == 1, (name, [str(w.message)
                                                                       for w in said])
    session.start()
    assert session.wait(600) == "finished"
    assert session.trials_done == 4
    warned = [e.data["message"] for e in session.events.snapshot() if e.kind == "warning"
              and e.data["message"].startswith("library: ")]
    for name in ("corrupt", "old.zip", "haswell"):
        assert sum(name in m for m in warned) == 1, (name, warned)
    cov = [e.data for e in session.events.snapshot() if e.kind == "library_coverage"][-1]
    task = cov["coverage"]["tasks"][0]
    assert task["match"] == "exact" and task["source"].startswith("good/"), task
    assert _digest(team) == before


def test_open_with_a_library_says_what_it_covers(library: Path) -> None:
    run = msviz.open(library, library=[library])
    name = workloads.get("GMM", shape=SHAPE).name  # the library session's task
    assert [(t.match, t.source) for t in run.coverage.tasks] == [("exact", f"gmm64/{name}")]
    assert run.coverage.tasks[0].best_us == pytest.approx(_library_best_us(library))
    assert msviz.open(library).coverage is None  # no library, no coverage line


def test_the_cli_prints_coverage_and_tunes_with_a_library(library: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    from msviz.cli import main

    assert main(["coverage", "GMM-0", "--library", str(library), "--no-untuned"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.lstrip().startswith("0 "))
    name = workloads.get("GMM", shape=SHAPE).name
    assert row.split()[3:4] == ["sibling"] and f"gmm64/{name}" in row, out
    assert "1 sibling" in out, out
    wd = tmp_path / "wd"
    assert main(["tune", "GMM-0", "--library", str(library), "--trials", "4", "--batch", "4",
                 "--population-size", "16", "--genetic-num-iters", "1", "--min-repeat-ms", "0",
                 "--work-dir", str(wd), "--no-report"]) == 0
    first = [t for t in _trial_lines(wd) if t["batch"] == 0]
    assert len(first) == 4 and first[0]["origin"] == "library", first  # carried ones first
