"""What the search keeps instead of redoing: features across generations, the replays of
repeated children, and fresh samples only to the minimum once the task is well measured.

Each saving must give what MetaSchedule's own path gives: the scores are compared with stock
``XGBModel.predict``, a remembered replay with a fresh replay of the same trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from msviz import compat, workloads
from msviz.engine.search.applier import Applier
from msviz.engine.search.candidates import Candidate
from msviz.engine.search.scoring import FeatureCache
from msviz.trace.replay import apply_trace

ms = compat.ms


@pytest.fixture(scope="module")
def gmm() -> Any:
    """GMM-0's tuning context (design spaces, postprocs, mutators) and 40 sampled schedules."""
    ctx = ms.TuneContext(mod=workloads.get("GMM-0").mod, target=compat.make_target("llvm"),
                         space_generator="post-order-apply", search_strategy="evolutionary",
                         task_name="GMM-0", num_threads=1)
    spaces = [s.trace.simplified(remove_postproc=True)
              for s in ctx.space_generator.generate_design_space(ctx.mod)]
    posts = list(ctx.space_generator.postprocs)
    schedules = []
    for i in range(40):
        out = apply_trace(ctx.mod, compat.Trace(spaces[i % len(spaces)].insts, {}), posts,
                          seed=i + 1)
        assert out.schedule is not None, out.failed_step
        schedules.append(out.schedule)
    return ctx, posts, schedules


def _candidates(schedules: list) -> list:
    return [ms.search_strategy.MeasureCandidate(
        s, compat.ArgInfo.from_entry_func(s.mod, remove_preproc=True)) for s in schedules]


def _shash(sch: Any) -> int:
    return int(compat.structural_hash(sch.mod))


def test_cached_features_score_as_stock_predict(gmm: Any) -> None:
    ctx, _, schedules = gmm
    model = ms.cost_model.XGBModel(num_warmup_samples=0, num_tuning_cores=1)
    rng = np.random.default_rng(0)

    def train(picks: list) -> None:
        model.update(ctx, _candidates(picks), [
            ms.runner.RunnerResult(run_secs=[float(s)], error_msg=None)
            for s in rng.uniform(1e-5, 1e-3, len(picks))])

    train(schedules[:20])
    cache = FeatureCache()
    pairs = [(_shash(s), s) for s in schedules]
    first = cache.scores(model, ctx, pairs[:30])
    np.testing.assert_allclose(first, model.predict(ctx, _candidates(schedules[:30])),
                               rtol=1e-6)
    assert (cache.extracted, cache.reused) == (len({h for h, _ in pairs[:30]}), 30 - len(
        {h for h, _ in pairs[:30]}))
    # a later generation, after the model learned more: old schedules are only re-scored
    train(schedules[20:30])
    before = cache.extracted
    again = cache.scores(model, ctx, pairs)
    np.testing.assert_allclose(again, model.predict(ctx, _candidates(schedules)), rtol=1e-6)
    assert cache.extracted - before == len({h for h, _ in pairs}) - len(
        {h for h, _ in pairs[:30]})
    assert not np.allclose(first, again[:30])  # the retrained model scores differently


def test_the_cache_keeps_within_its_bytes(gmm: Any) -> None:
    ctx, _, schedules = gmm
    model = ms.cost_model.XGBModel(num_warmup_samples=0, num_tuning_cores=1)
    model.update(ctx, _candidates(schedules[:8]), [
        ms.runner.RunnerResult(run_secs=[1e-4 * (i + 1)], error_msg=None) for i in range(8)])
    pairs = list({_shash(s): s for s in schedules}.items())
    probe = FeatureCache()
    probe.scores(model, ctx, pairs[:1])
    one = probe.nbytes  # one GMM schedule's feature rows
    cache = FeatureCache(max_bytes=3 * one)
    scores = cache.scores(model, ctx, pairs)  # more than the cache holds, in one call
    np.testing.assert_allclose(scores, model.predict(ctx, _candidates([s for _, s in pairs])),
                               rtol=1e-6)
    assert cache.nbytes <= 3 * one and len(cache) == 3


def test_a_repeated_child_is_replayed_once_and_as_a_fresh_replay(gmm: Any) -> None:
    ctx, posts, schedules = gmm
    applier = Applier(ctx.mod, posts)
    calls = []
    real_apply = applier.apply
    applier.apply = lambda trace, seed: calls.append(seed) or real_apply(trace, seed)
    mutate = ms._ffi_api.MutatorApply
    tile = next(m for m in ctx.space_generator.mutator_probs
                if type(m).__name__ == "MutateTileSize")
    made: dict = {}
    children = [mutate(tile, s.trace, 7) for s in schedules[:12]]
    children = [c for c in children if c is not None]
    assert len(children) >= 8
    first = [applier.apply_once(c, 100 + i, made) for i, c in enumerate(children)]
    # the same children again, as new trace objects of the same text: nothing replayed
    again = [applier.apply_once(mutate(tile, s.trace, 7), 999, made)
             for s in schedules[:12] if mutate(tile, s.trace, 7) is not None]
    assert len(calls) == len({str(c) for c in children})
    assert [a[0] for a in again] == [f[0] for f in first]  # the very same schedules
    keep: dict = {}  # what the next generation may reuse (the database's records still picked)
    assert applier.apply_once(children[0], 5, made, keep) == first[0]
    assert keep == {str(children[0]): first[0]}
    for child, (sch, shash, failed) in zip(children, first):
        fresh = apply_trace(ctx.mod, child, posts, seed=12345)  # another seed: same schedule
        assert failed is None and shash == _shash(fresh.schedule) == _shash(sch)
    # a made schedule's own (postprocessed) trace is known too, and so is the population's
    own = [applier.apply_once(f[0].trace, 3, made) for f in first]
    assert [o[0] for o in own] == [f[0] for f in first]
    assert len(calls) == len({str(c) for c in children})
    population = {}
    applier.remember(population, [Candidate(s, _shash(s), 0, "fresh") for s in schedules[:5]])
    assert [applier.apply_once(s.trace, 3, population)[1] for s in schedules[:5]] == [
        _shash(apply_trace(ctx.mod, s.trace, posts, seed=77).schedule) for s in schedules[:5]]
    assert len(calls) == len({str(c) for c in children})  # still nothing replayed
    # first: repeats among the children; again, keep, own, the population: all found
    assert (applier.replayed, applier.reused) == (len(calls), 3 * len(first) - len(calls) + 6)


def _fresh_counts(session: Any) -> list[tuple[int, bool, int, int]]:
    """Per generation: the task's samples measured before it, whether it is a task warm-up,
    its fresh samples and its records from the database."""
    out, samples = [], 0
    for e in session.events.snapshot():
        if e.kind == "initial_population":
            out.append((samples, e["task_warmup"], e["fresh"], e["from_database"]))
        elif e.kind == "picked":
            samples += len(e["candidates"])
    return out


def test_fresh_samples_only_to_the_minimum_once_the_task_is_measured(
        tmp_path: Path, tiny_session: Any) -> None:
    """``sample_to_minimum_after=8``: population 32, init_min_unmeasured 8, batch 4. A task
    warm-up (under 4 samples) samples 8 fresh schedules; then a generation fills the population
    (32 minus the database's picks) until the task has 8 samples, and from then on samples 8.
    With the knob at 0 (stock) every generation after the warm-up fills the population."""
    def expected(samples: int, from_database: int, after: int) -> tuple[bool, int]:
        if samples < 4:
            return True, 8
        return False, 8 if 0 < after <= samples else 32 - from_database

    for after, trials in ((8, 16), (0, 12)):
        session = tiny_session(tmp_path / f"wd{after}", population_size=32,
                               init_min_unmeasured=8, max_trials=trials, trials_per_batch=4,
                               cost_model_task_warmup=4, task_warmup_ranked=False,
                               sample_to_minimum_after=after)
        session.start()
        assert session.wait(600) == "finished"
        got = _fresh_counts(session)
        assert [(warm, fresh) for _, warm, fresh, _ in got] == [
            expected(samples, db, after) for samples, _, _, db in got]
        fills = [fresh for samples, warm, fresh, _ in got if not warm and samples < 8]
        assert fills and all(f > 20 for f in fills)  # the population filled: 32 - (4 to 6)
        if after:
            assert any(samples >= 8 for samples, *_ in got)  # the cut was reached
