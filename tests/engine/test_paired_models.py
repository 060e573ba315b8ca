"""``msviz.compare_models``: two work dirs of one model built with ``Model.compile`` and timed
in paired rounds, in the engine's measuring room (never beside another measurement of this
process)."""

from __future__ import annotations

import json
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
    original_compile = msviz.models.Model.compile
    monkeypatch.setattr(paired_models, "compare_builds", watched)
    monkeypatch.setattr(msviz.models.Model, "compile", watched_compile)
    assert len(_compare(mlp_dir, other).ratio) == 2
    assert free == [False, False, False]  # two builds and the timing, each under the lock
    assert lock_free_elsewhere(MEASURING_LOCK)  # and released after


def test_a_missing_work_dir_is_named(mlp_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nowhere"):
        _compare(mlp_dir, tmp_path / "nowhere")


# -- what cannot be compared is refused (issue 53) ----------------------------------------------


def _copy_naming(mlp_dir: Path, tmp_path: Path, source: str) -> Path:
    """A copy of the MLP's work dir whose environment line names another catalogue model."""
    other = tmp_path / source
    shutil.copytree(mlp_dir, other)
    sidecar = other / "msviz_sidecar.jsonl"
    lines = []
    for text in sidecar.read_text().splitlines():
        entry = json.loads(text) if text.strip() else None
        if isinstance(entry, dict) and entry.get("kind") == "environment":
            assert entry["model"]["source"] == "mlp"
            entry["model"]["source"] = source
            text = json.dumps(entry)
        lines.append(text)
    sidecar.write_text("\n".join(lines) + "\n")
    return other


def test_work_dirs_naming_two_models_are_refused_naming_each(mlp_dir: Path,
                                                             tmp_path: Path) -> None:
    other = _copy_naming(mlp_dir, tmp_path, "resnet-block")
    with pytest.raises(msviz.errors.MsvizError) as err:
        _compare(mlp_dir, other)
    assert "'mlp'" in str(err.value) and "'resnet-block'" in str(err.value)
    assert str(other) in str(err.value)


def test_a_work_dir_of_another_workload_is_refused(mlp_dir: Path, tmp_path: Path) -> None:
    """A work dir tuned for one PrimFunc (GMM-0) holds no task of the MLP: compile_relax would
    build the MLP untuned from it and the comparison would time that as its build."""
    from tests.engine.conftest import make_tiny_session

    session = make_tiny_session(tmp_path / "gmm", max_trials=2, trials_per_batch=2)
    session.start()
    assert session.wait(600) == "finished"
    with pytest.raises(msviz.errors.MsvizError, match=r"gmm holds records of 1 workload\(s\), "
                                                      r"none of them a task of the model"):
        _compare(mlp_dir, tmp_path / "gmm")
    with pytest.raises(msviz.errors.MsvizError, match="none of them a task"):
        _compare(tmp_path / "gmm", mlp_dir)  # the model named by the second


@pytest.mark.parametrize(("settings", "named"), [
    ({"number": 0}, "number=0"), ({"repeat": 0}, "repeat=0"),
    ({"min_repeat_ms": -1}, "min_repeat_ms=-1"), ({"number": 1.5}, "number must be an int")])
def test_evaluator_settings_are_checked_as_a_session_checks_them(
        mlp_dir: Path, settings: dict, named: str) -> None:
    with pytest.raises((ValueError, TypeError), match=named):
        msviz.compare_models(mlp_dir, mlp_dir, **{"rounds": 2, "draws": 1, "number": 1,
                                                  "repeat": 1, "min_repeat_ms": 0, **settings})
    for bad in ({"number": 0}, {"repeat": 0}):  # what a Session refuses, the same way
        with pytest.raises(ValueError, match="evaluator_config"):
            msviz.Session("GMM-0", evaluator_config={"number": 1, "repeat": 1, **bad})


def test_one_round_gives_the_figures_and_no_verdict(mlp_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "copy"
    shutil.copytree(mlp_dir, other)
    got = msviz.compare_models(mlp_dir, other, rounds=1, draws=1, number=1, repeat=1,
                               min_repeat_ms=0)
    assert len(got.ratio) == 1 and got.ratio[0] == pytest.approx(got.b_us[0] / got.a_us[0])
    assert got.verdict.startswith("no verdict: too few rounds (1 round(s) in 1 process(es)")
    assert "no verdict: too few rounds" in str(got)


def test_a_missing_first_work_dir_is_named_as_missing(mlp_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nowhere is not a work dir \(it does not "
                                                r"exist\)"):
        _compare(tmp_path / "nowhere", mlp_dir)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"empty is not a work dir .it holds no"):
        _compare(mlp_dir, tmp_path / "empty")
