"""The proposed space restriction of a real tuned GMM-0 run, and re-runs with restricted rules."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import msviz
from msviz.space_generator import RuleSet
from msviz.workflows.rerun import propose_restriction
from tests.engine.conftest import make_tiny_session


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """GMM-0 tuned for 16 trials (2 batches of 8)."""
    session = make_tiny_session(tmp_path_factory.mktemp("restrict") / "wd", max_trials=16,
                                trials_per_batch=8)
    session.start()
    assert session.wait(600) == "finished"
    return session


def _decisions(trace: Any) -> list[tuple[str, Any, Any]]:
    """(kind, attrs, decision) of each sampling instruction, read from the trace."""
    return [d for _, d in _sites(trace)]


def _sites(trace: Any) -> list[tuple[int, tuple[str, Any, Any]]]:
    """(instruction index, (kind, attrs, decision)) of each sampling instruction."""
    out = []
    for index, inst in enumerate(trace.insts):
        decision = trace.get_decision(inst)
        if decision is None:
            continue
        out.append((index, (inst.kind.name, _plain(inst.attrs), _plain(decision))))
    return out


def _plain(value: Any) -> Any:
    """TVM arrays and IntImm/FloatImm as lists and numbers."""
    if hasattr(value, "__len__") and not isinstance(value, str):
        return [_plain(v) for v in value]
    return getattr(value, "value", value)


def _winners(run: msviz.Run, n: int) -> list[list[tuple[str, Any, Any]]]:
    """The decisions of the ``n`` fastest trials sampled from the best trial's design space
    (sampling instructions of the same kinds at the same places), ties with the n-th
    included."""
    ok = run.trials[run.trials["status"] == "ok"].sort_values("latency_us")
    shape = [(i, d[0]) for i, d in _sites(run.best().trace)]
    rows = []
    for index, latency in zip(ok.index, ok["latency_us"]):
        sites = _sites(run.trial(int(index)).trace)
        if [(i, d[0]) for i, d in sites] == shape:
            rows.append((latency, [d for _, d in sites]))
    count = max(n, math.ceil(0.1 * len(rows)))
    cutoff = rows[count - 1][0]
    return [d for lat, d in rows if lat <= cutoff]


def test_proposal_keeps_every_winner(tuned: Any) -> None:
    restriction = propose_restriction(tuned)
    run = tuned.open()
    winners = _winners(run, 5)
    assert restriction.task == "GMM-0" and restriction.importance.top == len(winners)
    assert restriction.importance.method == "PED-ANOVA"
    assert math.isclose(sum(s.importance for s in restriction.importance.sites), 1.0)
    changes = {(c.rule, c.param): c for c in restriction.changes}
    # the innermost factor of every tile MultiLevelTiling sampled (bound 64), by the winners
    inner = max(d[-1] for w in winners for k, a, d in w
                if k == "SamplePerfectTile" and a[1] == 64)
    tiling = changes.get(("MultiLevelTiling", "max_innermost_factor"))
    if inner < 64:
        assert (tiling.old, tiling.new) == (64, inner)
        assert "innermost tile factors" in tiling.why
    else:
        assert tiling is None
    # the unroll candidates the winners picked (SampleCategorical over [0, 16, 64, 512])
    steps = sorted({a[0][d] for w in winners for k, a, d in w if k == "SampleCategorical"})
    unroll = changes.get(("ParallelizeVectorizeUnroll", "unroll_max_steps"))
    if len(steps) < 4:
        assert (unroll.old, unroll.new) == ([0, 16, 64, 512], steps)
    else:
        assert unroll is None
    # the edited RuleSet holds exactly these changes; the words say each one
    expected = RuleSet.default("llvm")
    for c in restriction.changes:
        if c.rule == "MutateUnroll":  # one unroll option left: the mutator is turned off
            assert (c.param, c.new, len(steps)) == ("probability", 0.0, 1)
            expected.mutator_probs["MutateUnroll"] = 0.0
        else:
            expected.set(c.rule, **{c.param: c.new})
    assert str(restriction.rules) == str(expected)
    assert str(RuleSet.default("llvm")) == str(restriction.base_rules)
    text = str(restriction)
    assert text.startswith("Proposed restriction of task GMM-0 (PED-ANOVA over")
    assert all(f"{c.rule}.{c.param}: {c.old!r} -> {c.new!r}" in text
               for c in restriction.changes)
    # re-running reuses the session's knobs and the trial budget of the first run
    again = restriction.rerun(start=False)
    assert again.max_trials == 16 and again.trials_per_batch == 8 and again.seed == 1
    assert again.knobs.population_size == 16 and restriction.session is again


def test_rerun_tunes_within_the_restricted_space(tuned: Any, tmp_path: Path) -> None:
    rules = RuleSet.default("llvm").set("MultiLevelTiling", max_innermost_factor=8)
    rules.set("ParallelizeVectorizeUnroll", unroll_max_steps=[0, 64])
    session = msviz.rerun(tuned.open(), rules, max_trials=4, trials_per_batch=4,
                          work_dir=tmp_path / "wd", seed=2, population_size=16,
                          init_min_unmeasured=8, genetic_num_iters=1,
                          evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})
    assert session.wait(600) == "finished"
    rerun, first = session.open(), tuned.open()
    assert len(rerun.trials) == 4 and set(rerun.trials["task"]) == {"GMM-0"}
    assert rerun.workload_key(0) == first.workload_key(0)  # the same workload
    for i in range(len(rerun.trials)):
        tiles = categoricals = 0
        for kind, attrs, decision in _decisions(rerun.trial(i).trace):
            if kind == "SamplePerfectTile" and attrs[0] == 4:  # MultiLevelTiling's tiles
                tiles += 1
                assert attrs[1] == 8 and decision[-1] <= 8
            if kind == "SampleCategorical":
                categoricals += 1
                assert attrs[0] == [0, 64]
        # SSRSRS tiles GMM's three spatial loops (batch, i, j) in 4; one unroll per trial
        assert (tiles, categoricals) == (3, 1), i
    view = msviz.compare(first, session, names=["original", "restricted"])
    assert [s.name for s in view.info.summary] == ["original", "restricted"]
    assert view.info.summary[1].trials == 4


def test_bad_sources(tuned: Any) -> None:
    with pytest.raises(TypeError, match="a int has no trials to restrict"):
        propose_restriction(3)
    with pytest.raises(KeyError, match="no task 'conv'"):
        propose_restriction(tuned.work_dir, "conv")
