"""The trace view on a trace that holds a decision outside its sampler's range."""

from __future__ import annotations

from msviz import compat
from msviz.trace import decision_sites, with_decisions
from msviz.widgets import Selection, TraceView
from msviz.widgets.trace_view import RECORDED, out_of_range_html

#: Every n=2 tiling of 512 with the innermost factor <= 64, as the editor labels them.
TILE_LABELS_512 = ("[8, 64]", "[16, 32]", "[32, 16]", "[64, 8]", "[128, 4]", "[256, 2]",
                   "[512, 1]")
REASON = "innermost factor 128 &gt; max_innermost_factor 64"


def add_mod():
    from tvm import te

    a = te.placeholder((512,), name="A")
    b = te.compute((512,), lambda i: a[i] + 1.0, name="B")
    return compat.normalize_mod(te.create_prim_func([a, b]))


def tiled(mod, tile, unroll=0):
    """``B[i] = A[i] + 1`` over 512, its loop tiled by ``tile`` under max_innermost_factor=64
    (TVM's add_rfactor test holds [4, 128] so), then an unroll categorical."""
    sch = compat.Schedule(mod)
    (i,) = sch.get_loops(sch.get_sblock("B"))
    i0, _ = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=64,
                                                 decision=tile))
    choice = sch.sample_categorical([0, 16], [0.5, 0.5], decision=unroll)
    sch.annotate(i0, "pragma_auto_unroll_max_step", choice)
    return sch


def flagged_trial():
    """A replay (a trial-like object) of :func:`tiled` with [4, 128]: TVM keeps it as given."""
    mod = add_mod()
    return with_decisions(tiled(mod, [4, 128]), mod=mod, postprocs=False)


def row(index, style, title, code, badge=""):
    return (f'<tr style="{style}" title="{title}"><td style="padding:1px 6px;text-align:right">'
            f'{index}</td><td style="padding:1px 6px"><code>{code}</code>{badge}</td></tr>')


#: The whole table of :func:`flagged_trial`, written out by hand.
EXPECTED_TABLE = (
    '<table class="msviz-trace" style="font-size:12px;border-collapse:collapse">'
    + row(0, "", "Look up a block (one computation) by its name.",
          "b0 = sch.get_sblock(name=&quot;B&quot;, func_name=&quot;main&quot;)")
    + row(1, "", "List the loops around a block, outermost first.",
          "l1, = sch.get_loops(block=b0)")
    + row(2, "background:#ffe0e0;font-weight:600",
          "Choose tile sizes: factors that multiply exactly to the loop&#x27;s length.\n"
          f"Outside the sampler&#x27;s range: {REASON}",
          "v2, v3 = sch.sample_perfect_tile(loop=l1, n=2, max_innermost_factor=64, "
          "decision=[4, 128])",
          ' <span class="msviz-out-of-range" style="background:#c62828;color:white;'
          "border-radius:3px;padding:0 4px;font-size:11px\">outside the sampler's range: "
          f"{REASON}</span>")
    + row(3, "", "Split a loop into nested loops with the given factors (tiling).",
          "l4, l5 = sch.split(loop=l1, factors=[v2, v3], preserve_unit_iters=True, "
          "disable_predication=False)")
    + row(4, "background:#fff6d6;font-weight:600",
          "Choose one value from a list of candidates with given probabilities.",
          "v6 = sch.sample_categorical(candidates=[0, 16], probs=[0.5, 0.5], decision=0)")
    + row(5, "", "Attach a hint to a block or loop (parallel, vectorize, unroll, tiling ...).",
          "sch.annotate(block_or_loop=l4, ann_key=&quot;pragma_auto_unroll_max_step&quot;, "
          "ann_val=v6)")
    + row(6, "color:#777", "Marks the start of the postprocessors&#x27; instructions.",
          "sch.enter_postproc()")
    + "</table>")

EXPECTED_WARNING = (
    '<div class="msviz-out-of-range" style="color:#c62828">&#9888; This trace\'s decision is '
    "outside the sampler's range (MetaSchedule would not sample it):"
    '<ul style="margin:2px 0"><li>#2 SamplePerfectTile of <code>i</code>: [4, 128]: '
    f"{REASON}</li></ul></div>")

EXPECTED_EDITORS = [
    {"description": "#2 PerfectTile \u26a0",
     "_options_labels": ("[4, 128] (recorded, out of range)", *TILE_LABELS_512),
     "index": 0,
     "tooltip": "i: 7 valid choices; the recorded decision is outside them: innermost factor "
                "128 > max_innermost_factor 64"},
    {"description": "#4 Categorical", "_options_labels": ("0 (p=0.5)", "16 (p=0.5)"),
     "index": 0, "tooltip": "Annotate pragma_auto_unroll_max_step: 2 valid choices"},
]


def editor_states(view):
    """What the front end is sent of each editor (the widgets' synced state)."""
    keys = ("description", "_options_labels", "index", "tooltip")
    return [{k: box.get_state()[k] for k in keys} for box in view.editors.children]


def test_out_of_range_decision_is_shown_and_kept() -> None:
    trial = flagged_trial()
    selection = Selection()
    view = TraceView(lambda _i: trial, selection=selection, target="llvm")
    selection.trial = 0
    assert view.error.text == ""
    tile_site, unroll_site = view.sites
    assert (tile_site.out_of_range, unroll_site.out_of_range) == (
        "innermost factor 128 > max_innermost_factor 64", "")
    # all the view shows, in the state the front end gets
    assert view.title.get_state()["value"] == \
        "<b>Trace of trial 0</b> (7 instructions, 2 decision sites)"
    assert view.warning.get_state()["value"] == EXPECTED_WARNING
    assert view.table.get_state()["value"] == EXPECTED_TABLE
    assert editor_states(view) == EXPECTED_EDITORS
    # the warning sits above the editors
    left = view.children[1].children[0]
    assert left.children[:2] == (view.warning, view.editors)
    # showing the trace edits nothing: the recorded tile is selected
    tile, unroll = view.editors.children
    assert tile.value == RECORDED and view.edits() == {}
    # editing another site keeps the recorded tile as it is
    unroll.value = 1
    assert view.edits() == {unroll_site.index: 1}
    assert view.replay is not None and view.error.text == ""
    assert [s.decision for s in decision_sites(view.replay)] == [(4, 128), 1]
    # choosing a valid tile is an edit like any other
    tile.value = 0
    assert view.edits() == {tile_site.index: (8, 64), unroll_site.index: 1}
    assert [s.decision for s in decision_sites(view.replay)] == [(8, 64), 1]
    # no trial: the warning and the marks go
    selection.trial = -1
    assert (view.warning.value, view.table.value, view.editors.children) == ("", "", ())


def test_in_range_trace_has_no_warning() -> None:
    mod = add_mod()
    trial = with_decisions(tiled(mod, [8, 64]), mod=mod, postprocs=False)
    selection = Selection()
    view = TraceView(lambda _i: trial, selection=selection)
    assert view.warning.value == ""  # no trial selected
    selection.trial = 0
    assert view.error.text == "" and view.warning.value == ""
    assert "msviz-out-of-range" not in view.table.value
    assert "#ffe0e0" not in view.table.value
    assert [s["description"] for s in editor_states(view)] == ["#2 PerfectTile",
                                                              "#4 Categorical"]
    assert editor_states(view)[0]["_options_labels"] == TILE_LABELS_512
    assert out_of_range_html(view.sites) == ""


def test_warning_names_each_decision_and_what_tvm_does() -> None:
    # a stored trace can hold a tile TVM replaces and an index it cannot replay
    mod = add_mod()
    trace = tiled(mod, [8, 64]).trace
    insts = list(trace.insts)
    trace = trace.with_decision(insts[2], [3, 128], remove_postproc=False)
    trace = trace.with_decision(insts[4], 5, remove_postproc=False)
    assert out_of_range_html(decision_sites(trace, mod)) == (
        '<div class="msviz-out-of-range" style="color:#c62828">&#9888; This trace\'s 2 '
        "decisions are outside the sampler's range (MetaSchedule would not sample them):"
        '<ul style="margin:2px 0">'
        "<li>#2 SamplePerfectTile of <code>i</code>: [3, 128]: factors multiply to 384, not to "
        f"the loop extent 512; {REASON} (TVM replays [4, 128] in place of these factors)</li>"
        "<li>#4 SampleCategorical of <code>Annotate pragma_auto_unroll_max_step</code>: 5: "
        "index 5 is outside the 2 candidates [0, 16] (0..1) (TVM cannot replay this index (it "
        "stops); the sites after it are listed as if it were 0)</li></ul></div>")

