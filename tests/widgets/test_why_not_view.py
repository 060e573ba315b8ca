"""The "Why not?" panel on real TVM: ask, the answer as widget state, Measure; the panel in the
Trace and Design spaces tabs; Session.why_not and Trial.why_not."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

import msviz
from msviz import compat
from msviz.whynot.answer import WhyNot
from msviz.widgets import Dashboard
from msviz.widgets.design_space_view import DesignSpaceView
from msviz.widgets.why_not_view import WhyNotView, parse_want

#: MetaSchedule's llvm postprocs, in order: on a VNNI or AVX-512 CPU (rule kind vnni or
#: avx512; the host, "llvm", may be one) its tensorize postproc comes after
#: RewriteReductionBlock (GMM-0 is not tensorized: it runs and finds nothing to do); on other
#: CPUs there is none.
POSTPROCS = ("DisallowDynamicLoop", "RewriteParallelVectorizeUnroll", "RewriteReductionBlock",
             *(("RewriteTensorize",) if compat.rule_kind("llvm") in ("vnni", "avx512")
               else ()),
             "RewriteLayout")


def test_parse_want() -> None:
    assert parse_want("tile", "j: 2, 2, 2, 16; i: [4, 32]") == {"j": [2, 2, 2, 16],
                                                               "i": [4, 32]}
    assert parse_want("unroll", " 32 ") == 32
    assert parse_want("compute_at", "PadInput, co_1") == ("PadInput", "co_1")
    assert parse_want("decision", "18: 2") == (18, 2)
    assert parse_want("decision", "#8: [2, 2, 2, 16]") == ("#8", [2, 2, 2, 16])
    assert parse_want("vectorize", "True") is True
    assert parse_want("vectorize", "j_3") == "j_3"
    assert parse_want("tensorize", "dot_16x4_vnni") == "dot_16x4_vnni"
    with pytest.raises(ValueError, match="unroll: cannot read 'many'"):
        parse_want("unroll", "many")


def _plain(info: WhyNot) -> WhyNot:
    """The info without the parts too long to write by hand (checked apart)."""
    return info._replace(schedule="", forced=None, workload_mod=None, target=None)


def test_panel_asks_shows_and_measures() -> None:
    view = WhyNotView(lambda **want: msviz.why_not("GMM-0", **want))
    assert view.measure_button.disabled and "Ask why" in view.answer.value
    view.kind.value = "unroll"
    assert view.value.placeholder == "32"
    view.value.value = "32"
    view.ask_button.click()
    steps = (("trace replay", "ok"), ("annotate meta_schedule.unroll_explicit=32", "ok"),
             *((p, "ok") for p in POSTPROCS))
    assert _plain(view.info) == WhyNot(
        want={"unroll": 32}, possible=False, blocked_by="ParallelizeVectorizeUnroll",
        reason="its unroll_max_steps are [0, 16, 64, 512]: 32 is not one of them, so "
               "MetaSchedule never samples it. Forced anyway, it passes every postproc (its "
               "schedule can be measured)",
        steps=steps, space=0)
    assert '"pragma_auto_unroll_max_step": 32' in view.info.schedule
    assert "msviz-blocked-by'>ParallelizeVectorizeUnroll</code>" in view.answer.value
    assert "Forced schedule (TVMScript)" in view.answer.value
    assert not view.measure_button.disabled
    view.measure_button.click()
    assert view.status.value.startswith("measured the forced schedule: ")
    assert "result checked: right" in view.status.value and view.error.value == ""


def test_panel_shows_a_bad_want_as_an_error() -> None:
    view = WhyNotView(lambda **want: msviz.why_not("GMM-0", **want))
    view.kind.value = "compute_at"
    view.value.value = "PadInput"
    view.ask_button.click()
    assert html.unescape(view.error.value).endswith(
        "[WhyNotView] compute_at: cannot read 'PadInput' (write it as PadInput, co_1   (block, "
        "loop)): not enough values to unpack (expected 2, got 1)</div>")
    assert view.info is None and view.measure_button.disabled


def test_trace_tab_panel_forces_from_the_selected_trial(stock_run) -> None:
    dash = Dashboard(stock_run)
    panel = dash.trace_view.why_not
    panel.ask(unroll=32)
    assert "select a trial first" in panel.error.value
    dash.selection.trial = 0
    info = panel.ask(unroll=32)
    assert (info.possible, info.blocked_by, info.space) == (False, "ParallelizeVectorizeUnroll",
                                                            None)
    assert "the trial's trace" in panel.answer.value
    # the same through Trial.why_not
    assert _plain(stock_run.trial(0).why_not(unroll=32)) == _plain(info)


def test_design_spaces_panel_and_session_why_not(tmp_path: Path) -> None:
    view = DesignSpaceView("GMM-0", compute=False)
    info = view.why_not.ask(tile={"j": [1, 1, 1, 128]})
    assert (info.possible, info.blocked_by) == (False, "SamplePerfectTile")
    session = msviz.Session("GMM-0", work_dir=tmp_path / "wd", max_trials=4)
    assert _plain(session.why_not(tile={"j": [1, 1, 1, 128]})) == _plain(info)
