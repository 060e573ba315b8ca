"""Records, caches and tables that must not say what is not so (issue 41, the sweep's silent
cases): a record that cannot be true is flagged and never the best; a forged open or library
cache is rebuilt, not trusted; a session refused the work dir has no trials."""

from __future__ import annotations

import io
import json
import math
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

import msviz
from msviz.engine.control.state import SessionStateError
from msviz.records import library_cache, open_cache
from msviz.records.database import RECORD_FILE
from msviz.records.quality import run_batches
from msviz.records.row import ALL_COLUMNS
from msviz.workloads import flop_count

#: GMM-0's FLOP count (2 x 128^3): 0.1 us is 41,943 GFLOPS, as the sweep saw it.
GMM_FLOP = 2 * 128**3


@pytest.fixture
def gmm(stock_work_dirs: dict[str, Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(stock_work_dirs["GMM"], tmp_path / "gmm"))


@pytest.fixture
def cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Caching on for the small test dirs, into a folder of this test's own."""
    monkeypatch.setattr(open_cache, "MIN_CACHED_BYTES", 0)
    monkeypatch.setenv("MSVIZ_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _best_line(work_dir: Path) -> tuple[str, int]:
    """The text of the work dir's best record line (stock's pick) and its line number."""
    run = msviz.open(work_dir)
    best = run.best()
    line = int(run.trials.at[best.index, "line"])
    return (work_dir / RECORD_FILE).read_text().splitlines()[line - 1], line


def _merged(work_dir: Path, record: list) -> int:
    """Append ``record`` (a record's JSON) as a merged line; returns its line number."""
    path = work_dir / RECORD_FILE
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, json.dumps(record)]) + "\n")
    return len(lines) + 1


def _with_tile(record: list, change: str) -> tuple[list, list]:
    """``record`` with its first SamplePerfectTile decision of a loop longer than 1 changed:
    ``"product"`` halves its largest factor (the product is not the loop's extent any more),
    ``"zero"`` makes its second factor 0. Returns the record and the new factors."""
    record = json.loads(json.dumps(record))
    insts, decisions = record[1][0]
    for k, (index, value) in enumerate(decisions):
        if insts[index][0] == "SamplePerfectTile" and math.prod(value) > 1:
            factors = list(value)
            if change == "product":
                big = factors.index(max(factors))
                factors[big] //= 2
            else:
                factors[1] = 0
            decisions[k] = [index, factors]
            return record, factors
    raise AssertionError("no tile decision to change")


def _assert_never_best(run: msviz.Run, line: int, reason: str) -> None:
    """The trial of record ``line`` is flagged impossible and is not the best anywhere."""
    trials = run.trials
    (row,) = trials.index[trials["line"] == line]
    assert trials.at[row, "status"] == "impossible"
    assert reason in trials.at[row, "error"]
    assert math.isnan(trials.at[row, "latency_us"]) and math.isnan(trials.at[row, "gflops"])
    best = run.best()
    assert best.index != row and best.status == "ok"
    ok = trials[trials["status"] == "ok"]
    assert best.latency_us == ok["latency_us"].min()
    assert int(run.tasks["best_trial"].iloc[0]) == best.index
    assert run.tasks["best_gflops"].iloc[0] < 1e5  # no 41,943 GFLOPS on 2 cores
    with pytest.warns(msviz.MsvizWarning, match="the records hold"):  # the merged line: unlogged
        batches, source = run_batches(run)  # the quality curve
    assert source == "logs" and batches
    assert min(min(b.latencies_us, default=math.inf) for b in batches) >= best.latency_us


# -- records that cannot be true ----------------------------------------------------------------


def test_a_record_faster_than_the_machine_is_impossible(gmm: Path) -> None:
    text, _ = _best_line(gmm)
    record = json.loads(text)
    assert record[1][2]["num-cores"] == 2 and flop_count(
        msviz.open(gmm).workload_mod(record[0])) == GMM_FLOP
    record[1][1] = [2e-8]  # 210 TFLOPS on 2 cores: above the 100 TFLOPS bound
    line = _merged(gmm, record)
    with pytest.warns(msviz.MsvizWarning, match="cannot be true") as said:
        run = msviz.open(gmm)
    assert len(said) == 1
    message = str(said[0].message)
    assert f"line {line}: 209,715 GFLOPS" in message and "2 core(s)" in message
    _assert_never_best(run, line, "GFLOPS")


@pytest.mark.parametrize("change, reason", [("product", "not to the loop extent"),
                                            ("zero", "a factor below 1")])
def test_a_decision_its_trace_cannot_hold_is_impossible(gmm: Path, change: str,
                                                        reason: str) -> None:
    """The sweep's case: a merged record with tile factors that do not multiply to the loop's
    extent, at 0.1 us (41,943 GFLOPS: below the bound, so only its trace tells)."""
    text, _ = _best_line(gmm)
    record, factors = _with_tile(json.loads(text), change)
    record[1][1] = [1e-7]
    line = _merged(gmm, record)
    with pytest.warns(msviz.MsvizWarning, match="cannot be true") as said:
        run = msviz.open(gmm)
    assert len(said) == 1 and f"line {line}: instruction #" in str(said[0].message)
    assert str(factors) in str(said[0].message)
    _assert_never_best(run, line, reason)


def test_a_negative_time_is_impossible(gmm: Path) -> None:
    text, _ = _best_line(gmm)
    record = json.loads(text)
    record[1][1] = [-1e-6]
    line = _merged(gmm, record)
    with pytest.warns(msviz.MsvizWarning) as said:
        run = msviz.open(gmm)
    messages = [str(w.message) for w in said]
    assert any(f"line {line}: a mean run time of -1e-06 s" in m for m in messages), messages
    _assert_never_best(run, line, "no kernel runs in no time")


def test_an_impossible_record_is_flagged_from_the_open_cache_too(gmm: Path,
                                                                 cached: Path) -> None:
    text, _ = _best_line(gmm)
    record, _ = _with_tile(json.loads(text), "product")
    record[1][1] = [1e-7]
    line = _merged(gmm, record)
    with pytest.warns(msviz.MsvizWarning, match="cannot be true"):
        first = msviz.open(gmm)  # reads, then writes the cache
    assert list(cached.iterdir())
    with pytest.warns(msviz.MsvizWarning, match="cannot be true"):
        again = msviz.open(gmm)  # from the cache: the same flags, said again
    pd.testing.assert_frame_equal(first.trials, again.trials)
    _assert_never_best(again, line, "not to the loop extent")


# -- caches verified against the files they stand for --------------------------------------------


def _forge_open_cache(cache: Path) -> None:
    """Make the cached trials all 1 ns, keeping the cache's key (and any trailing checksum,
    which only the work dir's contents can make anew)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    blob = cache.read_bytes()
    body, tail = (blob, b"") if blob.endswith(b"PAR1") else (blob[:-32], blob[-32:])
    table = pq.read_table(pa.BufferReader(body))
    secs = pa.array([[1e-9] for _ in range(table.num_rows)], pa.list_(pa.float64()))
    forged = table.set_column(table.schema.get_field_index("run_secs"), "run_secs", secs)
    out = io.BytesIO()
    pq.write_table(forged.replace_schema_metadata(table.schema.metadata), out)
    cache.write_bytes(out.getvalue() + tail)


def test_a_forged_open_cache_is_rebuilt(gmm: Path, cached: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(open_cache, "MIN_CACHED_BYTES", 1 << 60)
        fresh = msviz.open(gmm)
    msviz.open(gmm)  # writes the cache
    cache = open_cache.cache_path(gmm)
    _forge_open_cache(cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a forged cache's 1 ns times would be said, or flagged
        run = msviz.open(gmm)
    pd.testing.assert_frame_equal(run.trials, fresh.trials)
    assert run.best().latency_us == fresh.best().latency_us > 1.0
    state, _ = open_cache.load(gmm)  # written anew, and valid
    assert state is not None and state.records.run_secs == fresh._records.run_secs


def test_the_open_cache_checksum_covers_the_contents() -> None:
    data, digest = b"cached bytes", open_cache.content_digest([])
    blob = open_cache.sealed(data, digest)
    assert open_cache.unsealed(blob, digest) == data
    assert open_cache.unsealed(blob[:-1] + bytes([blob[-1] ^ 1]), digest) is None
    assert open_cache.unsealed(b"x" + blob[1:], digest) is None
    assert open_cache.unsealed(blob, b"\0" * 32) is None  # made for other contents
    assert open_cache.unsealed(b"short", digest) is None


def test_a_forged_library_cache_is_indexed_afresh(stock_work_dirs: dict[str, Path],
                                                  tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from msviz.records import library as library_module
    from msviz.records.library import Library

    monkeypatch.setenv("MSVIZ_CACHE_DIR", str(tmp_path / "cache"))
    source = Path(shutil.copytree(stock_work_dirs["C2D"], tmp_path / "c2d"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", msviz.MsvizWarning)
        first = Library(source)  # indexes, then caches
    (path,) = (tmp_path / "cache").glob("library-*.json")
    data = json.loads(path.read_text())
    for group in data["index"]["groups"]:  # the right key, forged latencies
        group[2] = 1e-3
    path.write_text(json.dumps(data))
    indexed = []
    index_work_dir = library_module.index_work_dir
    monkeypatch.setattr(library_module, "index_work_dir",
                        lambda wd, texts: indexed.append(wd.name) or index_work_dir(wd, texts))
    again = Library(source)
    assert indexed == ["c2d"]
    assert [e.best_us for e in again.entries] == [e.best_us for e in first.entries]
    assert all(e.best_us > 1e-3 for e in again.entries)
    assert library_cache.load(source, data["key"]) is not None  # written anew, and valid


# -- a session refused the work dir --------------------------------------------------------------


def test_a_refused_session_has_no_trials(tmp_path: Path) -> None:
    from tests.engine.conftest import make_tiny_session

    work_dir = tmp_path / "wd"
    refused = make_tiny_session(work_dir, seed=2)  # made before the first starts
    first = make_tiny_session(work_dir, max_trials=4, trials_per_batch=2)
    assert first.step("batch") is True
    assert first.wait(300) == "paused"  # one batch measured; the lock is held
    refused.start()
    assert refused.wait(60) == "failed" and "WorkDirBusyError" in refused.end_reason
    try:
        assert len(first.trials) == 2
        trials = refused.trials
        assert trials.empty and list(trials.columns) == ALL_COLUMNS
        assert trials.dtypes.equals(first.trials.dtypes)
        for what in ("best", "run"):
            with pytest.raises(SessionStateError, match="refused the work dir"):
                refused.best() if what == "best" else refused.run
    finally:
        first.stop()
        first.wait(120)
