"""A resume reads the stored records once and trains on a bounded sample of them."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from msviz.engine.tuning import stored
from msviz.records import database as db_files

NAN = math.nan


def test_training_sample_spreads_over_the_ranking() -> None:
    secs = [5.0, NAN, 1.0, 4.0, 2.0, 3.0, NAN, 6.0]
    # ranked: 1.0 (2), 2.0 (4), 3.0 (5), 4.0 (3), 5.0 (0), 6.0 (7); failures never picked
    assert stored.training_sample(secs, at_most=10) == [2, 4, 5, 3, 0, 7]
    # 3 of 6 at ranks round(linspace(0, 5, 3)) = 0, 2, 5 (2.5 rounds to even)
    assert stored.training_sample(secs, at_most=3) == [2, 5, 7]
    assert stored.training_sample(secs, at_most=1) == [2]  # the fastest
    assert stored.training_sample([NAN, NAN]) == []
    assert stored.mean_secs([1e10]) != stored.mean_secs([1e10])  # a failure: NaN
    assert stored.mean_secs([2.0, 4.0]) == 3.0


def _lines(work_dir: Path) -> list[tuple[int, list, int | None]]:
    """(line, run_secs, the sidecar's shash) of each record, read from the files."""
    side = {}
    for text in (work_dir / "msviz_sidecar.jsonl").read_text().splitlines():
        entry = json.loads(text)
        if entry.get("kind") == "trial":
            side[entry["line"]] = entry.get("shash")
    out = []
    text = (work_dir / db_files.RECORD_FILE).read_text().splitlines()
    for number, line in enumerate(text, start=1):
        out.append((number, json.loads(line)[1][1], side.get(number)))
    return out


def test_resume_trains_on_a_bounded_sample_and_never_repicks(
        stepped: Any, tmp_path: Path, tiny_session: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    done, _ = stepped
    wd = tmp_path / "wd"
    shutil.copytree(done.work_dir, wd)
    before = _lines(wd)
    ok = [line for line, secs, _ in before if secs and max(secs) < 1e10]
    assert len(before) == 8 and len(ok) >= 4
    monkeypatch.setattr(stored, "TRAIN_AT_MOST", 3)
    session = tiny_session(wd, max_trials=16, resume=True)
    session.start()
    assert session.wait(300) == "finished"
    learned = [e for e in session.events.of_kind("cost_model_updated")
               if e["source"] == "database"]
    assert [(e["trained_on"], e["stored"]) for e in learned] == [(3, 8)]
    after = _lines(wd)
    assert len(after) == 16
    # every trial names its schedule's hash, and none of the 8 new ones repeats a stored one
    # (the sample trained on 3, but all 8 stored hashes were known to the search)
    old = {shash for _, _, shash in before}
    new = [shash for _, _, shash in after[8:]]
    assert None not in old and None not in new
    assert not old & set(new), (old, new)
