"""Result checking with real TVM: a deliberately wrong schedule is caught, a right one passes.

The wrong kernel: GMM-0 with its accumulator moved to a float16 cache buffer
(``cache_write`` + ``unsafe_set_dtype``): it builds, runs and is parallel, but its sums lose
precision (about 94% of the outputs are off by up to 0.05). The right answers come from NumPy.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import msviz
from msviz import compat, workloads
from msviz.bench.schedule import (
    CheckResult,
    Reference,
    _run,
    check_schedule,
    compare,
    default_tolerance,
    parallel_reference,
    random_inputs,
    reduction_length,
    rounding_atol,
)
from msviz.engine.measure import MeasureResult, MeasuringService
from msviz.engine.measure.check import ResultChecker
from msviz.engine.tuning.session_tuners import close_tuners, make_tuners
from msviz.records import database as db_files
from msviz.records.sidecar import read_sidecar
from msviz.report import render_report
from msviz.views.tables import failure_triage_info, trial_page_info


def _root_conftest() -> Any:
    """tests/conftest.py (its ``tune_stock``), loaded under a name of its own."""
    path = Path(__file__).resolve().parents[1] / "conftest.py"
    spec = importlib.util.spec_from_file_location("msviz_tests_root_conftest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wrong_schedule(mod: Any) -> Any:
    """GMM with a float16 accumulator, its outer loop parallel: fast-ish and wrong."""
    sch = compat.Schedule(mod)
    block = sch.get_sblock("Z")
    sch.cache_write(block, 0, "global")
    sch.unsafe_set_dtype(block, 0, "float16")
    sch.parallel(sch.get_loops(block)[1])
    return sch


def right_schedule(mod: Any) -> Any:
    """GMM with its outer loop split: a different module, the same answer."""
    sch = compat.Schedule(mod)
    block = sch.get_sblock("Z")
    sch.split(sch.get_loops(block)[1], [None, 16])
    return sch


def numpy_gmm(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.matmul(x.astype(np.float64), y.astype(np.float64))


def run_mod(mod: Any, target: Any, arrays: list[np.ndarray]) -> list[np.ndarray]:
    func = compat.fast_build(mod, target)
    dev = compat.device_of(target)
    tensors = [compat.to_tensor(a.copy(), dev) for a in arrays]
    func(*tensors)
    return [t.numpy() for t in tensors]


# -- compare and inputs: against values worked out by hand ------------------------------------


def test_compare_integers_exact_and_names_the_place() -> None:
    expected = np.arange(12, dtype="int32").reshape(3, 4)
    got = expected.copy()
    assert compare([got], [expected], ["C"]) == CheckResult(
        True, 0.0, "matches the untuned workload: max abs diff 0 [exact]", "ok")
    got[2, 1] += 1  # 9 -> 10
    res = compare([got], [expected], ["C"])
    assert res == CheckResult(
        False, 1.0, "C differs in 1 of 12 elements (8.3%); max abs diff 1 at C[2, 1] (got 10, "
        "expected 9) [exact]", "wrong")


def test_compare_floats_within_tolerance() -> None:
    expected = np.array([1.0, -2.0, 100.0], dtype="float32")
    # within atol + rtol*|e| = 1e-4 + 1e-4*|e|: 1.0 -> 2e-4, 100 -> 1.01e-2
    inside = expected + np.array([1.5e-4, 0.0, 1e-2], dtype="float32")
    res = compare([inside], [expected], ["out"])
    assert res.ok and res.outcome == "ok"
    assert res.max_abs_diff == pytest.approx(1e-2, rel=1e-3)
    outside = expected + np.array([3e-4, 0.0, 0.0], dtype="float32")
    res = compare([outside], [expected], ["out"])
    assert not res.ok and res.outcome == "wrong"
    assert res.detail.startswith("out differs in 1 of 3 elements (33.3%); max abs diff")
    assert "at out[0]" in res.detail and res.detail.endswith("[rtol=0.0001 atol=0.0001]")
    # explicit knobs win over the dtype's defaults
    assert compare([outside], [expected], ["out"], rtol=0, atol=1e-3).ok
    nan = expected.copy()
    nan[1] = np.nan
    res = compare([nan], [expected], ["out"])
    assert not res.ok and res.max_abs_diff == math.inf
    assert compare([nan], [nan.copy()], ["out"]).ok  # NaN where NaN is expected


def test_default_tolerance_by_dtype() -> None:
    assert default_tolerance("float32") == (1e-4, 1e-4)
    assert default_tolerance("float16") == (1e-2, 1e-2)
    assert default_tolerance("int32") == (0.0, 0.0) == default_tolerance("uint8")


def test_random_inputs_are_seeded_and_typed() -> None:
    mod = workloads.get("GMM-0").mod
    a, b = random_inputs(mod, 7), random_inputs(mod, 7)
    assert [x.shape for x in a] == [(1, 128, 128)] * 3
    assert all(x.dtype == np.float32 for x in a)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[0], random_inputs(mod, 8)[0])
    assert -1.0 <= float(a[0].min()) and float(a[0].max()) < 1.0


def test_bad_check_mode_is_named() -> None:
    with pytest.raises(ValueError, match="check must be one of 'best', 'measured', 'none', "
                                         "not 'all'"):
        msviz.Session("GMM-0", check="all")


# -- the wrong kernel in a session's batch -----------------------------------------------------


def test_wrong_schedule_is_marked_never_best_never_picked(tmp_path: Path,
                                                          tiny_session: Any) -> None:
    wd = tmp_path / "wd"
    session = tiny_session(wd, check="measured")
    mod = session.workload.mod
    warnings: list[str] = []
    shared, tuners = make_tuners(session.config, session.tasks, work_dir=session.work_dir,
                                 rules={0: session.rules}, emit=session.events.emit,
                                 warn=warnings.append)  # set up, one per task
    tuner = tuners[0]
    events = []
    session.events.subscribe(events.append)
    wrong, right = wrong_schedule(mod), right_schedule(mod)
    items = [(s, compat.ArgInfo.from_entry_func(s.mod, remove_preproc=True),
              {"origin": "fresh", "pick": "score"}, int(compat.structural_hash(s.mod)))
             for s in (wrong, right)]
    try:
        tuner.measure_batch(items, generation=0)
    finally:
        close_tuners(tuners, shared)
    measured = next(e for e in events if e.kind == "measured")
    bad, good = measured["trials"]
    assert bad["error_kind"] == "wrong" and bad["run_secs"] is None and bad["latency_us"] is None
    assert bad["check"] == "wrong" and bad["error"].startswith("wrong result: Z differs in ")
    assert good["check"] == "ok" and good["error"] is None and good["latency_us"] > 0
    # the cost model learnt the wrong one as a failure (no run_secs), the right one as measured
    assert next(e for e in events if e.kind == "cost_model_updated")["trained_on"] == 2

    run = msviz.open(wd)
    trials = run.trials
    assert list(trials["status"]) == ["wrong_result", "ok"]
    assert list(trials["check"]) == ["wrong", "ok"]
    assert math.isnan(trials["latency_us"].iloc[0]) and trials["run_secs"].iloc[0] == (1e10,)
    assert run.best().index == 1
    # the measured times stay in the sidecar
    side = read_sidecar(wd).trials[1]
    assert side["error_kind"] == "wrong" and len(side["measured_run_secs"]) == 1
    assert side["measured_run_secs"][0] > 0
    # the stock database: the record holds MetaSchedule's failure marker ...
    first = json.loads((wd / db_files.RECORD_FILE).read_text().splitlines()[0])
    assert first[1][1] == [1e10]
    # ... so compile_tir picks the right schedule
    target = compat.make_target("llvm")
    database = compat.JSONDatabase(work_dir=str(wd))
    picked = compat.ms.tir_integration.compile_tir(database, mod, target)
    assert compat.structural_equal(picked.mod, right.mod)
    assert not compat.structural_equal(picked.mod, wrong.mod)
    # triage, trials table and report name it
    triage = failure_triage_info(trials).frame
    assert triage.to_dict("records") == [{
        "status": "wrong_result", "fault": "candidate",
        "cause": "wrong result: Z differs from the untuned workload", "count": 1,
        "trials": "0"}]
    page = trial_page_info(trials)
    assert "check" in page.columns and [r["check"] for r in page.rows] == ["wrong", "ok"]
    html = render_report(run)
    assert html.count('<tr class="wrong">') == 1 and "wrong_result" in html
    # the live table says the same as the work dir
    assert list(session.trials["status"]) == ["wrong_result", "ok"]
    # and NumPy agrees: the wrong kernel is wrong, the right one right
    x, y, z = random_inputs(mod, 3)
    want = numpy_gmm(x, y)
    assert not np.allclose(run_mod(wrong.mod, target, [x, y, z])[2], want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(run_mod(right.mod, target, [x, y, z])[2], want, rtol=1e-4,
                               atol=1e-4)


def _batch(mod: Any, target: Any) -> tuple[list, list]:
    scheds = [wrong_schedule(mod), right_schedule(mod), compat.Schedule(mod)]
    items = [(s, compat.ArgInfo.from_entry_func(s.mod, remove_preproc=True), {}, 0)
             for s in scheds]
    measurer = MeasuringService(target)
    built = measurer.build([s.mod for s in scheds])
    measurer.close()
    assert all(b.error is None for b in built)
    return items, built


def test_best_mode_checks_until_the_fastest_right_one() -> None:
    mod = workloads.get("GMM-0").mod
    target = compat.make_target("llvm")
    items, built = _batch(mod, target)
    try:
        checker = ResultChecker(mod, target, seed=5, mode="best")
        # the wrong one is fastest: checked and failed; the next fastest is right: the end
        timed = [MeasureResult((1e-5,), None, None), MeasureResult((2e-5,), None, None),
                 MeasureResult((3e-5,), None, None)]
        out = checker.check_batch(items, built, timed, best_secs=math.inf)
        assert [i[2].get("check") for i in items] == ["wrong", "ok", None]
        assert out[0].error_kind == "wrong" and out[0].run_secs is None
        assert items[0][2]["measured_run_secs"] == [1e-5]
        assert out[1:] == timed[1:]
        # the right one is fastest: only it is checked
        for item in items:
            item[2].clear()
        timed = [MeasureResult((3e-5,), None, None), MeasureResult((1e-5,), None, None),
                 MeasureResult((2e-5,), None, None)]
        out = checker.check_batch(items, built, timed, best_secs=math.inf)
        assert [i[2].get("check") for i in items] == [None, "ok", None] and out == timed
        # nothing beats the best so far: nothing to check
        items[1][2].clear()
        assert checker.check_batch(items, built, timed, best_secs=5e-6) == timed
        assert all(not i[2] for i in items)
        # "none" checks nothing, even a wrong fastest candidate
        off = ResultChecker(mod, target, seed=5, mode="none")
        timed = [MeasureResult((1e-5,), None, None)] * 3
        assert off.check_batch(items, built, timed, best_secs=math.inf) == timed
    finally:
        MeasuringService.cleanup(built)


# -- a correct session, and Trial.check on a stock work dir ------------------------------------


def test_default_session_best_checks_ok_against_numpy(tmp_path: Path, tiny_session: Any) -> None:
    session = tiny_session(tmp_path / "wd")  # check="best" by default
    session.start()
    assert session.wait(600) == "finished", session.end_reason
    trials = session.trials
    # every trial that was the best so far after its batch was checked, and is right
    best_so_far = []
    best = math.inf
    for _, batch in trials.groupby("batch", sort=True):
        if batch["latency_us"].min() < best:
            best = batch["latency_us"].min()
            best_so_far.append(int(batch["latency_us"].idxmin()))
    assert best_so_far and all(trials["check"].iloc[i] == "ok" for i in best_so_far)
    assert set(trials["check"].dropna()) == {"ok"}
    trial = session.best()
    assert trials["check"].iloc[trial.index] == "ok"
    assert (trials["status"] == "ok").all()
    result = trial.check()
    assert result.ok and result.max_abs_diff <= 1e-4
    # independent: the best kernel against NumPy
    target = compat.make_target("llvm")
    x, y, z = random_inputs(session.workload.mod, 11)
    np.testing.assert_allclose(run_mod(trial.mod, target, [x, y, z])[2], numpy_gmm(x, y),
                               rtol=1e-4, atol=1e-4)


def test_trial_check_on_a_stock_work_dir(tmp_path: Path) -> None:
    wd = _root_conftest().tune_stock("GMM-0", tmp_path / "stock", trials=8)
    run = msviz.open(wd)
    assert run.trials["check"].isna().all()  # stock work dirs have no checks
    best = run.best()
    res = best.check()
    assert res.ok and res.outcome == "ok" and res.max_abs_diff <= 1e-4
    x = np.ones((1, 128, 128), "float32")
    y = np.full((1, 128, 128), 0.5, "float32")
    res = best.check(inputs={"X": x, "Y": y})
    assert res.ok  # every output is 64.0 on both sides
    with pytest.raises(ValueError, match=r"inputs name unknown argument.*W.*the arguments are "
                                         r"X, Y, Z"):
        best.check(inputs={"W": x})
    with pytest.raises(ValueError, match=r"input Y has shape \(2, 2\)"):
        best.check(inputs=[x, np.zeros((2, 2))])
    # a stock run does not check: a wrong kernel committed with good-looking times
    mod = workloads.get("GMM-0").mod
    wrong = wrong_schedule(mod)
    database = compat.JSONDatabase(work_dir=str(wd))
    token = database.commit_workload(mod)
    database.commit_tuning_record(compat.TuningRecord(
        wrong.trace, token, [1e-6], compat.make_target("llvm"),
        compat.ArgInfo.from_entry_func(wrong.mod, remove_preproc=True)))
    run = msviz.open(wd)
    stored = run.trial(-1)
    assert compat.structural_equal(stored.mod, wrong.mod)
    res = stored.check()
    assert not res.ok and res.outcome == "wrong" and 1e-3 < res.max_abs_diff < 1.0
    assert res.detail.startswith("Z differs in ")


@pytest.mark.parametrize(("first_s", "expected"), [
    (0.001, (10, 3)),  # 30 runs of 1 ms: within the 5 s budget, as asked
    (0.2, (8, 3)),     # 25 runs fit, not 30: 3 repeats of 8
    (1.0, (1, 3)),     # 5 runs fit: 3 repeats of 1
    (2.0, (1, 2)),     # 2 runs fit
    (10.0, (1, 1)),    # an untuned BERT on 2 cores: one run, never none
])
def test_end_to_end_timing_fits_its_budget(first_s: float, expected: tuple[int, int]) -> None:
    from msviz.bench.model_check import timing_runs

    assert timing_runs(first_s, 10, 3, budget_s=5.0) == expected


def test_model_outputs_match_relative_to_their_scale() -> None:
    """ResNet-50-like logits (thousands): another summation order is a match, a kernel wrong by
    a hundredth of the scale is not; small outputs keep the absolute tolerance."""
    from msviz.bench.model_check import outputs_match

    ref = np.linspace(-7000.0, 7000.0, 1001, dtype="float32")
    close = ref + np.float32(0.0117)  # 1.7e-6 of the scale: what ResNet-50's tuned build gave
    wrong = ref.copy()
    wrong[500] += 70.0  # the entry near 0 off by 1% of the scale
    assert outputs_match([close], [ref], rtol=1e-4, atol=1e-4)
    assert not outputs_match([wrong], [ref], rtol=1e-4, atol=1e-4)
    small = np.array([0.0, 0.5, 1.0], dtype="float32")
    assert outputs_match([small + 5e-5], [small], rtol=1e-4, atol=1e-4)
    assert not outputs_match([small + 5e-4], [small], rtol=1e-4, atol=1e-4)
    assert not outputs_match([small], [small, small], rtol=1e-4, atol=1e-4)


# -- the model timed in several draws (fresh processes) ---------------------------------------


def test_end_to_end_times_are_the_least_draw() -> None:
    """Three draws of a machine whose second process ran in its slow mode (~2x)."""
    from msviz.bench.model_check import end_to_end_times

    draws = [{"untuned_us": 100.0, "tuned_us": 20.0}, {"untuned_us": 190.0, "tuned_us": 41.0},
             {"untuned_us": 104.0, "tuned_us": 25.0}]
    assert end_to_end_times(draws) == {
        "draws": 3, "untuned_us": 100.0, "untuned_draws_us": [100.0, 190.0, 104.0],
        "untuned_spread": 1.9, "tuned_us": 20.0, "tuned_draws_us": [20.0, 41.0, 25.0],
        "tuned_spread": 2.05, "slow_draws": [1]}  # draw 3: tuned 1.25x, untuned 1.04x: no
    assert end_to_end_times([{"untuned_us": 8.0, "tuned_us": 2.0}]) == {
        "draws": 1, "untuned_us": 8.0, "untuned_draws_us": [8.0], "untuned_spread": 1.0,
        "tuned_us": 2.0, "tuned_draws_us": [2.0], "tuned_spread": 1.0, "slow_draws": []}
    # one build slow alone is that build's draw, not the machine's mode
    assert end_to_end_times([{"untuned_us": 100.0, "tuned_us": 20.0},
                             {"untuned_us": 101.0, "tuned_us": 40.0}])["slow_draws"] == []


def test_end_to_end_view_shows_the_least_and_the_spread() -> None:
    """The Tasks tab's and the report's end-to-end line, from a check of three draws and
    from one recorded before there were draws."""
    from msviz.bench.model_check import end_to_end_times
    from msviz.views.end_to_end import EndToEndInfo, end_to_end_html, end_to_end_info

    data = {"match": True, "max_abs_diff": 0.0, "fallback": [], "error": None,
            **end_to_end_times([{"untuned_us": 100.0, "tuned_us": 20.0},
                                {"untuned_us": 190.0, "tuned_us": 41.0},
                                {"untuned_us": 104.0, "tuned_us": 25.0}])}
    info = end_to_end_info(data)
    assert info == EndToEndInfo(100.0, 20.0, 5.0, True, 0.0, (), None, 3, 1.9, 2.05, (1,))
    assert end_to_end_html(info) == (
        "<div class='msviz-e2e'><b>End to end</b>: untuned 100.000 µs · tuned 20.000 µs · "
        "speed-up 5.00x · least of 3 fresh processes (spread: untuned 1.90x, tuned 2.05x) · "
        "process 2 ran in the machine's slow mode (both builds slower together) · "
        "outputs match</div>")
    old = {k: data[k] for k in ("untuned_us", "tuned_us", "match", "max_abs_diff", "fallback",
                                "error")}
    assert end_to_end_info(old) == EndToEndInfo(100.0, 20.0, 5.0, True, 0.0, (), None, 1,
                                                None, None)
    assert "fresh processes" not in end_to_end_html(end_to_end_info(old))


def test_combine_draws_keeps_the_least_and_every_draw() -> None:
    """Two draws' call timings (the second process slower), matched to four tasks: a
    deduplicated symbol (``relu1``) is relu's, the no-op builtin measures the hook only, other
    calls keep their least time per run."""
    from msviz.bench.model_profile import combine_draws
    from msviz.records.model_profile import model_profile_frame

    fast = {"runs": 2, "hook_us": 0.25, "times": {
        "mm": [12.0, 12.0], "dense": [6.0, 5.0, 7.0, 6.0], "relu1": [4.0, 4.0],
        "add": [1.0, 1.0], "vm.builtin.alloc_tensor": [1.0, 2.0, 0.5, 0.5, 1.0, 1.0],
        "vm.builtin.null_value": [0.0, 0.0]}}
    slow = {"runs": 3, "hook_us": 0.75, "times": {
        "mm": [18.0, 17.0, 19.0], "dense": [7.5] * 6, "relu1": [5.0] * 3, "add": [1.0] * 3,
        "vm.builtin.alloc_tensor": [0.5] * 9, "vm.builtin.match_shape": [0.5] * 3}}
    data = combine_draws([fast, slow], ["mm", "dense", "relu", "add"],
                         {"mm": 10.0, "dense": 2.0, "relu": 3.0, "add": 1.0}, ["relu"])
    assert data == {
        "rows": [
            {"task": "mm", "calls": 1, "in_model_us": 12.0, "in_model_draws_us": [12.0, 18.0],
             "tuned_us": 10.0, "ratio": 1.2, "fallback": False},
            {"task": "dense", "calls": 2, "in_model_us": 6.0, "in_model_draws_us": [6.0, 7.5],
             "tuned_us": 2.0, "ratio": 3.0, "fallback": False},
            {"task": "relu", "calls": 1, "in_model_us": 4.0, "in_model_draws_us": [4.0, 5.0],
             "tuned_us": None, "ratio": None, "fallback": True},
            {"task": "add", "calls": 1, "in_model_us": 1.0, "in_model_draws_us": [1.0, 1.0],
             "tuned_us": 1.0, "ratio": 1.0, "fallback": False}],
        "other": [{"call": "vm.builtin.alloc_tensor", "calls": 3.0, "us_per_run": 1.5},
                  {"call": "vm.builtin.match_shape", "calls": 1.0, "us_per_run": 0.5}],
        "hook_us": 0.5, "runs": 2, "draws": 2,
        # kernels per run: 12 + 2 x 6 + 4 + 1 = 29, then 18 + 2 x 7.5 + 5 + 1 = 39 > 1.25 x 29
        "slow_draws": [1]}
    frame = model_profile_frame(data)
    # mm is 1.8x its tuned time in the slow process alone: disputed, never flagged
    assert list(frame["flagged"]) == [False, True, False, False]
    assert list(frame["disputed"]) == [True, False, False, False]
    # one process timing the model, as before: its slow mode would have flagged mm
    alone = model_profile_frame(combine_draws([slow], ["mm", "dense", "relu", "add"],
                                              {"mm": 10.0, "dense": 2.0, "add": 1.0}, ["relu"]))
    assert list(alone["flagged"]) == [True, True, False, False]
    assert list(alone["spread"]) == [1.0, 1.0, 1.0, 1.0] and alone.attrs["draws"] == 1


def test_draws_run_in_fresh_processes(tmp_path: Path) -> None:
    """Two draws of the MLP built by ``compile_relax`` from an empty database: each its own
    new process, each timing the build and its calls, the calls per run of each task as many as
    MetaSchedule's extraction weighs it."""
    import os

    from msviz.bench.draws import DrawError, run_draws
    from msviz.bench.model_profile import match_call
    from msviz.models import load

    model, target = load("mlp"), compat.make_target("llvm")
    empty = compat.JSONDatabase(work_dir=str(tmp_path))
    exe = compat.ms.relax_integration.compile_relax(empty, model.mod, target, params=None)
    jobs = [{"kind": "time", "build": "plain", "number": 2, "repeat": 2},
            {"kind": "calls", "build": "plain", "runs": 3}]
    draws = run_draws({"plain": exe}, model.random_inputs(0), model.func_name, "cpu", jobs,
                      draws=2)
    assert len(draws) == 2 and [len(d) for d in draws] == [2, 2]
    pids = [job["pid"] for d in draws for job in d]
    assert pids[0] == pids[1] != pids[2] == pids[3] and os.getpid() not in pids
    weights = {t.name: t.weight for t in model.extract_tasks(target)}
    for timed, calls in draws:
        assert (timed["number"], timed["repeat"]) == (2, 2) and timed["us"] > 0
        assert calls["runs"] == 3 and calls["hook_us"] is not None
        per_task: dict[str, int] = {}
        for symbol, us in calls["times"].items():
            task = match_call(symbol, weights)
            if task is not None:
                per_task[task] = per_task.get(task, 0) + len(us)
        assert per_task == {name: 3 * w for name, w in weights.items()}
    with pytest.raises(DrawError, match=r"draw 1 of 1 failed \(exit 1\): .*nope"):
        run_draws({"plain": exe}, model.random_inputs(0), "nope", "cpu", jobs[:1], draws=1)
    with pytest.raises(ValueError, match="draws must be an int >= 1"):
        run_draws({"plain": exe}, model.random_inputs(0), model.func_name, "cpu", jobs, draws=0)


def test_a_profile_draw_in_the_slow_mode_is_named() -> None:
    """Per draw, the kernels' time per model run (median call x calls): over 1.25x the
    fastest draw's is the machine's slow mode."""
    from msviz.bench.model_profile import slow_draws

    per_draw = [{"a": 10.0, "b": 2.0}, {"a": 14.0, "b": 3.0}, {"a": 10.5, "b": 2.0}]
    calls = {"a": 1, "b": 3}  # totals 16, 23, 16.5: 23 > 1.25 x 16 = 20
    assert slow_draws(per_draw, calls) == [1]
    assert slow_draws(per_draw[:1], calls) == []
    assert slow_draws([], calls) == []


# -- reductions summed in another order: rounding is not a wrong result -----------------------


def fp16_matmul(m: int, n: int, k: int) -> Any:
    """C[m, n] = sum_k A[m, k] * B[k, n], all float16 (summed in float16)."""
    te = compat.te
    a = te.placeholder((m, k), "float16", name="A")
    b = te.placeholder((k, n), "float16", name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
    return compat.normalize_mod(te.create_prim_func([a, b, c]))


def sequential_fp16_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A @ B summed one term at a time, each partial sum rounded to float16 (what the untuned
    loop nest computes)."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float16)
    for k in range(a.shape[1]):
        acc = (acc.astype(np.float32) + a[:, k:k + 1].astype(np.float32)
               * b[k:k + 1, :].astype(np.float32)).astype(np.float16)
    return acc


def test_rounding_atol_by_hand() -> None:
    expected = np.array([3.0, -4.0], dtype="float16")  # rms = sqrt(12.5)
    want = 8.0 * 2.0 ** -11 * math.sqrt(16) * math.sqrt(12.5)
    assert rounding_atol("float16", 16, expected) == pytest.approx(want, rel=1e-12)
    assert rounding_atol("float32", 16, expected) == pytest.approx(want * 2.0 ** -13,
                                                                  rel=1e-12)
    assert rounding_atol("float16", 1, expected) == 0.0  # nothing summed
    assert rounding_atol("float16", 16, np.array([np.inf], "float16")) == 0.0


def test_reduction_length_is_the_terms_summed_per_element() -> None:
    assert reduction_length(fp16_matmul(8, 8, 1024)) == 1024
    assert reduction_length(workloads.get("GMM-0").mod) == 128  # 1x128x128 @ 128x128


def test_an_fp16_sum_in_another_order_matches_and_a_dropped_tile_does_not() -> None:
    """An H200's tensor-core fp16 matmul (K = 1024) was flagged wrong in 12% of its elements
    against the CPU's sequential fp16 sum: both are rounded sums, in different orders."""
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (64, 1024)).astype(np.float16)
    b = rng.uniform(-1, 1, (1024, 64)).astype(np.float16)
    expected = sequential_fp16_sum(a, b)
    exact = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    old = compare([exact], [expected], ["C"])  # no reduction known: the dtype's 1e-2
    assert not old.ok and "[rtol=0.01 atol=0.01]" in old.detail
    atol = rounding_atol("float16", 1024, expected)
    res = compare([exact], [expected], ["C"], reduction=1024)
    assert res == CheckResult(
        True, float(np.max(np.abs(exact.astype(np.float64) - expected))),
        f"matches the untuned workload: max abs diff {res.max_abs_diff:.3g} "
        f"[rtol=0.01 atol={atol:.3g} (float16 sums of 1024 terms)]", "ok")
    dropped = (a[:, 16:].astype(np.float64) @ b[16:, :].astype(np.float64)).astype(np.float16)
    res = compare([dropped], [expected], ["C"], reduction=1024)
    assert not res.ok and res.outcome == "wrong"
    assert res.detail.startswith("C differs in ")


def test_an_rfactor_fp16_matmul_passes_the_check_with_real_tvm() -> None:
    """The same false alarm on this CPU: rfactor sums 16 partial sums of 64 terms each."""
    mod = fp16_matmul(64, 64, 1024)
    sch = compat.Schedule(mod)
    block = sch.get_sblock("C")
    _, _, k = sch.get_loops(block)
    _, ki = sch.split(k, factors=[None, 16])
    sch.rfactor(ki, 0)
    target = compat.make_target("llvm")
    res = check_schedule(sch.mod, mod, target)
    assert res.ok, res.detail
    assert "(float16 sums of 1024 terms)" in res.detail
    # with the dtype's fixed tolerance the same kernel reads as wrong
    assert not check_schedule(sch.mod, mod, target, atol=1e-2).ok


def test_a_sum_too_long_for_its_dtype_cannot_be_checked() -> None:
    """fp16 over 10**6 terms may round by 8 * 2**-11 * 1000 = 3.9x its values: no verdict."""
    expected = np.array([1.0, 2.0], dtype="float16")
    res = compare([expected + np.float16(0.5)], [expected], ["C"], reduction=10**6)
    assert res.outcome == "error" and not res.ok
    assert res.detail == ("C cannot be checked: a sum of 1000000 float16 terms may round by up "
                          "to 3.9x the size of its values in another order; pass atol=... to "
                          "compare anyway")
    # 16384 terms is the longest fp16 sum still checked (8 * 2**-11 * 128 = 0.5)
    assert compare([expected], [expected], ["C"], reduction=16384).ok
    assert compare([expected + np.float16(0.5)], [expected], ["C"], reduction=10**6,
                   atol=0.1).outcome == "wrong"


# -- the reference on every core --------------------------------------------------------------

@pytest.mark.parametrize("name", ["C2D-0", "TBG-0", "NRM-0"])
def test_the_parallel_reference_computes_the_same_bits(name: str) -> None:
    """The untuned workload with its outer spatial loops fused and parallel gives the same
    outputs, bit for bit, as it does on one thread (each element summed in the same order)."""
    mod = workloads.get(name).mod
    target = compat.make_target("llvm")
    parallel = parallel_reference(mod)
    assert "T.parallel" not in mod.script() and "T.parallel" in parallel.script()
    inputs = random_inputs(mod, 3)
    device = compat.device_of(target)
    serial_out = _run(compat.compile_module(mod, target), inputs, device)
    parallel_out = _run(compat.compile_module(parallel, target), inputs, device)
    assert len(serial_out) == len(parallel_out) == len(inputs)
    for a, b in zip(serial_out, parallel_out):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    # and the reference of a check is that module's output (a stand-in function is not)
    reference = Reference(mod, target, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(reference.expected, serial_out))


def test_a_reduction_outermost_is_left_serial() -> None:
    """A loop nest whose outermost loop reduces gets no parallel loop (it would race)."""
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def colsum(a: T.Buffer((64, 8), "float32"), out: T.Buffer((8,), "float32")) -> None:
        for k, j in T.grid(64, 8):
            with T.sblock("sum"):
                vk, vj = T.axis.remap("RS", [k, j])
                with T.init():
                    out[vj] = T.float32(0)
                out[vj] = out[vj] + a[vk, vj]

    import tvm

    mod = tvm.IRModule({"main": colsum})
    assert "T.parallel" not in parallel_reference(mod).script()

    @T.prim_func(s_tir=True)
    def rowsum(a: T.Buffer((64, 8), "float32"), out: T.Buffer((64,), "float32")) -> None:
        for i, k in T.grid(64, 8):
            with T.sblock("sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    out[vi] = T.float32(0)
                out[vi] = out[vi] + a[vi, vk]

    # the same nest with its spatial loop outermost: that loop alone runs in parallel
    script = parallel_reference(tvm.IRModule({"main": rowsum})).script()
    assert script.count("T.parallel(64)") == 1 and "T.parallel(512)" not in script
