"""``msviz.compare_models``: two work dirs of one model built with ``compile_relax`` and timed
in paired rounds, in the engine's measuring room (never beside another measurement of this
process)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import msviz
from msviz.engine.measure.service import MEASURING_LOCK
from tests.conftest import lock_free_elsewhere
from tests.engine.conftest import TINY


@pytest.fixture(scope="module")
def mlp_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny tuning of the catalogue MLP (its environment line names the model)."""
    session = msviz.Session("mlp", work_dir=tmp_path_factory.mktemp("paired") / "stock",
                            max_trials=8, end_to_end_check=False, **{**TINY, "trials_per_batch": 2})
    session.start()
    assert session.wait(900) == "finished"
    return session.work_dir


def _compare(a: Path, b: Path) -> Any:
    return msviz.compare_models(a, b, rounds=2, draws=1, number=1, repeat=1, min_repeat_ms=0)


def test_two_work_dirs_compared_in_paired_rounds(mlp_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "mine"
    shutil.copytree(mlp_dir, other)
    got = _compare(mlp_dir, other)  # the model: the one the first dir's environment names
    assert got.names == ("stock", "mine")
    assert len(got.a_us) == len(got.b_us) == 2 and min(got.a_us + got.b_us) > 0
    np.testing.assert_allclose(got.ratio, np.array(got.b_us) / np.array(got.a_us))
    assert got.median == pytest.approx(float(np.median(got.ratio)))


def test_compare_builds_and_times_under_the_measuring_lock(mlp_dir: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """While it builds and times, no other thread can take the engine's measuring lock (a
    tuning batch of this process waits for it)."""
    from msviz.engine.measure import requests as paired_models

    other = tmp_path / "mine"
    shutil.copytree(mlp_dir, other)
    free: list[bool] = []

    def watched(*args: Any, **kwargs: Any) -> Any:
        free.append(lock_free_elsewhere(MEASURING_LOCK))
        return original(*args, **kwargs)

    def watched_compile(*args: Any, **kwargs: Any) -> Any:
        free.append(lock_free_elsewhere(MEASURING_LOCK))
        return original_compile(*args, **kwargs)

    original = paired_models.compare_builds
    original_compile = msviz.compat.ms.relax_integration.compile_relax
    monkeypatch.setattr(paired_models, "compare_builds", watched)
    monkeypatch.setattr(msviz.compat.ms.relax_integration, "compile_relax", watched_compile)
    assert len(_compare(mlp_dir, other).ratio) == 2
    assert free == [False, False, False]  # two builds and the timing, each under the lock
    assert lock_free_elsewhere(MEASURING_LOCK)  # and released after


def test_a_missing_work_dir_is_named(mlp_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nowhere"):
        _compare(mlp_dir, tmp_path / "nowhere")
