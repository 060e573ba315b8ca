"""Carry a schedule to a sibling shape: kept decisions, nearest valid choices, named failures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import tvm
from tvm import te, topi
from tvm.s_tir.meta_schedule.testing import te_workload

from msviz import compat, workloads
from msviz.trace import (
    Carry,
    carry_trace,
    decision_sites,
    default_postprocs,
    nearest_choice,
    perfect_tiles,
)
from msviz.trace.replay import apply_trace
from msviz.trace.replay_errors import replay_error
from msviz.trace.source import fresh_schedule

TILE, CAT, LOC = "SamplePerfectTile", "SampleCategorical", "SampleComputeLocation"


def sampled(mod, space, seed: int):
    """The trace of one design space with its decisions sampled afresh from ``seed``."""
    sch = fresh_schedule(mod, seed=seed)
    compat.Trace(space.trace.insts, {}).apply_to_schedule(sch, remove_postproc=True)
    return sch.trace


def run(mod) -> tuple[np.ndarray, list]:
    """Build ``mod`` for llvm and run it on fixed random inputs; return (its output, the inputs)."""
    lib = tvm.tirx.build(mod, target=compat.make_target("llvm"))
    rng = np.random.default_rng(0)
    args = [np.zeros(a.shape, a.dtype) for a in compat.ArgInfo.from_prim_func(mod["main"])]
    for a in args[:-1]:
        a[...] = rng.standard_normal(a.shape)
    dev = tvm.cpu(0)
    tensors = [tvm.runtime.tensor(a, dev) for a in args]
    lib[lib.entry_name](*tensors)
    return tensors[-1].numpy(), args


def update_loops_product(sch, block: str) -> int:
    """The product of the extents of the loops around ``block`` (asked of a copy)."""
    view = sch.copy()
    return math.prod(int(view.get(lp).extent) for lp in view.get_loops(view.get_sblock(block)))


# -- nearest_choice, by hand -----------------------------------------------------------------


def test_nearest_tile_by_hand():
    # 128 -> 96 = 2^5 * 3: (2, 3, 16) and (2, 4, 12) are both log2(4/3) away; the innermost
    # factor 16 of (2, 3, 16) matches, so it wins
    assert nearest_choice(TILE, [2, 4, 16], tuple(perfect_tiles(96, 3, 64))) == (2, 3, 16)
    # 128 -> 24: every tuple whose factors all shrink is log2(128/24) away; innermost 12 is
    # closest to 16 (log2(4/3)), then middle 2 to 4 (1) beats 1 (2)
    assert nearest_choice(TILE, [2, 4, 16], tuple(perfect_tiles(24, 3, 64))) == (1, 2, 12)
    # a tie decided by the innermost factor: (2, 4) and (4, 2) are both 1 away from (4, 4)
    assert nearest_choice(TILE, (4, 4), tuple(perfect_tiles(8, 2))) == (2, 4)
    # under max_innermost_factor 16, 64 cannot stay innermost: (1, 8, 16), (2, 4, 16) and
    # (4, 2, 16) are all 4 away (ratios 1*4*4, 2*2*4, 4*1*4); 16 is innermost in each, then the
    # middle factor 2 matches in (4, 2, 16)
    assert nearest_choice(TILE, [1, 2, 64], tuple(perfect_tiles(128, 3, 16))) == (
        4, 2, 16)
    # a valid decision is kept; a factor 0 (TVM would die of it) counts as 1
    assert nearest_choice(TILE, [2, 4, 16], tuple(perfect_tiles(128, 3, 64))) == (2, 4, 16)
    assert nearest_choice(TILE, [1, 0, 4], tuple(perfect_tiles(8, 3))) == (2, 1, 4)
    # another length: aligned at the innermost factor, (2, 2, 4, 16) as (4, 4, 16); (4, 1, 16),
    # (1, 4, 16) and (2, 2, 16) are all 4 away, and the middle 4 of (1, 4, 16) matches
    assert nearest_choice(TILE, [2, 2, 4, 16], tuple(perfect_tiles(64, 3))) == (1, 4, 16)


def test_nearest_categorical_and_compute_location_by_hand():
    assert nearest_choice(CAT, 2, (0, 1, 2, 3)) == 2
    assert nearest_choice(CAT, 5, (0, 1, 2)) == 2
    assert nearest_choice(CAT, -1, (0, 1, 2)) == 0
    # a loop position goes to the nearest valid loop position, the outer one on a tie
    assert nearest_choice(LOC, 3, (-2, -1, 0, 1)) == 1
    assert nearest_choice(LOC, 2, (-1, 1, 3)) == 1
    assert nearest_choice(LOC, 0, (-1, 4)) == 4
    assert nearest_choice(LOC, 2, (-2, -1)) == -1  # no loop position is valid
    # root and inline are kept where valid; an invalid inline becomes root
    assert nearest_choice(LOC, -1, (-2, -1, 0)) == -1
    assert nearest_choice(LOC, -2, (-2, -1, 0)) == -2
    assert nearest_choice(LOC, -2, (-1, 0, 1)) == -1
    # kinds msviz cannot enumerate, and no choices: the decision as given
    assert nearest_choice("SampleUniform", 7, (1, 2)) == 7
    assert nearest_choice(CAT, 7, ()) == 7


# -- carrying GMM to sibling shapes ----------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 96, 128, 128), (1, 24, 128, 128), (1, 96, 128, 64)])
def test_gmm_carried_to_a_sibling_shape(spaces, shape):
    old_mod, space_list = spaces["GMM"]  # GMM-0: (1, 128, 128, 128)
    new_mod = workloads.get("GMM", shape=shape).mod
    procs = default_postprocs(new_mod, "llvm")
    extent = dict(zip("bijk", shape))  # batch_matmul_nkkm(B, N, M, K): loops b, i, j, k
    for k, space in enumerate(space_list):
        trace = sampled(old_mod, space, seed=k + 1)
        old_sites = {s.index: s for s in decision_sites(trace, old_mod)}
        tiles = [s for s in old_sites.values() if s.kind == TILE]
        expected = tuple(s.index for s in tiles if math.prod(s.decision) != extent[s.subject])
        assert expected  # the i loop changes in every shape here

        carried = carry_trace(trace, new_mod, procs)
        assert isinstance(carried, Carry) and carried.error is None
        assert carried.adjusted == expected
        # adjusted tiles are the nearest factorizations of the new extent; the rest are kept
        new_sites = decision_sites(carried.schedule, new_mod)
        assert [s.index for s in new_sites] == list(old_sites)
        for site in new_sites:
            old = old_sites[site.index]
            assert site.out_of_range == ""
            if site.index in expected:
                choices = tuple(perfect_tiles(extent[old.subject], old.n,
                                              old.max_innermost_factor))
                assert site.decision == nearest_choice(TILE, old.decision, choices)
            else:
                assert site.decision == old.decision
        # the loops around the update block multiply to the new iteration space
        assert update_loops_product(carried.schedule, "Z_update") == math.prod(shape)
        out, (x, y, _) = run(carried.schedule.mod)
        np.testing.assert_allclose(out, x @ y, rtol=1e-4, atol=1e-3)


def test_a_record_from_json_carries_like_its_trace(spaces):
    """A tuning record's JSON, read back with its workload as msviz.records does."""
    old_mod, space_list = spaces["GMM"]
    trace = sampled(old_mod, space_list[0], seed=7)
    record = compat.TuningRecord(trace, compat.Workload(old_mod), [1e-3],
                                 compat.make_target("llvm"))
    line = json.dumps(compat.to_jsonable(record.as_json()))
    back = compat.tuning_record_from_json(json.loads(line), compat.Workload(old_mod))
    new_mod = workloads.get("GMM", shape=(1, 96, 128, 128)).mod
    from_trace = carry_trace(back.trace, new_mod, default_postprocs(new_mod, "llvm"))
    from_record = carry_trace(back, new_mod, "llvm")  # the record itself; a target's postprocs
    direct = carry_trace(trace, new_mod, "llvm")
    assert from_trace.error is None and from_trace.adjusted == direct.adjusted
    assert compat.structural_hash(from_trace.schedule.mod) == compat.structural_hash(
        from_record.schedule.mod) == compat.structural_hash(direct.schedule.mod)


# -- the same workload; compute locations ----------------------------------------------------


@pytest.mark.parametrize("name", ["GMM", "CBR"])
def test_a_trace_carried_to_its_own_workload_is_unchanged(spaces, name):
    mod, space_list = spaces[name]
    procs = default_postprocs(mod, "llvm")
    for k, space in enumerate(space_list):
        trace = sampled(mod, space, seed=k + 3)
        original = apply_trace(mod, trace, procs).schedule
        carried = carry_trace(trace, mod, procs)
        assert carried.adjusted == () and carried.error is None
        assert compat.structural_hash(carried.schedule.mod) == compat.structural_hash(
            original.mod)


def test_conv_relu_carried_to_7x7_moves_compute_locations(spaces):
    old_mod, space_list = spaces["CBR"]  # conv2d NHWC 1x14x14x16 -> 16, 3x3, + relu
    data, weight, out = te_workload.conv2d_nhwc(1, 7, 7, 16, 16, 3, 1, 1)
    new_mod = compat.normalize_mod(te.create_prim_func([data, weight, topi.nn.relu(out)]))
    procs = default_postprocs(new_mod, "llvm")
    for space in space_list:
        if not any(inst.kind.name == LOC for inst in space.trace.insts):
            continue
        for seed in range(1, 21):
            trace = sampled(old_mod, space, seed)
            carried = carry_trace(trace, new_mod, procs)
            assert carried.error is None
            insts = list(trace.insts)
            if any(insts[i].kind.name == LOC for i in carried.adjusted):
                break
        else:
            continue
        break
    else:
        pytest.fail("no seed moved a compute location when carried to 7x7")
    assert all(s.out_of_range == "" for s in decision_sites(carried.schedule, new_mod))
    got, args = run(carried.schedule.mod)
    want, _ = run(new_mod)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    assert [a.shape for a in args][-1] == (1, 7, 7, 16)


# -- failures are values ---------------------------------------------------------------------


def test_a_conv_trace_on_gmm_fails_naming_the_instruction(spaces):
    c2d_mod, c2d_spaces = spaces["C2D"]
    gmm_mod, gmm_spaces = spaces["GMM"]
    carried = carry_trace(c2d_spaces[0].trace, gmm_mod, "llvm")
    assert carried.schedule is None and carried.adjusted == ()
    assert carried.error.startswith("instruction 0 (GetSBlock) failed")
    assert "PadInput" in carried.error
    # the other way round: GMM's block Z is not in a conv either
    back = carry_trace(gmm_spaces[0].trace, c2d_mod, None)
    assert back.schedule is None and back.error.startswith("instruction 0 (GetSBlock)")
    # a block Z with three loops, not four: GMM's trace fails further on, where replay_error
    # (the prefix search with_decisions reports) finds it too
    te_x, te_y = te.placeholder((64, 64), name="X"), te.placeholder((64, 64), name="Y")
    r = te.reduce_axis((0, 64), name="k")
    z = te.compute((64, 64), lambda i, j: te.sum(te_x[i, r] * te_y[r, j], axis=r), name="Z")
    flat = compat.normalize_mod(te.create_prim_func([te_x, te_y, z]))
    trace = gmm_spaces[0].trace
    wrong = carry_trace(trace, flat, "llvm")
    culprit = replay_error(trace, flat, {}, RuntimeError("?"))
    assert wrong.schedule is None
    assert wrong.error.startswith(f"instruction {culprit.index} ({culprit.kind}) failed")
    assert culprit.kind == "GetLoops" and "4 vs. 3" in wrong.error


def test_a_postproc_that_refuses_or_raises_is_named(spaces):
    mod, space_list = spaces["GMM"]
    new_mod = workloads.get("GMM", shape=(1, 24, 128, 128)).mod
    trace = sampled(mod, space_list[0], seed=2)

    class Refuse:
        def apply(self, sch):
            return False

    class Boom:
        def apply(self, sch):
            raise RuntimeError("no schedule for you")

    refused = carry_trace(trace, new_mod, [("Refuse", Refuse())])
    assert refused == Carry(None, refused.adjusted, "postproc Refuse rejected the schedule")
    assert refused.adjusted  # the i tile was mapped before the postproc refused
    raised = carry_trace(trace, new_mod, [("Boom", Boom())])
    assert raised.schedule is None
    assert raised.error == "postproc Boom failed: RuntimeError: no schedule for you"


def test_an_out_of_range_categorical_is_mapped_not_fatal(spaces):
    """TVM stops at a categorical index outside its candidates; carrying maps it."""
    mod, space_list = spaces["GMM"]
    trace = sampled(mod, space_list[0], seed=4)
    insts = list(trace.insts)
    cat = next(i for i, inst in enumerate(insts) if inst.kind.name == CAT)
    bad = trace.with_decision(insts[cat], 9, remove_postproc=True)
    carried = carry_trace(bad, mod, "llvm")
    assert carried.error is None and carried.adjusted == (cat,)
    new_insts = list(carried.schedule.trace.insts)
    assert int(carried.schedule.trace.get_decision(new_insts[cat])) == 3
