"""The open cache: a cached open equals a fresh read (whole frames, warnings); a stale,
corrupt or unwritable cache is rebuilt or skipped, never trusted."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

import msviz
from msviz.records import open_cache
from msviz.records.database import RECORD_FILE


@pytest.fixture
def cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Caching on for the small test dirs, into a folder of this test's own."""
    monkeypatch.setattr(open_cache, "MIN_CACHED_BYTES", 0)
    monkeypatch.setenv("MSVIZ_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _open(work_dir: Path) -> tuple[msviz.Run, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = msviz.open(work_dir)
    return run, [f"{type(w.message).__name__}: {w.message}" for w in caught]


def _uncached(work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[msviz.Run, list[str]]:
    with monkeypatch.context() as m:
        m.setattr(open_cache, "MIN_CACHED_BYTES", 1 << 60)
        return _open(work_dir)


def _assert_same(a: msviz.Run, b: msviz.Run) -> None:
    pd.testing.assert_frame_equal(a.trials, b.trials)
    pd.testing.assert_frame_equal(a.tasks, b.tasks)
    pd.testing.assert_frame_equal(a.task_table, b.task_table)
    assert a.total_latency_us == b.total_latency_us
    assert tuple(a._records) == tuple(b._records)


@pytest.fixture
def torn_gmm(stock_work_dirs: dict[str, Path], tmp_path: Path) -> Path:
    """The stock GMM dir (with its failed trials and logs) and a torn last line."""
    wd = Path(shutil.copytree(stock_work_dirs["GMM"], tmp_path / "gmm"))
    lines = (wd / RECORD_FILE).read_text().splitlines(keepends=True)
    (wd / RECORD_FILE).write_text("".join(lines) + lines[0][:70])
    return wd


def test_cached_open_equals_a_fresh_read(torn_gmm: Path, cached: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fresh, said = _uncached(torn_gmm, monkeypatch)
    assert not cached.exists()
    first, said_first = _open(torn_gmm)  # reads, then writes the cache
    assert [p.name for p in cached.iterdir()] == [open_cache.cache_path(torn_gmm).name]
    second, said_second = _open(torn_gmm)  # from the cache
    assert said == said_first == said_second and len(said) == 1 and "torn" in said[0]
    _assert_same(fresh, first)
    _assert_same(fresh, second)
    assert (fresh.trials["status"] != "ok").sum() == 4  # the failed builds, with their logs
    assert second.trials["error"].notna().sum() == 4
    assert second.best().latency_us == fresh.best().latency_us
    assert str(second.best().trace) == str(fresh.best().trace)  # offsets still find traces


def test_stale_cache_is_rebuilt(torn_gmm: Path, cached: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    _open(torn_gmm)
    path = torn_gmm / RECORD_FILE
    lines = path.read_text().splitlines(keepends=True)
    # an append (the torn line completed, one more record)
    path.write_text("".join(lines[:-1]) + lines[0] + lines[1])
    run, said = _open(torn_gmm)
    assert said == [] and len(run.trials) == len(lines) + 1
    _assert_same(run, _uncached(torn_gmm, monkeypatch)[0])
    # an edit in place that keeps the size: one digit of a run time
    text = path.read_text()
    where = text.rindex(",{") - 3
    digit = "1" if text[where] != "1" else "2"
    path.write_text(text[:where] + digit + text[where + 1 :])
    run, _ = _open(torn_gmm)
    fresh = _uncached(torn_gmm, monkeypatch)[0]
    _assert_same(run, fresh)


def test_corrupt_cache_is_rebuilt(torn_gmm: Path, cached: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = _uncached(torn_gmm, monkeypatch)[0]
    _open(torn_gmm)
    cache = open_cache.cache_path(torn_gmm)
    for garbage in (b"not parquet at all", cache.read_bytes()[: cache.stat().st_size // 2]):
        cache.write_bytes(garbage)
        run, said = _open(torn_gmm)
        assert len(said) == 1
        _assert_same(run, fresh)
        assert open_cache.load(torn_gmm)[0] is not None  # written anew, and valid


def test_cache_for_another_state_is_not_trusted(torn_gmm: Path, cached: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _open(torn_gmm)
    other = Path(shutil.copytree(torn_gmm, tmp_path / "other"))
    lines = (other / RECORD_FILE).read_text().splitlines(keepends=True)
    (other / RECORD_FILE).write_text("".join(lines[:3]))
    # the other dir's cache file holds this dir's state: its key does not match
    shutil.copy(open_cache.cache_path(torn_gmm), open_cache.cache_path(other))
    run, said = _open(other)
    assert said == [] and len(run.trials) == 3
    _assert_same(run, _uncached(other, monkeypatch)[0])


def test_unwritable_cache_is_skipped(torn_gmm: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(open_cache, "MIN_CACHED_BYTES", 0)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("MSVIZ_CACHE_DIR", str(blocker / "cache"))  # under a file: not a dir
    run, said = _open(torn_gmm)
    assert len(said) == 1
    _assert_same(run, _uncached(torn_gmm, monkeypatch)[0])


def test_small_work_dirs_are_not_cached(torn_gmm: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MSVIZ_CACHE_DIR", str(tmp_path / "cache"))
    assert (torn_gmm / RECORD_FILE).stat().st_size < open_cache.MIN_CACHED_BYTES
    _open(torn_gmm)
    assert not (tmp_path / "cache").exists()
