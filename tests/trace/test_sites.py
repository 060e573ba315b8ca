"""Decision sites and their valid choices, checked against independent enumerations and TVM."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import msviz
from msviz import compat, workloads
from msviz.trace import (
    DecisionSite,
    decision_sites,
    design_space_sizes,
    perfect_tiles,
    sites_frame,
    space_size,
    with_decisions,
)


def brute_force_tiles(extent: int, n: int, max_inner: int) -> set[tuple[int, ...]]:
    """Every n-tuple of divisors of extent multiplying to extent (slow and obviously right)."""
    divisors = [d for d in range(1, extent + 1) if extent % d == 0]
    return {
        t
        for t in itertools.product(divisors, repeat=n)
        if math.prod(t) == extent and (max_inner < 1 or t[-1] <= max_inner)
    }


@settings(max_examples=40, deadline=None)
@given(extent=st.integers(1, 24), n=st.integers(1, 3), max_inner=st.sampled_from([-1, 1, 2, 4, 64]))
def test_perfect_tiles_equal_brute_force(extent, n, max_inner):
    got = list(perfect_tiles(extent, n, max_inner))
    assert len(got) == len(set(got))
    assert set(got) == brute_force_tiles(extent, n, max_inner)


def test_sites_of_the_best_gmm_trial(gmm_best):
    trace = gmm_best.trace
    insts = list(trace.insts)
    sites = decision_sites(gmm_best)
    sampling = [i for i, inst in enumerate(insts) if inst.kind.name.startswith("Sample")]
    assert [s.index for s in sites] == sampling
    extents = {"b": 1, "i": 128, "j": 128, "k": 128}  # GMM-0 is (1, 128, 128) x (1, 128, 128)
    for site in sites:
        inst = insts[site.index]
        assert site.kind == inst.kind.name and site.editable
        if site.kind == "SamplePerfectTile":
            n, max_inner = int(inst.attrs[0]), int(inst.attrs[1])
            assert site.extent == extents[site.subject]
            assert set(site.choices) == brute_force_tiles(site.extent, n, max_inner)
            assert site.count == len(brute_force_tiles(site.extent, n, max_inner))
            assert site.decision == tuple(int(f) for f in trace.get_decision(inst))
            assert site.decision in site.choices
        else:
            assert site.kind == "SampleCategorical"
            assert site.candidates == tuple(int(c) for c in inst.attrs[0])
            assert site.probs == pytest.approx([float(p) for p in inst.attrs[1]])
            assert site.choices == tuple(range(len(site.candidates)))
            assert "unroll" in site.subject
    assert space_size(sites) == math.prod(s.count for s in sites)
    assert space_size(gmm_best) == space_size(sites)
    frame = sites_frame(sites)
    assert list(frame["index"]) == sampling
    assert list(frame["count"]) == [s.count for s in sites]


def test_compute_location_choices_are_exactly_those_tvm_keeps(spaces):
    mod, space_list = spaces["CBR"]
    found = 0
    for space in space_list:
        for site in decision_sites(space, mod):
            if site.kind != "SampleComputeLocation":
                continue
            found += 1
            assert site.subject == "PadInput"
            assert -1 in site.choices and site.decision in site.choices
            assert len(site.labels) == len(site.choices)
            assert site.label_of(-1) == "root"
            for choice in site.choices:  # each valid choice replays and stays as given
                replay = with_decisions(space, {site.index: choice}, mod=mod, postprocs=False)
                kept = replay.trace.get_decision(list(replay.trace.insts)[site.index])
                assert int(kept) == choice
            invalid = [c for c in range(-2, 30) if c not in site.choices]
            with pytest.raises(msviz.DecisionError, match=rf"instruction {site.index}\b"):
                with_decisions(space, {site.index: invalid[0]}, mod=mod)
    assert found >= 1


def test_design_space_sizes_per_space(spaces):
    mod, space_list = spaces["CBR"]
    table = design_space_sizes(space_list, mod)
    assert list(table["space"]) == list(range(len(space_list)))
    for row, space in zip(table.itertuples(), space_list):
        assert row.size == space_size(decision_sites(space, mod)) > 1
        assert row.instructions == len(space.trace.insts)


def test_a_schedule_needs_its_workload(spaces):
    _, space_list = spaces["GMM"]
    with pytest.raises(TypeError, match="mod="):
        decision_sites(space_list[0])


# -- the ways the seeds write a schedule -------------------------------------------------------


def test_manual_schedule_has_no_sites_and_replays():
    mod = workloads.get("GMM", 0).mod
    sch = compat.Schedule(mod)
    _, i, j, k = sch.get_loops(sch.get_sblock("Z"))
    i0, i1, i2, i3 = sch.split(i, [2, 4, 4, 4])
    j0, j1, j2, j3 = sch.split(j, [4, 2, 4, 4])
    k0, k1 = sch.split(k, [16, 8])
    sch.reorder(i0, j0, i1, j1, k0, i2, j2, k1, i3, j3)  # SSRSRS tiles
    assert decision_sites(sch, mod) == []
    assert space_size(sch, mod) == 1
    replay = with_decisions(sch, mod=mod, postprocs=False)
    assert compat.structural_equal(replay.mod, sch.mod)


def _autotvm_style(sch):
    _, i, j, k = sch.get_loops(sch.get_sblock("Z"))
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16))
    j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=16))
    k0, k1 = sch.split(k, sch.sample_perfect_tile(k, n=2, max_innermost_factor=8))
    sch.reorder(i0, j0, k0, i1, k1, j1)
    unroll = sch.sample_categorical([0, 16, 64], [0.4, 0.3, 0.3])
    fused = sch.fuse(i0, j0)
    sch.parallel(fused)
    sch.annotate(fused, "pragma_auto_unroll_max_step", unroll)


def test_autotvm_style_schedule_function(make_spaces):
    mod = workloads.get("GMM", 0).mod
    sch = compat.Schedule(mod, seed=3)
    _autotvm_style(sch)
    sites = decision_sites(sch, mod)
    assert [s.kind for s in sites] == ["SamplePerfectTile"] * 3 + ["SampleCategorical"]
    counts = [len(brute_force_tiles(128, 2, m)) for m in (16, 16, 8)]
    assert [s.count for s in sites] == [*counts, 3]
    assert [s.subject for s in sites[:3]] == ["i", "j", "k"]
    new = next(c for c in sites[2].choices if c != sites[2].decision)
    replay = with_decisions(sch, {sites[2].index: new, sites[3].index: 2}, mod=mod)
    assert decision_sites(replay)[2].decision == new
    # the same function as a MetaSchedule design space (ScheduleFn)
    space_gen = compat.ms.space_generator.ScheduleFn(
        _autotvm_style, sch_rules=[], postprocs="llvm", mutator_probs="llvm"
    )
    (space,) = make_spaces(mod, space_gen)
    assert [s.count for s in decision_sites(space, mod)] == [s.count for s in sites]


def test_default_rule_design_spaces(spaces):
    for name, (mod, space_list) in spaces.items():
        assert len(space_list) >= 1, name
        for space in space_list:
            sites = decision_sites(space, mod)
            kinds = {s.kind for s in sites}
            assert "SamplePerfectTile" in kinds and "SampleCategorical" in kinds, name
            assert all(s.editable and s.decision in s.choices for s in sites), name


def test_python_schedule_rule(make_spaces):
    from tvm.ir.utils import derived_object

    ms = compat.ms

    @derived_object
    class TwoLevelTile(ms.schedule_rule.PyScheduleRule):
        def _initialize_with_tune_context(self, context):
            pass

        def apply(self, sch, block):
            if sch.get(block).name_hint != "Z":
                return [sch]
            out = []
            for inner in (8, 16):
                s = sch.copy()
                _, i, j, k = s.get_loops(s.get_sblock("Z"))
                i0, i1 = s.split(i, s.sample_perfect_tile(i, n=2, max_innermost_factor=inner))
                j0, j1 = s.split(j, s.sample_perfect_tile(j, n=2, max_innermost_factor=inner))
                s.reorder(i0, j0, k, i1, j1)
                s.parallel(i0)
                out.append(s)
            return out

        def clone(self):
            return TwoLevelTile()

    mod = workloads.get("GMM", 0).mod
    space_gen = ms.space_generator.PostOrderApply(
        sch_rules=[TwoLevelTile()], postprocs=[], mutator_probs={}
    )
    space_list = make_spaces(mod, space_gen)
    assert len(space_list) == 2
    inners = []
    for space in space_list:
        sites = decision_sites(space, mod)
        inner = sites[0].max_innermost_factor
        inners.append(inner)
        assert [s.max_innermost_factor for s in sites] == [inner, inner]
        assert [s.count for s in sites] == [len(brute_force_tiles(128, 2, inner))] * 2
        assert all(s.choices[-1][-1] <= inner for s in sites)
    assert sorted(inners) == [8, 16]


def test_site_is_a_plain_record():
    site = DecisionSite(3, "SampleCategorical", 1, (0, 1), ("a", "b"), True)
    assert site.count == 2 and site.label_of(1) == "b"
    assert DecisionSite(4, "SamplePartitionedTile", (2, 2), (), (), False).count == 1
