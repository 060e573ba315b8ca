"""A Run reads; what builds, runs or writes it hands to its actions. ``msviz.open`` gives the
engine's (a trial's check under the measuring lock, exports through the archive); a Run read by
``msviz.records`` alone refuses each such call, naming ``msviz.open``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import msviz
from msviz.engine.measure import requests
from msviz.engine.measure.service import MEASURING_LOCK
from msviz.errors import MsvizError
from msviz.records import open_work_dir
from tests.conftest import lock_free_elsewhere


def test_a_run_read_by_records_alone_refuses_to_act(stock_work_dirs: dict[str, Path],
                                                    tmp_path: Path) -> None:
    run = open_work_dir(stock_work_dirs["GMM"])
    trial = run.best()
    assert trial.latency_us > 0  # reading works
    for call, what in ((trial.check, "check"), (lambda: run.to_csv(tmp_path / "t.csv"),
                                                "export"),
                       (lambda: run.model_profile(refresh=True), "profil")):
        with pytest.raises(MsvizError, match=rf"{what}.*msviz\.open\(work_dir\)"):
            call()
    assert not (tmp_path / "t.csv").exists()


def test_msviz_open_checks_under_the_measuring_lock(stock_work_dirs: dict[str, Path],
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    free: list[bool] = []

    def watched(*args, **kwargs):
        free.append(lock_free_elsewhere(MEASURING_LOCK))
        return original(*args, **kwargs)

    original = requests.check_schedule
    monkeypatch.setattr(requests, "check_schedule", watched)
    run = msviz.open(stock_work_dirs["GMM"])
    result = run.best().check()
    assert result.ok and free == [False]
    path = run.to_csv(tmp_path / "t.csv")  # the archive writes it
    assert len(pd.read_csv(path)) == len(run.trials)
