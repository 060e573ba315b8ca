"""RuleSet: defaults equal MetaSchedule's, edits are validated, set_rules mid-run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import msviz
from msviz import compat
from msviz.engine import RuleError, RuleSet

#: A CPU without AVX-512: MetaSchedule's generic llvm rules, ``ScheduleRule.create("llvm")``
#: (skylake-avx512 gets the "avx512" rules, cascadelake the "vnni" ones).
GENERIC_CPU = {"kind": "llvm", "mcpu": "haswell", "num-cores": 2}


def test_default_rules_match_metaschedule() -> None:
    rules = RuleSet.default(GENERIC_CPU)
    built, postprocs, mutators = rules.build()
    ms = compat.ms
    stock = list(ms.schedule_rule.ScheduleRule.create("llvm"))
    assert [type(r).__name__ for r in built] == [type(r).__name__ for r in stock]
    assert [type(p).__name__ for p in postprocs] == [
        type(p).__name__ for p in ms.postproc.Postproc.create("llvm")]
    stock_m = {type(m).__name__: float(p) for m, p in ms.mutator.Mutator.create("llvm").items()}
    assert {type(m).__name__: p for m, p in mutators.items()} == pytest.approx(stock_m)
    text = str(rules)
    assert "MultiLevelTiling(structure='SSRSRS'" in text and "MutateTileSize: 0.9" in text


@pytest.mark.parametrize("name", ["GMM-0", "C2D-2", "SFM-0"])
def test_default_rules_make_metaschedules_design_spaces(name: str) -> None:
    """Every rule parameter in effect (not only the three ``str()`` prints) shows in the
    design spaces: msviz's rules and MetaSchedule's own, same seed, give the same spaces."""
    from msviz import workloads

    ms = compat.ms
    mod = workloads.get(name).mod
    target = compat.make_target("llvm")

    def spaces(generator: object) -> list[str]:
        ctx = ms.TuneContext(mod=mod, target=target, space_generator=generator,
                             task_name=name, rand_state=11, num_threads=1)
        return [str(s.trace) for s in ctx.generate_design_space()]

    ours = spaces(RuleSet.default(GENERIC_CPU).space_generator())
    theirs = spaces(ms.space_generator.PostOrderApply(
        sch_rules="llvm", postprocs="llvm", mutator_probs="llvm"))
    assert len(ours) >= 1 and ours == theirs
    if name != "GMM-0":
        return
    changed = spaces(RuleSet.default(GENERIC_CPU).set("MultiLevelTiling", max_innermost_factor=8)
                     .space_generator())
    assert changed != theirs  # the comparison sees a parameter str() does not print


def test_llvm_means_this_machine_as_in_a_session(tmp_path: Path) -> None:
    """``RuleSet.default("llvm")`` is the space a session on "llvm" searches on this machine,
    whatever its CPU (VNNI rules on a VNNI host), and equals the rules of the host target."""
    from msviz.engine import Session

    session = Session("GMM-0", work_dir=tmp_path / "wd", max_trials=4, trials_per_batch=4)
    assert str(RuleSet.default("llvm")) == str(session.rules)
    assert str(RuleSet.default("llvm")) == str(RuleSet.default(compat.make_target("llvm")))
    # the host's CPU flags as the kernel reports them, read independently of LLVM's host query
    flags = Path("/proc/cpuinfo").read_text().split()
    # an AVX-512 VNNI host tensorizes with dot_16x4_vnni, one with AVX-512F+BW only with
    # dot_16x4_avx512 (stock's rule kinds vnni, avx512); AVX-VNNI alone gets no intrinsic here
    x86_intrin = "avx512_vnni" in flags or {"avx512f", "avx512bw"} <= set(flags)
    assert ("MultiLevelTilingWithIntrin" in str(RuleSet.default("llvm"))) == x86_intrin


@pytest.mark.parametrize(
    ("rule", "params", "message"),
    [
        ("MultiLevelTiling", {"max_innermost_factor": -1},
         "MultiLevelTiling.*max_innermost_factor"),
        ("MultiLevelTiling", {"structure": "SSXS"}, "MultiLevelTiling.*structure"),
        ("ParallelizeVectorizeUnroll", {"unroll_max_steps": [0, -16]},
         "ParallelizeVectorizeUnroll.*unroll_max_steps"),
        ("AddRFactor", {"max_jobs_per_cores": 4}, "AddRFactor.*max_jobs_per_cores"),
        ("MultiLevelTiling", {"reuse_write": {"req": "sometimes", "levels": [1], "scope": "g"}},
         "MultiLevelTiling.*reuse_write"),
        ("NoSuchRule", {}, "NoSuchRule"),
    ],
)
def test_invalid_rules_name_rule_and_parameter(rule: str, params: dict, message: str) -> None:
    rules = RuleSet.default("llvm")
    before = str(rules)
    with pytest.raises(RuleError, match=message):
        rules.set(rule, **params)
    assert str(rules) == before  # a rejected edit changes nothing


def test_invalid_mutator_probability() -> None:
    rules = RuleSet.default("llvm")
    rules.mutator_probs["MutateUnroll"] = -0.5
    with pytest.raises(RuleError, match="MutateUnroll"):
        rules.validate()
    rules.mutator_probs["MutateUnroll"] = 0.1
    rules.mutator_probs["MutateEverything"] = 0.1
    with pytest.raises(RuleError, match="MutateEverything"):
        rules.validate()


def test_set_rules_mid_run(tmp_path: Path, tiny_session: Any) -> None:
    session = tiny_session(tmp_path / "wd", max_trials=8)
    session.step("batch")
    assert session.wait(300) == "paused"
    bad = RuleSet.default("llvm")
    bad.mutator_probs["MutateParallel"] = float("nan")
    with pytest.raises(RuleError, match="MutateParallel"):
        session.set_rules(bad)
    rules = RuleSet.default("llvm").set(
        "MultiLevelTiling", structure="SRSRS", max_innermost_factor=8)
    rules.mutator_probs = {"MutateTileSize": 1.0}
    rules.postprocs = [p for p in rules.postprocs if p.name != "RewriteParallelVectorizeUnroll"]
    done = session.set_rules(rules)
    assert done.result(timeout=120) is None  # applied while paused
    session.resume()
    assert session.wait(300) == "finished"
    kinds = [e.kind for e in session.events]
    assert kinds.count("design_spaces") == 2 and "rules_set" in kinds
    # Set between batches: the next generation is built once, with the new rules.
    assert kinds.count("initial_population") == kinds.count("picked") == 2
    assert kinds.index("rules_set") < len(kinds) - kinds[::-1].index("measured")
    spaces = session.events.of_kind("design_spaces")[-1]
    assert "max_innermost_factor=8" in spaces["rules"]
    # The new spaces tile with 3 levels and innermost factors <= 8. (Database records of the old
    # spaces still seed the population, as in MetaSchedule; their lineage has no design space.)
    batch1 = session.events.of_kind("picked")[-1]["candidates"]
    new_space = [c for c in batch1 if c["design_space"] is not None]
    assert new_space
    for cand in new_space:
        tiles = [d[2] for d in cand["decisions"] if d[1] == "SamplePerfectTile"]
        assert tiles and all(len(t) in (2, 3) and t[-1] <= 8 for t in tiles)
        assert cand["mutator"] in (None, "MutateTileSize")
    assert session.trials_done == 8  # same database, same trial count
    assert session.events.of_kind("cost_model_updated")[-1]["samples"] == 8  # same cost model
    # Each record keeps the rules it was made with: a second environment line from line 5 on.
    run = msviz.open(tmp_path / "wd")
    assert [e["first_line"] for e in run.environments] == [1, 5]
    postprocs = {int(row.line): run.trial(i).own_postprocs()
                 for i, row in enumerate(run.trials.itertuples())}
    assert sorted(postprocs) == list(range(1, 9))
    assert all(postprocs[line] is None for line in range(1, 5))  # the target's defaults
    names = [p.name for p in rules.postprocs]
    for line in range(5, 9):  # the rules set mid-run, without the parallel-vectorize rewrite
        assert [type(p).__name__ for p in postprocs[line]] == names
    # The session's live table (the dashboard's Trace tab replays from it) says the same.
    live = session.run
    assert [e["first_line"] for e in live.environments] == [1, 5]
    live_postprocs = {int(row.line): live.trial(i).own_postprocs()
                      for i, row in enumerate(live.trials.itertuples())}
    assert {line: None if p is None else [type(x).__name__ for x in p]
            for line, p in live_postprocs.items()} == {
        line: None if line < 5 else names for line in range(1, 9)}
