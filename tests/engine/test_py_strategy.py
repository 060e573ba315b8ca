"""msviz's evolutionary search as a MetaSchedule PySearchStrategy.

* under stock ``tune_tir``: records land in the stock database, ``compile_tir`` reads them, the
  kernel computes what numpy computes;
* against the C++ search, through the C++ entry points TVM exposes
  (``SearchStrategyEvolutionarySearchSampleInitPopulation`` / ``...EvolveWithCostModel``), with a
  deterministic cost model: same knobs, statistically the same behaviour.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import msviz
from msviz import compat, workloads
from msviz.engine.search.candidates import decisions_of
from msviz.engine.search.py_strategy import MsvizSearchStrategy, search_strategy

ms = compat.ms
WORKLOAD = "GMM-0"  # Z = X @ Y, 1x128x128 float32: 3 design spaces on llvm


def _quiet_tvm_logger() -> None:
    """pytest's nameless capture handlers break tune_tir's logging setup (see tests/conftest)."""
    compat.quiet_ipython_printing()
    tvm_logger = logging.getLogger(ms.logging.__name__.rsplit(".", 1)[0])
    for handler in [h for h in tvm_logger.handlers if h.get_name() is None]:
        tvm_logger.removeHandler(handler)


# -- under stock tune_tir -------------------------------------------------------------------------


def test_stock_tune_tir_runs_msviz_search(tmp_path: Path) -> None:
    _quiet_tvm_logger()
    stages: list[str] = []
    strategy = msviz.search_strategy(
        "msviz", population_size=16, init_min_unmeasured=8, genetic_num_iters=1,
        cost_model_task_warmup=4, on_stage=lambda stage: stages.append(stage.kind))
    wl = workloads.get(WORKLOAD)
    target = compat.make_target("llvm")
    ms.tir_integration.tune_tir(
        wl.mod, target, str(tmp_path), max_trials_global=8, num_trials_per_iter=4,
        builder=compat.local_builder(),
        runner=ms.runner.LocalRunner(
            evaluator_config=ms.runner.EvaluatorConfig(number=1, repeat=1, min_repeat_ms=0)),
        strategy=strategy, seed=1, num_tuning_cores=2)
    # Generations of up to 4 trials, every stage of each seen (tune_tir clones the strategy:
    # on_stage is how a caller watches the clone that runs). A generation whose population holds
    # fewer new schedules than the batch picks fewer, as the C++ search does (seen in CI: 4, 3,
    # 1), and tune_tir asks for another.
    # The first are the task's warm-up (cost_model_task_warmup=4: one batch, or two where the
    # first picked fewer than 4): no genetic iteration until the cost model has trained on 4
    # samples; then generations with one.
    warmup = ["initial_population", "generation", "picked"]
    one = ["initial_population", "generation", "generation", "picked"]
    warmups = next(w for w in (1, 2, 3) if stages[3 * w:3 * w + 3] != warmup)
    rounds = (len(stages) - len(warmup) * warmups) // len(one)
    assert rounds >= 1 and stages == warmup * warmups + one * rounds, stages
    db = ms.database.JSONDatabase(work_dir=str(tmp_path))
    records = db.get_all_tuning_records()
    assert len(records) == 8
    assert len({int(compat.structural_hash(r.as_measure_candidate().sch.mod))
                for r in records}) == 8  # never the same schedule twice
    assert all(r.run_secs and max(float(s) for s in r.run_secs) < compat.FAILED_RUN_SECS
               for r in records)
    sch = ms.tir_integration.compile_tir(db, wl.mod, target)
    import tvm

    func = tvm.tirx.build(sch.mod, target=target)
    rng = np.random.default_rng(0)
    a, b = rng.random((1, 128, 128), "float32"), rng.random((1, 128, 128), "float32")
    c = tvm.runtime.tensor(np.zeros((1, 128, 128), "float32"))
    func(tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


def test_protocol_counts_trials_and_ends_like_the_cpp() -> None:
    """``[st, ed)`` window: the last batch is cut to max_trials, then None; a clone (made by
    C++, as ``tune_tir`` does) runs with the same knobs and no state."""
    seen: list[tuple[str, Any]] = []

    def watch(stage: Any) -> None:
        if stage.kind == "initial_population":
            seen.append(("fresh", stage.data["fresh"]))
        elif stage.kind == "generation":
            seen.append(("size", stage.data["size"]))

    strategy = search_strategy("stock", population_size=12, init_min_unmeasured=8,
                               genetic_num_iters=1, seed=5, on_stage=watch)
    assert isinstance(strategy, MsvizSearchStrategy)
    ctx = _context(strategy, seed=1)
    ctx.pre_tuning(6, 4, ctx.generate_design_space(), ms.database.MemoryDatabase(),
                   ms.cost_model.RandomModel(seed=1))
    sizes = []
    while (cands := ctx.generate_measure_candidates()) is not None:
        sizes.append(len(cands))
        ctx.notify_runner_results(cands, [ms.runner.RunnerResult([1e-5], None)] * len(cands))
    ctx.post_tuning()
    assert sizes == [4, 2]
    assert seen == [("fresh", 12), ("size", 12), ("size", 12)] * 2
    seen.clear()
    clone_ctx = _context(strategy.clone(), seed=2)  # TuneContext initializes the clone
    clone_ctx.pre_tuning(3, 4, clone_ctx.generate_design_space(), ms.database.MemoryDatabase(),
                         ms.cost_model.RandomModel(seed=1))
    assert len(clone_ctx.generate_measure_candidates()) == 3
    clone_ctx.post_tuning()
    assert seen == [("fresh", 12), ("size", 12), ("size", 12)]


def test_bad_input_names_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="population_size"):
        search_strategy(population_size=0)
    with pytest.raises(TypeError, match="unknown search knob"):
        search_strategy(populationsize=8)
    with pytest.raises(ValueError, match="unknown preset"):
        search_strategy("fast")
    strategy = search_strategy(population_size=8, init_min_unmeasured=4)
    ctx = _context(strategy, seed=1)
    with pytest.raises(Exception, match="needs a database"):
        ctx.pre_tuning(4, 4, ctx.generate_design_space(), None,
                       ms.cost_model.RandomModel(seed=1))


# -- against the C++ search -----------------------------------------------------------------------

#: Knobs both searches run with (small: the comparison runs K seeds x 2 searches on 2 cores).
KNOBS = {
    "population_size": 64,
    "init_measured_ratio": 0.2,  # the database is empty: no record to start from
    "init_min_unmeasured": 32,
    "max_fail_count": 5,
    "genetic_num_iters": 4,
    "genetic_mutate_prob": 0.85,
    "genetic_max_fail_count": 10,
    "eps_greedy": 0.0,  # the pick is the top of the heap: what EvolveWithCostModel returns
}
PICK = 16
SEEDS = [11, 22, 33, 44, 55, 66, 77, 88, 99, 110]


def score_of(sch: Any) -> float:
    """A fixed function of a schedule: closeness of each innermost tile factor to 16, plus a
    small structural-hash jitter (so schedules with equal tiles still differ)."""
    tiles = [d for _, kind, d in decisions_of(sch.trace) if kind == "SamplePerfectTile"]
    closeness = [1.0 - abs(math.log2(max(1, t[-1])) - 4.0) / 7.0 for t in tiles]
    base = (sum(closeness) / len(closeness)) ** 4 if closeness else 0.0
    jitter = (int(compat.structural_hash(sch.mod)) % 1000) / 1000.0
    return base + 0.05 * jitter


class _FixedScores(ms.cost_model.PyCostModel):
    def load(self, path: str) -> None:
        pass

    def save(self, path: str) -> None:
        pass

    def update(self, context: Any, candidates: Any, results: Any) -> None:
        pass

    def predict(self, context: Any, candidates: Any) -> np.ndarray:
        return np.array([score_of(c.sch) for c in candidates], dtype="float64")


FixedScores = compat.derived_object(_FixedScores)


def _context(strategy: Any, seed: int) -> Any:
    return ms.TuneContext(
        mod=workloads.get(WORKLOAD).mod, target=compat.make_target("llvm", num_cores=2),
        space_generator="post-order-apply", search_strategy=strategy, task_name="cmp",
        rand_state=seed, num_threads=1)


def _inner_tiles(schs: list[Any]) -> Counter[int]:
    return Counter(d[-1] for s in schs for _, kind, d in decisions_of(s.trace)
                   if kind == "SamplePerfectTile")


def run_cpp(seed: int) -> dict[str, Any]:
    """The C++ EvolutionarySearch: SampleInitPopulation, then EvolveWithCostModel."""
    es = ms.search_strategy.EvolutionarySearch(**KNOBS)
    ctx = _context(es, seed)
    ctx.pre_tuning(10**6, PICK, ctx.generate_design_space(), ms.database.MemoryDatabase(),
                   FixedScores())
    try:
        inits = list(ms._ffi_api.SearchStrategyEvolutionarySearchSampleInitPopulation(
            es, KNOBS["population_size"]))
        bests = list(ms._ffi_api.SearchStrategyEvolutionarySearchEvolveWithCostModel(
            es, inits, PICK))
    finally:
        ctx.post_tuning()
    return _summary(inits, bests)


def run_python(seed: int, **knobs: Any) -> dict[str, Any]:
    """msviz's search through the PySearchStrategy protocol: one generation, eps_greedy 0."""
    strategy = search_strategy("stock", **{**KNOBS, **knobs})
    ctx = _context(strategy, seed)
    ctx.pre_tuning(10**6, PICK, ctx.generate_design_space(), ms.database.MemoryDatabase(),
                   FixedScores())
    search, inits = strategy.search, []
    sample = search.sample_init_population
    search.sample_init_population = lambda num: inits.extend(sample(num)) or inits  # keep them
    try:
        picks = ctx.generate_measure_candidates()
    finally:
        ctx.post_tuning()
    return _summary([c.sch for c in inits], [c.sch for c in picks])


def _summary(inits: list[Any], bests: list[Any]) -> dict[str, Any]:
    init_scores = [score_of(s) for s in inits]
    best_scores = [score_of(s) for s in bests]
    return {
        "n_init": len(inits),
        "init_mean": float(np.mean(init_scores)),
        "init_distinct": len({int(compat.structural_hash(s.mod)) for s in inits}) / len(inits),
        "init_tiles": _inner_tiles(inits),
        "n_best": len(bests),
        "best_mean": float(np.mean(best_scores)),
        "best_min": float(np.min(best_scores)),
    }


def _total_variation(a: Counter[int], b: Counter[int]) -> float:
    na, nb = sum(a.values()), sum(b.values())
    return 0.5 * sum(abs(a[k] / na - b[k] / nb) for k in set(a) | set(b))


def _close(xs: list[float], ys: list[float], floor: float) -> tuple[bool, float, float]:
    """Means over seeds equal within 4 standard errors of their difference (plus a floor)."""
    diff = abs(float(np.mean(xs)) - float(np.mean(ys)))
    se = math.sqrt(np.var(xs, ddof=1) / len(xs) + np.var(ys, ddof=1) / len(ys))
    tol = 4.0 * se + floor
    return diff <= tol, diff, tol


@pytest.fixture(scope="module")
def compared() -> dict[str, list[dict[str, Any]]]:
    return {
        "cpp": [run_cpp(s) for s in SEEDS],
        "py": [run_python(s) for s in SEEDS],
        # Negative control: no mutation, so no evolution; must NOT match the C++.
        "py_frozen": [run_python(s, genetic_mutate_prob=0.0) for s in SEEDS],
    }


def test_same_initial_population(compared: dict[str, list[dict[str, Any]]]) -> None:
    """Fresh samples: uniform design space, fresh decisions, postprocs. Same sizes, same
    distribution of the innermost tile factor (total variation of the pooled histograms over
    6 x 64 x 6 tile decisions; two samples of one distribution that size stay under ~0.1),
    same mean score (a per-seed mean of 64 scores has a standard error near 0.02)."""
    cpp, py = compared["cpp"], compared["py"]
    assert [r["n_init"] for r in py] == [r["n_init"] for r in cpp] == [64] * len(SEEDS)
    tv = _total_variation(sum((r["init_tiles"] for r in cpp), Counter()),
                          sum((r["init_tiles"] for r in py), Counter()))
    assert tv < 0.1, tv
    ok, diff, tol = _close([r["init_mean"] for r in py], [r["init_mean"] for r in cpp], 0.01)
    assert ok, (diff, tol)
    ok, diff, tol = _close([r["init_distinct"] for r in py], [r["init_distinct"] for r in cpp],
                           0.02)
    assert ok, (diff, tol)


def test_same_evolved_picks(compared: dict[str, list[dict[str, Any]]]) -> None:
    """The picked set (top PICK of the heap): as large, and its mean predicted score equal
    within 4 standard errors over the seeds; both well above the initial population's mean
    (evolution works); the frozen control (no mutation) falls outside the tolerance."""
    cpp, py, frozen = compared["cpp"], compared["py"], compared["py_frozen"]
    assert [r["n_best"] for r in py] == [r["n_best"] for r in cpp] == [PICK] * len(SEEDS)
    ok, diff, tol = _close([r["best_mean"] for r in py], [r["best_mean"] for r in cpp], 0.01)
    assert ok, (diff, tol)
    for side in (cpp, py):
        assert all(r["best_mean"] > r["init_mean"] + 0.05 for r in side)
    ok, diff, tol = _close([r["best_mean"] for r in frozen], [r["best_mean"] for r in cpp], 0.01)
    assert not ok, (diff, tol)


def _valid_share(strategy: Any, seed: int, sample: Any) -> int:
    """Valid schedules among 64 fresh samples of GMM-0 on a CUDA target (VerifyGPUCode rejects
    most: the share is far from 1, so it can differ). One sampling round only."""
    ctx = ms.TuneContext(
        mod=workloads.get(WORKLOAD).mod, target=compat.make_target("cuda", num_cores=2),
        space_generator="post-order-apply", search_strategy=strategy, task_name="cuda",
        rand_state=seed, num_threads=1)
    ctx.pre_tuning(10**6, PICK, ctx.generate_design_space(), ms.database.MemoryDatabase(),
                   FixedScores())
    try:
        return sample()
    finally:
        ctx.post_tuning()


def test_same_valid_fraction_on_cuda() -> None:
    """Share of fresh samples that pass the postprocs, pooled over 10 seeds x 64 samples (seen:
    about 12% for both). Tolerance: 4 standard errors of a difference of two binomial shares
    of 640 (about 0.07), which a search that skipped the postprocs (100%) or applied them
    twice would exceed. Each Python failure is counted once, under the postproc that failed."""
    knobs = {"population_size": 64, "init_min_unmeasured": 1, "max_fail_count": 5}
    cpp_valid, py_valid = 0, 0
    for seed in SEEDS:
        es = ms.search_strategy.EvolutionarySearch(**knobs)
        cpp_valid += _valid_share(es, seed, lambda es=es: len(
            ms._ffi_api.SearchStrategyEvolutionarySearchSampleInitPopulation(es, 64)))
        strategy = search_strategy("stock", **knobs)

        def sample(strategy: Any = strategy) -> int:
            found = strategy.search.sample_init_population(64)
            failures = strategy.search.take_failures()
            assert len(found) + sum(failures.values()) == 64
            assert set(failures) <= {"VerifyGPUCode"}
            return len(found)

        py_valid += _valid_share(strategy, seed, sample)
    n = 64 * len(SEEDS)
    p_cpp, p_py = cpp_valid / n, py_valid / n
    pooled = (cpp_valid + py_valid) / (2 * n)
    tol = 4.0 * math.sqrt(2 * pooled * (1 - pooled) / n)
    assert 0.02 < p_cpp < 0.5, p_cpp  # the check means something only if many fail
    assert abs(p_py - p_cpp) <= tol, (p_py, p_cpp, tol)
