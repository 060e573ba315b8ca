"""Sibling carry within one run: a task's first batch measures the best schedules of the run's
tasks of the same operator already tuned, carried to its shape, and a later batch the new best
of a sibling that improved since (``sibling_carry``); none with ``sibling_carry=0``. Real TVM: the catalogue MLP, whose three matmul tasks
are one operator at three shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from msviz import compat
from msviz.engine import Session
from msviz.records import database as db_files
from msviz.records.sidecar import read_sidecar
from msviz.trace.carry import carry_trace
from msviz.trace.replay import default_postprocs
from tests.engine.conftest import TINY

OPTIONS: dict[str, Any] = {**TINY, "trials_per_batch": 4, "task_scheduler": "gradient",
                           "max_trials": 28}
#: The MLP's tasks in MetaSchedule's order; the three matmuls are siblings.
TASKS = ["softmax", "fused_matmul2_add1", "fused_matmul1_add_relu", "fused_matmul_add_relu"]


def _tune(work_dir: Path, **kw: Any) -> Session:
    session = Session("mlp", work_dir=work_dir, **{**OPTIONS, **kw})
    session.start()
    assert session.wait(900) == "finished"
    return session


@pytest.fixture(scope="module")
def carried_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Session, Path]:
    work_dir = tmp_path_factory.mktemp("sibling") / "wd"
    return _tune(work_dir, sibling_carry=8), work_dir


def _records(work_dir: Path) -> list[tuple[int, int, list]]:
    """(line, workload index, record JSON) of every record line, in file order."""
    lines = (work_dir / db_files.RECORD_FILE).read_text().splitlines()
    return [(n, rec[0], rec[1]) for n, rec in enumerate(map(json.loads, lines), start=1)]


def test_a_tasks_batches_measure_their_tuned_siblings_best_schedules(
        carried_run: tuple[Session, Path]) -> None:
    session, work_dir = carried_run
    trials = read_sidecar(work_dir).trials
    lines: dict[str, list[int]] = {}
    for line in sorted(trials):
        lines.setdefault(trials[line]["task"], []).append(line)
    carried = {line: t for line, t in trials.items() if t.get("origin") == "carried"}
    first: dict[str, list[str]] = {}
    later: dict[tuple[str, int], list[str]] = {}
    for line in sorted(carried):
        t = carried[line]
        assert (t["carry"], t["pick"]) == ("sibling", "carried")
        source, rank = t["carried_from"].rsplit(" best ", 1)
        if line in lines[t["task"]][:4]:
            first.setdefault(t["task"], []).append(source)
        else:  # a later batch takes a sibling's one new best
            assert rank == "1", t
            later.setdefault((t["task"], t["batch"]), []).append(source)
    # tasks 2 and 3 each start with two carries (half the batch of 4): task 2 from task 1,
    # the only matmul tuned before it; task 3 from task 2 (nearest shape) and task 1
    assert sorted(first) == [TASKS[2], TASKS[3]]
    assert first[TASKS[2]] == [f"#1 {TASKS[1]}"] * 2
    assert len(first[TASKS[3]]) == 2
    assert set(first[TASKS[3]]) <= {f"#1 {TASKS[1]}", f"#2 {TASKS[2]}"}
    # a later batch: at most two carries, each from another sibling
    for (task, _), sources in later.items():
        assert len(sources) == len(set(sources)) <= 2
        assert task != TASKS[0] and f"{TASKS.index(task)} {task}" not in " ".join(sources)
    # the softmax has no sibling; the first matmul none tuned before its first batch
    assert not any(t["task"] == TASKS[0] for t in carried.values())
    assert not any(line in lines[TASKS[1]][:4] for line in carried)
    # each carry was built, run and checked: its record holds real timings
    run_secs = {line: rec[1] for line, _, rec in _records(work_dir)}
    assert all(run_secs[line] and max(run_secs[line]) < 1.0 for line in carried)


def test_a_carry_is_the_sources_record_replayed_on_the_tasks_shape(
        carried_run: tuple[Session, Path]) -> None:
    """Each carried trial's module is one of its source task's stored records carried again,
    independently, from the database file to the task's workload."""
    session, work_dir = carried_run
    trials = read_sidecar(work_dir).trials
    workloads = [json.loads(line) for line in
                 (work_dir / db_files.WORKLOAD_FILE).read_text().splitlines()]
    mods = [compat.ms.database.Workload.from_json(w) for w in workloads]
    records = _records(work_dir)
    index_of = {trials[line]["task"]: w for line, w, _ in records if line in trials}
    checked = 0
    for line, t in sorted(trials.items()):
        if t.get("origin") != "carried":
            continue
        source = t["carried_from"].split(" ")[1]
        mine = mods[index_of[t["task"]]].mod
        want = {int(compat.structural_hash(carry_trace(
                    compat.tuning_record_from_json(rec, mods[w]).trace, mine,
                    default_postprocs(mine, "llvm")).schedule.mod))
                for n, w, rec in records if w == index_of[source] and n < line
                and rec[1] and rec[1][0] < 1e9}
        assert int(t["shash"]) in want, f"line {line}: not a carry of {source}'s records"
        checked += 1
    assert checked >= 4


def test_no_carry_when_switched_off(tmp_path: Path) -> None:
    _tune(tmp_path / "wd", sibling_carry=0, max_trials=12)
    trials = read_sidecar(tmp_path / "wd").trials
    assert len(trials) == 12
    assert not [t for t in trials.values() if t.get("origin") == "carried"]


def test_the_knob_refuses_a_negative_count(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sibling_carry must be an int >= 0"):
        Session("mlp", work_dir=tmp_path / "wd", sibling_carry=-1)
