"""space_of: the design space a trace was sampled from, after any mutator (real TVM, CPU)."""

from __future__ import annotations

from typing import Any

import pytest

from msviz import compat
from msviz.trace.spaces import space_key, space_of


@pytest.fixture(scope="module")
def gmm_context() -> Any:
    """A TuneContext of GMM-0 with llvm's default rules, and its design spaces."""
    from msviz import workloads

    ms = compat.ms
    ctx = ms.TuneContext(
        mod=workloads.get("GMM", 0).mod,
        target=compat.make_target({"kind": "llvm", "num-cores": 4}),
        space_generator=ms.space_generator.PostOrderApply(
            sch_rules="llvm", postprocs="llvm", mutator_probs="llvm"),
        task_name="spaces-test", rand_state=1, num_threads=1)
    return ctx, list(ctx.generate_design_space())


def _fresh(ctx: Any, space: Any, seed: int) -> Any:
    """A trace of ``space`` with freshly sampled decisions (postprocs not applied)."""
    from tvm import s_tir

    sch = s_tir.Schedule(ctx.mod, seed=seed)
    compat.Trace(space.trace.insts, {}).apply_to_schedule(sch, remove_postproc=True)
    return sch.trace


def test_sampled_and_mutated_traces_name_their_space(gmm_context: Any) -> None:
    ctx, spaces = gmm_context
    keys = [space_key(s.trace) for s in spaces]
    assert len(spaces) == 3 and len(set(keys)) == 3
    mutators = {type(m).__name__: m for m in ctx.space_generator.mutator_probs}
    assert {"MutateParallel", "MutateTileSize", "MutateUnroll"} <= set(mutators)
    apply = compat.ms._ffi_api.MutatorApply
    changed: set[str] = set()
    for k, space in enumerate(spaces):
        for seed in (1, 2):
            trace = _fresh(ctx, space, seed)
            assert space_of(trace, keys) == k
            for name, mutator in mutators.items():
                mutated = apply(mutator, trace, seed)
                if mutated is None:  # nothing to mutate here
                    continue
                assert str(mutated) != str(trace)
                changed.add(name)
                assert space_of(mutated, keys) == k, name
    # MutateParallel rewrites an annotation's value, not a decision: the key must ignore it.
    assert "MutateParallel" in changed and "MutateTileSize" in changed


def test_a_trace_of_other_rules_is_from_no_space(gmm_context: Any) -> None:
    ctx, spaces = gmm_context
    keys = [space_key(s.trace) for s in spaces]
    ms = compat.ms
    other = ms.TuneContext(
        mod=ctx.mod, target=ctx.target,
        space_generator=ms.space_generator.PostOrderApply(
            sch_rules=[ms.schedule_rule.ParallelizeVectorizeUnroll(
                max_jobs_per_core=16, max_vectorize_extent=64,
                unroll_max_steps=[0, 16], unroll_explicit=True)],
            postprocs=[], mutator_probs={}),
        task_name="other", rand_state=1, num_threads=1)
    (alone,) = other.generate_design_space()
    assert space_of(alone.trace, keys) is None
    # A structural change (one more split) is another space too.
    trace = _fresh(ctx, spaces[0], 1)
    from tvm import s_tir

    sch = s_tir.Schedule(ctx.mod, seed=1)
    trace.apply_to_schedule(sch, remove_postproc=True)
    sch.split(sch.get_loops(sch.get_sblock("Z"))[0], [None, 1])
    assert space_of(sch.trace, keys) is None


def test_trial_decisions_sample_keeps_the_fastest_and_the_slowest(gmm_work_dir: Any) -> None:
    import msviz
    from msviz.trace.spaces import trial_decisions

    run = msviz.open(gmm_work_dir)
    ok = run.trials[run.trials["status"] == "ok"].sort_values("latency_us", kind="stable")
    assert len(ok) >= 3
    everyone = trial_decisions(run, limit=None, space="best")  # the best trial's space
    # two evenly spread over the latency ranking: rank 0 and the last rank
    picks = [int(ok["trial"].iloc[0]), int(ok["trial"].iloc[-1])]
    sampled = trial_decisions(run, limit=None, space="best", sample=2)
    assert list(sampled["trial"]) == [t for t in picks if t in set(everyone["trial"])]
    assert int(sampled["trial"].iloc[0]) == picks[0]
    assert sampled.columns.tolist() == everyone.columns.tolist()
