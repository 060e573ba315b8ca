"""Edit and replay: stored decisions reproduce the trial, edits change it, bad edits are named."""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import msviz
from msviz import compat
from msviz.trace import Replay, decision_sites, target_of, with_decisions


def run_gmm(mod) -> None:
    """Build ``mod`` for llvm and check it computes a batch matmul."""
    lib = tvm.tirx.build(mod, target=compat.make_target("llvm"))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 128, 128)).astype("float32")
    y = rng.standard_normal((1, 128, 128)).astype("float32")
    dev = tvm.cpu(0)
    args = [tvm.runtime.tensor(a, dev) for a in (x, y, np.zeros((1, 128, 128), "float32"))]
    lib[lib.entry_name](*args)
    np.testing.assert_allclose(args[2].numpy(), x @ y, rtol=1e-4, atol=1e-3)


def test_stored_decisions_replay_to_the_stored_module(gmm_best):
    replay = with_decisions(gmm_best)
    assert isinstance(replay, Replay)
    assert compat.structural_equal(replay.mod, gmm_best.mod)
    # stock's llvm postprocs; an AVX-512 or VNNI host (rule kind avx512/vnni) adds
    # RewriteTensorize before RewriteLayout (GetRuleKindFromTarget, postproc.cc)
    x86_tensor = compat.rule_kind(target_of(gmm_best)) in ("avx512", "vnni")
    assert replay.postprocs == [
        "DisallowDynamicLoop",
        "RewriteParallelVectorizeUnroll",
        "RewriteReductionBlock",
        *(["RewriteTensorize"] if x86_tensor else []),
        "RewriteLayout",
    ]
    # the same with the bare trace and the workload given explicitly
    bare = with_decisions(gmm_best.trace, {}, mod=gmm_best.record.workload.mod)
    assert compat.structural_equal(bare.mod, gmm_best.mod)


def test_a_valid_tile_edit_changes_the_module_and_stays_correct(gmm_best):
    sites = [s for s in decision_sites(gmm_best) if s.kind == "SamplePerfectTile" and s.count > 1]
    site = sites[0]
    new = next(c for c in site.choices if c != site.decision)
    replay = with_decisions(gmm_best, {site.index: list(new)})
    assert not compat.structural_equal(replay.mod, gmm_best.mod)
    assert replay.edits == {site.index: list(new)}
    insts = list(replay.trace.insts)
    assert tuple(int(f) for f in replay.trace.get_decision(insts[site.index])) == new
    # every other decision is as stored
    again = {s.index: s.decision for s in decision_sites(replay)}
    assert again == {s.index: (new if s.index == site.index else s.decision)
                     for s in decision_sites(gmm_best)}
    run_gmm(replay.mod)
    run_gmm(gmm_best.mod)
    # a Replay can be edited again, and remembers its workload
    back = with_decisions(replay, {site.index: site.decision})
    assert compat.structural_equal(back.mod, gmm_best.mod)


def test_an_invalid_tile_names_the_instruction(gmm_best):
    site = next(s for s in decision_sites(gmm_best) if s.kind == "SamplePerfectTile"
                and s.extent == 128)
    bad = [3, 3, 3, 3][: site.n]
    with pytest.raises(msviz.DecisionError) as info:
        with_decisions(gmm_best, {site.index: bad})
    message = str(info.value)
    assert f"instruction {site.index} " in message
    assert "SamplePerfectTile" in message and "128" in message
    assert info.value.index == site.index and info.value.value == bad
    # right product, too large innermost factor: TVM would accept it silently
    too_inner = [1] * (site.n - 1) + [128]
    with pytest.raises(msviz.DecisionError, match="max_innermost_factor 64"):
        with_decisions(gmm_best, {site.index: too_inner})
    with pytest.raises(msviz.DecisionError, match=f"has {site.n + 1} factors, not {site.n}"):
        with_decisions(gmm_best, {site.index: [1] * site.n + [128]})


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        ({999: 1}, r"instruction 999: index out of range"),
        ({-1: 1}, r"instruction -1: index out of range"),
        ({0: 1}, r"instruction 0 \(GetSBlock\): a GetSBlock instruction has no decision"),
        ({"x": 1}, r"'x' is not an instruction index"),
    ],
)
def test_bad_indices(gmm_best, edit, pattern):
    with pytest.raises(msviz.DecisionError, match=pattern):
        with_decisions(gmm_best, edit)


def test_bad_categorical_and_postproc_part(gmm_best):
    cat = next(s for s in decision_sites(gmm_best) if s.kind == "SampleCategorical")
    for bad in (len(cat.candidates), -1, 1.5, True, [0]):
        with pytest.raises(msviz.DecisionError, match=rf"instruction {cat.index} "):
            with_decisions(gmm_best, {cat.index: bad})
    rows = msviz.trace_rows(gmm_best)
    after = rows[rows["postproc"]]["index"].max()
    with pytest.raises(msviz.DecisionError, match=f"instruction {after}"):
        with_decisions(gmm_best, {int(after): 0})


def test_postproc_rejection_names_the_postproc(gmm_best):
    from tvm.ir.utils import derived_object

    @derived_object
    class Refuse(compat.ms.postproc.PyPostproc):
        def _initialize_with_tune_context(self, context):
            pass

        def apply(self, sch):
            return False

        def clone(self):
            return Refuse()

    with pytest.raises(msviz.DecisionError, match="postproc Refuse rejected"):
        with_decisions(gmm_best, postprocs=[Refuse()])
    assert with_decisions(gmm_best, postprocs=False).postprocs == []


def test_cuda_postprocs_reject_too_many_threads(make_spaces):
    """VerifyGPUCode, a stock cuda postproc, refuses a block of more than 1024 threads."""
    from msviz import workloads

    mod = workloads.get("GMM", 0).mod
    for space in make_spaces(mod, target="cuda"):
        sites = decision_sites(space, mod)
        tiles = [s for s in sites if s.kind == "SamplePerfectTile" and s.extent == 128]
        if len(tiles) < 2 or tiles[0].n != 5:
            continue
        # SSSRRSRS: the third factor of the i and j tiles is threadIdx; 128 * 128 threads
        edits = {t.index: (1, 1, 128, 1, 1) for t in tiles[:2]}
        with pytest.raises(msviz.DecisionError, match=r"postproc \w+ rejected"):
            with_decisions(space, edits, mod=mod, target="cuda")
        return
    pytest.fail("no cuda design space with two 5-level tiles of extent 128")


# -- properties: valid edits replay to exactly the edit; a junk edit is named --------------------

JUNK = st.one_of(
    st.integers(-3, 600),
    st.lists(st.integers(-2, 130), min_size=0, max_size=6),
    st.text(max_size=3),
    st.none(),
)
#: Edits of these kinds change loop extents or a categorical only: the loops and blocks that later
#: instructions refer to stay, so a valid choice must always replay.
LOCAL_KINDS = ("SamplePerfectTile", "SampleCategorical")


def _is_choice(site, value) -> bool:
    as_tuple = tuple(value) if isinstance(value, list) else value
    return any(as_tuple == c and type(as_tuple) is type(c) for c in site.choices)


def _draw_space(data, spaces):
    name = data.draw(st.sampled_from(sorted(spaces)), label="workload")
    mod, space_list = spaces[name]
    return mod, data.draw(st.sampled_from(space_list), label="space")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_valid_tile_and_categorical_edits_replay_to_the_edit(spaces, data):
    mod, space = _draw_space(data, spaces)
    sites = [s for s in decision_sites(space, mod) if s.editable and s.kind in LOCAL_KINDS]
    chosen = data.draw(st.lists(st.sampled_from(sites), min_size=1, max_size=3,
                                unique_by=lambda s: s.index), label="sites")
    edits = {s.index: data.draw(st.sampled_from(s.choices), label=f"@{s.index}") for s in chosen}
    replay = with_decisions(space, edits, mod=mod)  # a DecisionError here fails the test
    insts = list(replay.trace.insts)
    for index, value in edits.items():
        got = compat.to_jsonable(replay.trace.get_decision(insts[index]))
        assert got == (list(value) if isinstance(value, tuple) else value)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_junk_edit_raises_naming_its_instruction(spaces, data):
    mod, space = _draw_space(data, spaces)
    sites = [s for s in decision_sites(space, mod) if s.editable]
    bad = data.draw(st.sampled_from(sites), label="junk site")
    junk = data.draw(JUNK.filter(lambda v: not _is_choice(bad, v)), label="junk")
    others = [s for s in sites if s.kind in LOCAL_KINDS and s.index != bad.index]
    edits = {s.index: data.draw(st.sampled_from(s.choices), label=f"@{s.index}")
             for s in data.draw(st.lists(st.sampled_from(others), max_size=2,
                                         unique_by=lambda s: s.index), label="others")} \
        if others else {}
    edits[bad.index] = junk
    with pytest.raises(msviz.DecisionError, match=rf"^instruction {bad.index} \({bad.kind}\b"):
        with_decisions(space, edits, mod=mod)


def test_an_edit_that_breaks_a_later_instruction(make_spaces):
    """Inlining a block that a later instruction still uses: the later instruction is named."""
    from tvm import te
    from tvm.s_tir.meta_schedule.testing import te_workload

    data, weight, out = te_workload.conv2d_nhwc(1, 8, 8, 4, 4, 3, 1, 1)
    mod = compat.normalize_mod(te.create_prim_func([data, weight, out]))
    sch = compat.Schedule(mod)
    pad = sch.get_sblock("PadInput")
    sch.compute_at(pad, sch.sample_compute_location(pad, decision=-1))
    sch.get_loops(pad)
    (site,) = decision_sites(sch, mod)
    assert site.index == 1 and -2 in site.choices  # inlining is a valid choice on its own ...
    with pytest.raises(msviz.DecisionError) as info:
        with_decisions(sch, {1: -2}, mod=mod)
    message = str(info.value)  # ... but the get_loops after it then fails
    assert message.startswith("instruction 3 (GetLoops)")
    assert "{1: -2}" in message and "no longer exists" in message
    assert "Traceback" not in message
