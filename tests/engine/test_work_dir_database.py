"""The session's database writes what stock ``JSONDatabase`` writes, and holds only the best
stored records of a workload."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from msviz import compat
from msviz.engine.tuning.work_dir_database import WorkDirDatabase
from msviz.records import database as db_files

ms = compat.ms


def _parsed(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _mean(secs: list) -> float:
    return sum(secs) / len(secs)


def test_lines_are_stock_json_database_lines(stepped: Any, tmp_path: Path) -> None:
    done, _ = stepped
    records = compat.JSONDatabase(work_dir=str(done.work_dir)).get_all_tuning_records()
    assert len(records) == 8
    stock_dir, mine_dir = tmp_path / "stock", tmp_path / "mine"
    stock_dir.mkdir()
    stock, mine = compat.JSONDatabase(work_dir=str(stock_dir)), WorkDirDatabase(mine_dir)
    for rec in records:
        for db in (stock, mine):
            workload = db.commit_workload(rec.workload.mod)
            db.commit_tuning_record(compat.TuningRecord(rec.trace, workload, rec.run_secs,
                                                        rec.target, rec.args_info))
    for name in (db_files.WORKLOAD_FILE, db_files.RECORD_FILE):
        # the same JSON values line for line (stock prints run_secs with 20 digits, TVM's
        # writer the 17 that read back the same double)
        assert _parsed(mine_dir / name) == _parsed(stock_dir / name), name
    assert len(mine) == 8 and len(_parsed(mine_dir / db_files.WORKLOAD_FILE)) == 1
    # stock reads the files msviz wrote
    again = compat.JSONDatabase(work_dir=str(mine_dir))
    assert len(again.get_all_tuning_records()) == 8


def test_only_the_best_stored_records_are_held(stepped: Any, tmp_path: Path) -> None:
    done, _ = stepped
    wd = tmp_path / "wd"
    shutil.copytree(done.work_dir, wd)
    lines = _parsed(wd / db_files.RECORD_FILE)
    ok = sorted(_mean(body[1]) for _, body in lines if max(body[1]) < 1e10)
    assert len(ok) >= 4
    db = WorkDirDatabase(wd, keep_top=3)
    workload = db.commit_workload(done.workload.mod)
    held = [_mean([float(s) for s in r.run_secs]) for r in db.get_top_k(workload, 10)]
    assert held == pytest.approx(ok[:3], rel=1e-12)
    assert len(db) == 8
    # a new record faster than all joins them, and its line is appended (line 9)
    best = db.get_top_k(workload, 1)[0]
    db.commit_tuning_record(compat.TuningRecord(best.trace, workload, [ok[0] / 2], best.target,
                                                best.args_info))
    held = [_mean([float(s) for s in r.run_secs]) for r in db.get_top_k(workload, 10)]
    assert held == pytest.approx([ok[0] / 2, *ok[:3]], rel=1e-12)
    after = _parsed(wd / db_files.RECORD_FILE)
    assert len(after) == 9 == len(db) and after[:8] == lines
    assert after[8][0] == 0 and after[8][1][1] == pytest.approx([ok[0] / 2], rel=1e-15)
    # the workload is not appended again
    assert len(_parsed(wd / db_files.WORKLOAD_FILE)) == 1


def test_a_record_of_an_uncommitted_workload_is_refused(stepped: Any, tmp_path: Path) -> None:
    done, _ = stepped
    rec = compat.JSONDatabase(work_dir=str(done.work_dir)).get_all_tuning_records()[0]
    db = WorkDirDatabase(tmp_path / "wd")
    with pytest.raises(ValueError, match="not committed"):
        db.commit_tuning_record(rec)
    assert (tmp_path / "wd" / db_files.RECORD_FILE).read_text() == ""
