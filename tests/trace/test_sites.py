"""Decision sites and their valid choices, checked against independent enumerations and TVM."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
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
from msviz.trace.sampling import out_of_range, tvm_tile


def brute_force_tiles(extent: int, n: int, max_inner: int) -> set[tuple[int, ...]]:
    """Every n-tuple of divisors of extent multiplying to extent (slow and obviously right)."""
    divisors = [d for d in range(1, extent + 1) if extent % d == 0]
    return {
        t
        for t in itertools.product(divisors, repeat=n)
        if math.prod(t) == extent and (max_inner < 1 or t[-1] <= max_inner)
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
            assert all(s.out_of_range == "" for s in sites), name


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


# -- decisions outside their sampler's range ---------------------------------------------------


def add_mod(extent: int = 512):
    """``B[i] = A[i] + 1`` over one loop of ``extent`` (TVM's add_rfactor test has the like)."""
    from tvm import te

    a = te.placeholder((extent,), name="A")
    b = te.compute((extent,), lambda i: a[i] + 1.0, name="B")
    return compat.normalize_mod(te.create_prim_func([a, b]))


def tiled_add(mod, decision, *, unroll=None):
    """A schedule of :func:`add_mod` whose loop is split by a SamplePerfectTile of ``decision``
    (n=2, max_innermost_factor=64), after a SampleCategorical when ``unroll`` is an index."""
    sch = compat.Schedule(mod)
    (i,) = sch.get_loops(sch.get_sblock("B"))
    if unroll is not None:
        sch.sample_categorical([0, 16, 64], [0.2, 0.5, 0.3], decision=unroll)
    sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=64, decision=decision))
    return sch


#: Every n=2 tiling of 512 with the innermost factor <= 64.
TILES_512 = ((8, 64), (16, 32), (32, 16), (64, 8), (128, 4), (256, 2), (512, 1))
TILE_LABELS_512 = ("[8, 64]", "[16, 32]", "[32, 16]", "[64, 8]", "[128, 4]", "[256, 2]",
                   "[512, 1]")


def test_recorded_tile_beyond_max_innermost_factor_is_flagged():
    # TVM takes [4, 128] under max_innermost_factor=64 as given and replays it unchanged
    mod = add_mod()
    sch = tiled_add(mod, [4, 128])
    assert decision_sites(sch, mod) == [
        DecisionSite(
            index=2, kind="SamplePerfectTile", decision=(4, 128), choices=TILES_512,
            labels=TILE_LABELS_512, editable=True, subject="i", outputs=("v2", "v3"),
            used_by=(3,), extent=512, n=2, max_innermost_factor=64,
            out_of_range="innermost factor 128 > max_innermost_factor 64",
        ),
    ]
    frame = sites_frame(decision_sites(sch, mod))
    assert frame.to_dict("records") == [{
        "index": 2, "kind": "SamplePerfectTile", "subject": "i", "decision": (4, 128),
        "label": "(4, 128)", "count": 7, "editable": True, "choices": list(TILE_LABELS_512),
        "out_of_range": "innermost factor 128 > max_innermost_factor 64",
    }]
    # in range: nothing to say
    (site,) = decision_sites(tiled_add(mod, [8, 64]), mod)
    assert site.decision == (8, 64) and site.out_of_range == "" and site.note == ""


def replayed_decisions(trace, mod):
    """The decisions TVM itself records when it replays ``trace`` on a fresh schedule."""
    sch = compat.Schedule(mod)
    trace.apply_to_schedule(sch, remove_postproc=False)
    return [compat.to_jsonable(d) for d in sch.trace.decisions.values()]


def test_recorded_categorical_index_and_tile_product_out_of_range():
    # a Schedule never records these (TVM replaces the tile, rejects the index); a stored or
    # edited trace can hold them
    mod = add_mod()
    trace = tiled_add(mod, [8, 64], unroll=1).trace
    insts = list(trace.insts)
    trace = trace.with_decision(insts[2], 7, remove_postproc=False)
    trace = trace.with_decision(insts[3], [4, 100], remove_postproc=False)
    assert decision_sites(trace, mod) == [
        DecisionSite(
            index=2, kind="SampleCategorical", decision=7, choices=(0, 1, 2),
            labels=("0 (p=0.2)", "16 (p=0.5)", "64 (p=0.3)"), editable=True, subject="",
            outputs=("v2",), used_by=(), candidates=(0, 16, 64), probs=(0.2, 0.5, 0.3),
            note="TVM cannot replay this index (it stops); the sites after it are listed as if "
                 "it were 1",
            out_of_range="index 7 is outside the 3 candidates [0, 16, 64] (0..2)",
        ),
        DecisionSite(
            index=3, kind="SamplePerfectTile", decision=(4, 100), choices=TILES_512,
            labels=TILE_LABELS_512, editable=True, subject="i", outputs=("v3", "v4"),
            used_by=(4,), extent=512, n=2, max_innermost_factor=64,
            note="TVM replays [1, 512] in place of these factors",
            out_of_range="factors multiply to 400, not to the loop extent 512; "
                         "innermost factor 100 > max_innermost_factor 64",
        ),
    ]
    # what the notes say is what TVM does
    with pytest.raises(Exception, match="Wrong decision value, where n = 3, but decision is: 7"):
        replayed_decisions(trace, mod)
    fixed = trace.with_decision(insts[2], 1, remove_postproc=False)
    assert replayed_decisions(fixed, mod) == [1, [1, 512]]


@pytest.mark.parametrize("recorded, replayed", [
    ([4, 128], [4, 128]),  # divides the extent: replayed as recorded, however far out of range
    ([3, 128], [4, 128]),  # the outer factor is what is left
    ([1024, 1], [512, 1]),
    ([4, 100], [1, 512]),  # an inner factor that does not divide takes all that is left
    ([0, 512], [1, 512]),
    ([-4, 128], [4, 128]),
])
def test_tvm_tile_is_what_tvm_replays(recorded, replayed):
    mod = add_mod()
    trace = tiled_add(mod, [8, 64]).trace
    edited = trace.with_decision(list(trace.insts)[2], recorded, remove_postproc=False)
    assert replayed_decisions(edited, mod) == [replayed]
    assert tvm_tile(recorded, 512) == tuple(replayed)
    (site,) = decision_sites(edited, mod)
    assert site.decision == tuple(recorded) and site.out_of_range
    assert site.note == ("" if replayed == recorded
                         else f"TVM replays {replayed} in place of these factors")


def test_tiles_tvm_cannot_replay_are_listed_and_the_replay_goes_on():
    mod = add_mod()
    trace = tiled_add(mod, [8, 64], unroll=1).trace
    insts = list(trace.insts)
    # TVM divides by a factor 0 (SIGFPE: the kernel would die); three factors for two outputs
    # stop it. Put them first, so that the sites after them must still be listed.
    zero = trace.with_decision(insts[3], [512, 0], remove_postproc=False)
    zero = zero.with_decision(insts[2], 9, remove_postproc=False)
    cat, tile = decision_sites(zero, mod)
    assert (cat.out_of_range, tile.decision, tile.out_of_range, tile.note) == (
        "index 9 is outside the 3 candidates [0, 16, 64] (0..2)", (512, 0),
        "a factor below 1",
        "TVM cannot replay these factors (an inner factor 0: it divides by it and the process "
        "dies); the sites after it are listed as if it were [1, 512]")
    negative = trace.with_decision(insts[3], [-4, -128], remove_postproc=False)
    (_, tile) = decision_sites(negative, mod)
    assert (tile.out_of_range, tile.note) == (
        "a factor below 1",
        "TVM cannot replay these factors (it replays [-4, -128] and stops where they are used: "
        "factors must be positive); the sites after it are listed as if it were [1, 512]")
    with pytest.raises(Exception, match="factors are required to be positive"):
        replayed_decisions(negative.with_decision(insts[2], 1, remove_postproc=False), mod)
    three = trace.with_decision(insts[3], [2, 2, 128], remove_postproc=False)
    (_, tile) = decision_sites(three, mod)
    assert (tile.out_of_range, tile.note) == (
        "3 factors, not n=2; innermost factor 128 > max_innermost_factor 64",
        "TVM cannot replay these factors (3 factors for 2 outputs: it stops); the sites after "
        "it are listed as if it were [1, 512]")
    with pytest.raises(Exception, match=r"old_outputs\.size"):
        replayed_decisions(three, mod)


def test_a_factor_zero_kills_tvm():
    """Why decision_sites never hands TVM a factor 0: a fresh process replaying one dies."""
    import subprocess
    import sys

    script = (
        "from tvm import te\n"
        "from msviz import compat\n"
        "a = te.placeholder((512,), name='A')\n"
        "mod = compat.normalize_mod(te.create_prim_func(\n"
        "    [a, te.compute((512,), lambda i: a[i] + 1.0, name='B')]))\n"
        "sch = compat.Schedule(mod)\n"
        "(i,) = sch.get_loops(sch.get_sblock('B'))\n"
        "sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=64, decision=[8, 64]))\n"
        "trace = sch.trace\n"
        "zero = trace.with_decision(list(trace.insts)[2], [512, 0], remove_postproc=False)\n"
        "zero.apply_to_schedule(compat.Schedule(mod), remove_postproc=False)\n"
        "print('replayed')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode < 0 and "replayed" not in done.stdout, done  # killed by a signal
    # and in this process it is listed, not replayed
    mod = add_mod()
    trace = tiled_add(mod, [8, 64]).trace
    zero = trace.with_decision(list(trace.insts)[2], [512, 0], remove_postproc=False)
    (site,) = decision_sites(zero, mod)
    assert site.decision == (512, 0) and "as if it were [1, 512]" in site.note


@pytest.mark.parametrize("kind, decision, info, reason", [
    ("SamplePerfectTile", (2, 2, 128), {"n": 2, "extent": 512, "max_innermost_factor": -1},
     "3 factors, not n=2"),
    ("SamplePerfectTile", (0, 512), {"n": 2, "extent": 512, "max_innermost_factor": 64},
     "a factor below 1; innermost factor 512 > max_innermost_factor 64"),
    ("SamplePerfectTile", (4, 128), {"n": 2, "max_innermost_factor": 64},  # extent unknown
     "innermost factor 128 > max_innermost_factor 64"),
    ("SamplePerfectTile", (4, 128), {"n": 2, "extent": 512, "max_innermost_factor": -1}, ""),
    ("SampleCategorical", -1, {"candidates": (1, 2)}, "index -1 is outside the 2 candidates "
     "[1, 2] (0..1)"),
    ("SampleCategorical", 1, {"candidates": (1, 2)}, ""),
    ("SampleComputeLocation", 5, {"editable": True, "choices": (-2, -1, 0), "subject": "pad"},
     "5 is not a location where pad can be computed (valid: -2, -1, 0)"),
    ("SampleComputeLocation", 0, {"editable": True, "choices": (-2, -1, 0), "subject": "pad"},
     ""),
    ("SamplePartitionedTile", (4, 128), {"editable": False}, ""),
    ("SamplePerfectTile", None, {"n": 2}, ""),
])
def test_out_of_range_reasons(kind, decision, info, reason):
    assert out_of_range(kind, decision, info) == reason


def test_recorded_compute_location_out_of_range(spaces):
    mod, space_list = spaces["CBR"]
    space = next(s for s in space_list if any(
        site.kind == "SampleComputeLocation" for site in decision_sites(s, mod)))
    site = next(s for s in decision_sites(space, mod) if s.kind == "SampleComputeLocation")
    bad = max(site.choices) + 7
    inst = list(space.trace.insts)[site.index]
    trace = space.trace.with_decision(inst, bad, remove_postproc=False)
    (flagged,) = [s for s in decision_sites(trace, mod) if s.index == site.index]
    assert flagged._replace(decision=site.decision, out_of_range="", note="") == site
    assert flagged.decision == bad
    valid = ", ".join(str(c) for c in site.choices)
    assert flagged.out_of_range == (
        f"{bad} is not a location where PadInput can be computed (valid: {valid})")
    # TVM snaps it to the nearest valid location below it, and the note names that one
    snapped = max(site.choices)
    assert flagged.note == f"TVM computes the block at {site.label_of(snapped)} instead"
    replay = compat.Schedule(mod)
    trace.apply_to_schedule(replay, remove_postproc=False)
    insts = list(replay.trace.insts)
    assert int(replay.trace.get_decision(insts[site.index])) == snapped
