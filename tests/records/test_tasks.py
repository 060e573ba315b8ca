"""The best trial is stock's pick: ``Run.best()``, the task table and the trials' ranking against
stock ``JSONDatabase.get_top_k`` / ``query_tuning_record`` reading the same files.

The records are hand-made, of every kind (TVM's own ``test_json_database_get_top_k`` set, several
runs per record, zero and negative times, ``1e10`` among real times, failures as ``None``, ``[]``
and all-``1e10``, equal means in file order, means equal once in µs, means that differ only by the
order of their sum, traces without a schedule instruction), on several workloads whose records
are interleaved in the file; stock ``JSONDatabase.commit_tuning_record`` writes them. Each record
is known by the decision of its trace's ``SampleCategorical`` (its index in the file). A mean
time of zero or less cannot be true: stock ranks it, msviz flags it and never picks it.
"""

from __future__ import annotations

import json
import math
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

import msviz
from msviz import compat, workloads
from msviz.records import open_cache
from msviz.records.live import LiveRun
from msviz.records.row import mean_run_secs
from msviz.records.run import UNSCHEDULED_ERROR

#: Two times one rounding apart whose µs values are equal (the later one is the faster).
X = 1.6999999999999963e-05
Y = math.nextafter(X, 0.0)

#: Per catalogue workload, its records: (trace kind, run_secs). Kinds: "scheduled" (a schedule
#: instruction), "postproc" (EnterPostproc first), "empty" (no instruction at all).
RECORDS: dict[str, list[tuple[str, Any]]] = {
    # TVM's own test_json_database_get_top_k: stock ranks [0,2], [2], [1.5,4.5], [3,1e10]
    "GMM-0": [("scheduled", s) for s in
              ([1.5, 4.5], [], [0.0, 2.0], None, [2.0], [3.0, 1e10], [1e10])],
    # equal means keep file order; X and Y meet in µs, Y (later) is stock's first
    "SFM-0": [("scheduled", s) for s in
              ([2e-5], [1e-5, 3e-5], [2e-5], [3e-5, 1e-5], [X], [1e10, 1e10], [Y], [X, X])],
    # measured, and faster, but with no schedule instruction: stock never picks them
    "NRM-0": [("empty", [1e-6]), ("postproc", [5e-7]), ("scheduled", [1e10, 1e10]),
              ("scheduled", [4e-6]), ("scheduled", [4e-6]), ("postproc", [1e-7, 1e10])],
    # what no kernel takes, but stock reads and ranks as it is
    "GMM-1": [("scheduled", s) for s in
              ([2e-5], [0.0], [-1.0], [1e10, -1e10], [-0.5, -1.5], [1e10, 1e10, 3e-5])],
    # nothing stock would pick
    "C1D-0": [("scheduled", None), ("scheduled", []), ("scheduled", [1e10]),
              ("scheduled", [1e10, 1e10]), ("postproc", [3e-6]), ("empty", [2e-6])],
    # the same times summed in two orders: 0.20000000000000004 and 0.19999999999999998
    "GMM-2": [("scheduled", [0.1, 0.2, 0.3]), ("scheduled", [0.3, 0.2, 0.1])],
}


def _file_order() -> list[tuple[str, str, Any]]:
    """The records round-robin over the workloads (so their lines interleave)."""
    queues = {name: list(records) for name, records in RECORDS.items()}
    out = []
    while any(queues.values()):
        for name, queue in queues.items():
            if queue:
                out.append((name, *queue.pop(0)))
    return out


def _trace(mod: Any, kind: str, k: int, n: int) -> Any:
    """A trace on ``mod`` whose SampleCategorical decides ``k`` (of ``n``)."""
    sch = compat.Schedule(mod)
    if kind == "empty":
        return sch.trace
    if kind == "postproc":
        sch.enter_postproc()
    sch.get_sblock("root")
    sch.sample_categorical(list(range(n)), [1.0 / n] * n, decision=k)
    return sch.trace


def _decision(record: Any) -> int:
    """Which record this is: its trace's one decision."""
    ((_, decision),) = record.trace.as_json()[1]
    return int(decision)


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:data:`RECORDS` written by stock ``JSONDatabase``, in :func:`_file_order`."""
    ms = compat.ms
    wd = tmp_path_factory.mktemp("stock_best")
    db = ms.database.JSONDatabase(work_dir=str(wd))
    mods = {name: workloads.get(name).mod for name in RECORDS}
    tokens = {name: db.commit_workload(mod) for name, mod in mods.items()}
    target = compat.make_target("llvm")
    order = _file_order()
    for k, (name, kind, secs) in enumerate(order):
        args = ms.arg_info.ArgInfo.from_prim_func(mods[name]["main"])
        db.commit_tuning_record(ms.database.TuningRecord(
            _trace(mods[name], kind, k, len(order)), tokens[name], secs, target, args))
    return wd


def _stock(work_dir: Path) -> dict[str, tuple[list[int], int | None]]:
    """Per workload: stock's ranking (each record's index in the file) from ``get_top_k``, and
    the record ``query_tuning_record`` gives (None: none), from a database reading the files."""
    db = compat.ms.database.JSONDatabase(work_dir=str(work_dir))
    target = compat.make_target("llvm")
    out = {}
    for name in RECORDS:
        mod = workloads.get(name).mod
        ranked = [_decision(r) for r in db.get_top_k(db.commit_workload(mod), 1000)]
        top = db.query_tuning_record(mod, target, "main")
        out[name] = ranked, None if top is None else _decision(top)
    return out


def _impossible() -> list[int]:
    """The record indices msviz flags impossible: measured, scheduled, with a mean time of zero
    or less (stock ranks them as they are; nothing here is faster than a CPU but those)."""
    return [k for k, (_, kind, secs) in enumerate(_file_order())
            if kind == "scheduled" and secs and secs.count(1e10) < len(secs)
            and mean_run_secs(secs) <= 0]


def _open(work_dir: Path) -> msviz.Run:
    with pytest.warns(msviz.MsvizWarning) as said:  # the sub-ns lines, then the impossible
        run = msviz.open(work_dir)
    lines = [k + 1 for k, (_, _, secs) in enumerate(_file_order())
             if secs and min(secs) < 1e-9]
    path = work_dir / "database_tuning_record.json"
    messages = [str(w.message) for w in said]
    assert messages[0] == (
        f"{path}: {len(lines)} record line(s) hold "
        f"run_secs below 1 ns, zero or negative (line {', '.join(map(str, lines))}): no kernel "
        "runs that fast, but MetaSchedule ranks them as they are (the least mean is what "
        "compile_tir picks); msviz never picks one faster than the machine can be (status "
        "'impossible')")
    flagged = [k + 1 for k in _impossible()]
    assert len(messages) == 2 and messages[1].startswith(
        f"{path}: {len(flagged)} record(s) cannot be true (status 'impossible', never the best")
    assert all(f"line {line}: a mean run time of" in messages[1] for line in flagged)
    return run


def _task(name: str) -> str:
    return f"workload_{list(RECORDS).index(name)}"  # no logs: tasks named by workload index


def _assert_stock_pick(run: msviz.Run, stock: dict[str, tuple[list[int], int | None]]) -> None:
    trials, tasks = run.trials, run.tasks.set_index("task")
    impossible = set(_impossible())
    for name, (ranked, top) in stock.items():
        task = _task(name)
        assert top == (ranked[0] if ranked else None)  # stock agrees with itself
        # msviz ranks as stock, less the records that cannot be true (never its best)
        ranked = [k for k in ranked if k not in impossible]
        top = ranked[0] if ranked else None
        mine = trials[trials["task"] == task]
        ok = mine[mine["status"] == "ok"]
        # the trials msviz counts as measured are those stock ranks, in stock's order
        order = sorted(ok.index, key=lambda i: mean_run_secs(trials.at[i, "run_secs"]))
        assert [int(trials.at[i, "line"]) - 1 for i in order] == ranked, name
        for i in ok.index:  # the latency column is stock's ranking key
            assert trials.at[i, "latency_us"] == mean_run_secs(trials.at[i, "run_secs"]) * 1e6
        assert tasks.at[task, "failed"] == len(mine) - len(ranked)
        if top is None:
            with pytest.raises(ValueError, match="has no successful trial"):
                run.best(task)
            assert math.isnan(tasks.at[task, "best_latency_us"])
            continue
        best = run.best(task)
        assert best.run.trials.at[best.index, "line"] - 1 == top, name
        assert _decision(best.record) == top
        assert list(best.run_secs) == [float(s) for s in best.record.run_secs]
        assert tasks.at[task, "best_latency_us"] == best.latency_us


def test_best_is_stocks_pick(work_dir: Path) -> None:
    stock = _stock(work_dir)
    # the premises: stock ranks each case as the comments above say
    secs = [s for _, _, s in _file_order()]
    assert [secs[i] for i in stock["GMM-0"][0]] == [[0.0, 2.0], [2.0], [1.5, 4.5], [3.0, 1e10]]
    assert [secs[i] for i in stock["SFM-0"][0][:2]] == [[Y], [X]]
    assert [secs[i] for i in stock["GMM-2"][0]] == [[0.3, 0.2, 0.1], [0.1, 0.2, 0.3]]
    assert [secs[i] for i in stock["GMM-1"][0][:2]] == [[-1.0], [-0.5, -1.5]]
    assert [secs[i] for i in stock["NRM-0"][0]] == [[4e-6], [4e-6]]
    assert stock["C1D-0"] == ([], None)
    run = _open(work_dir)
    _assert_stock_pick(run, stock)
    # a measured record without a schedule instruction: failed, and why
    nrm = run.trials[run.trials["task"] == _task("NRM-0")]
    assert list(nrm["status"]) == ["failed", "failed", "failed", "ok", "ok", "failed"]
    assert list(nrm["error"]) == [UNSCHEDULED_ERROR, UNSCHEDULED_ERROR, None, None, None,
                                  UNSCHEDULED_ERROR]
    # a session's live table ranks as the work dir's
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*below 1 ns", msviz.MsvizWarning)
        warnings.filterwarnings("ignore", ".*cannot be true", msviz.MsvizWarning)
        live = LiveRun(work_dir)
    assert live.tasks["best_trial"].equals(run.tasks["best_trial"])


def test_cached_open_is_stocks_pick_too(work_dir: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(open_cache, "MIN_CACHED_BYTES", 0)
    monkeypatch.setenv("MSVIZ_CACHE_DIR", str(tmp_path / "cache"))
    first = _open(work_dir)  # writes the cache
    assert list((tmp_path / "cache").iterdir())
    again = _open(work_dir)  # reads it
    assert again._records.unscheduled == first._records.unscheduled != frozenset()
    _assert_stock_pick(again, _stock(work_dir))


@pytest.mark.parametrize("top_k", [1, 3, None])
def test_top_k_database_is_stocks_top_k(work_dir: Path, top_k: int | None) -> None:
    """``msviz.database(work_dir, top_k=k)`` (what ``compile_tir`` is given) holds, per
    workload, the records stock's ``get_top_k(workload, k)`` gives, and ranks them as stock,
    less the records that cannot be true (kept out, named in a warning: compile_tir would rank
    them first)."""
    stock = _stock(work_dir)
    with pytest.warns(msviz.MsvizWarning, match="cannot be true"):
        db = msviz.database(work_dir, top_k=top_k)
    target = compat.make_target("llvm")
    impossible = set(_impossible())
    for name, (ranked, _) in stock.items():
        ranked = [k for k in ranked if k not in impossible]
        top = ranked[0] if ranked else None
        mod = workloads.get(name).mod
        kept = [_decision(r) for r in db.get_top_k(db.commit_workload(mod), 1000)]
        assert kept == (ranked if top_k is None else ranked[:top_k]), name
        picked = db.query_tuning_record(mod, target, "main")
        assert (None if picked is None else _decision(picked)) == top, name


@pytest.mark.parametrize("keep_top", [1, 3])
def test_the_engines_database_holds_stocks_top_k(work_dir: Path, tmp_path: Path,
                                                 keep_top: int) -> None:
    """The session's ``WorkDirDatabase`` (resuming a work dir) holds, per workload, the
    records stock's ``get_top_k(workload, keep_top)`` gives, ranked as stock."""
    from msviz.engine.tuning.work_dir_database import WorkDirDatabase

    copy = tmp_path / "wd"
    shutil.copytree(work_dir, copy)
    stock = _stock(work_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", msviz.MsvizWarning)  # the sub-ns lines, said by open()
        db = WorkDirDatabase(copy, keep_top=keep_top)
        for name, (ranked, _) in stock.items():
            held = db.get_top_k(db.commit_workload(workloads.get(name).mod), 1000)
            assert [_decision(r) for r in held] == ranked[:keep_top], name


def test_a_boolean_run_sec_as_stock_reads_it(work_dir: Path, tmp_path: Path) -> None:
    """Stock reads ``true`` in run_secs as 1.0; ``msviz.open`` and ``msviz.database`` rank
    such a record as stock does (not skip it as corrupt)."""
    copy = tmp_path / "wd"
    shutil.copytree(work_dir, copy)
    path = copy / "database_tuning_record.json"
    lines = path.read_text().splitlines()
    k = next(i for i, (name, _, secs) in enumerate(_file_order())
             if name == "GMM-0" and secs == [2.0])
    index, body = json.loads(lines[k])
    body[1] = [True]  # mean 1.0, as [0.0, 2.0] (earlier in the file)
    lines[k] = json.dumps([index, body], separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")
    stock = _stock(copy)
    secs = [s for _, _, s in _file_order()]
    assert stock["GMM-0"][0][:2] == [secs.index([0.0, 2.0]), k]  # the premise
    _assert_stock_pick(_open(copy), stock)
    with pytest.warns(msviz.MsvizWarning, match="cannot be true"):  # kept out, named
        db = msviz.database(copy, top_k=None)
    mod = workloads.get("GMM-0").mod
    impossible = set(_impossible())
    assert [_decision(r) for r in db.get_top_k(db.commit_workload(mod), 1000)] == \
        [k for k in stock["GMM-0"][0] if k not in impossible]
