"""Plots, trace, code, rules, design-space and evolution views with real TVM data."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import msviz
from msviz.space_generator.rules import RuleSet
from msviz.trace import decision_sites
from msviz.widgets import (
    CodeView,
    DesignSpaceView,
    EvolutionView,
    PlotPanel,
    RulesEditor,
    Selection,
    TraceView,
)
from msviz.widgets.trace_view import measured_text
from tests.conftest import require


def test_run_dashboard_shows_failures_by_cause(stock_run) -> None:
    from msviz.widgets import Dashboard

    dash = msviz.dashboard(stock_run)
    assert isinstance(dash, Dashboard) and dash.session is None
    assert dash.tabs.titles == ("Trials", "Plots", "Time", "Trace", "Code")
    assert "Failures by cause" in dash.triage.value and "killed after 0.001" in dash.triage.value
    assert dash.table.total == len(stock_run.trials)
    assert dash.progress.bar_style == "success" and all(b.disabled for b in dash.buttons.values())


def test_plot_panel(stock_run) -> None:
    panel = PlotPanel(stock_run.trials, stock_run.tasks, run=stock_run)
    names = [t.name for t in panel.history.data]
    assert names == ["trial", "best so far", "failed"]
    ok = int((stock_run.trials["status"] == "ok").sum())
    assert len(panel.history.data[0].x) == ok
    assert len(panel.history.data[2].x) == len(stock_run.trials) - ok >= 4
    assert panel.history.layout.xaxis.title.text == "Trial"
    panel.x_axis.value = "time"
    assert panel.history.layout.xaxis.title.text == "Wall time (s)"
    panel.metric.value = "gflops"
    assert panel.history.layout.yaxis.title.text == "Throughput (GFLOPS)"
    assert list(panel.color_by.options) == ["status", "task"]
    assert panel.task_bars_box.layout.display == "none"  # one task: no bars
    panel.plot_decisions()
    dims = panel.decisions.data[0].dimensions
    assert [d.label for d in dims][-1] == "latency (µs)" and len(dims) == 6
    assert panel.error.text == ""


def test_plot_panel_on_session_trials(tuned_session) -> None:
    stats = require("scipy.stats", "xgboost's dependency scipy")
    trials = tuned_session.trials
    panel = PlotPanel(trials)
    assert list(panel.color_by.options) == ["status", "generation", "batch", "task"]
    panel.color_by.value = "generation"
    ok = trials[trials["latency_us"].notna()]
    expected = {f"generation={g}": list(ok.loc[ok["generation"] == g, "trial"])
                for g in sorted(set(ok["generation"]))}
    assert {t.name: list(t.x) for t in panel.scatter.data if t.name.startswith("gen")} \
        == expected
    batches = sorted(set(trials["batch"]))
    assert len(batches) == 2
    (trace,) = panel.cost_model.data  # one trace, coloured by batch
    batch_of, rho_of = list(trace.marker.color), list(trace.customdata)
    for b in batches:
        mine = trials[(trials["batch"] == b) & trials["gflops"].notna()]
        here = [i for i, n in enumerate(batch_of) if n == b]
        assert [trace.x[i] for i in here] == list(mine["predicted_score"])
        assert [trace.y[i] for i in here] == list(mine["gflops"])
        rho = stats.spearmanr(mine["predicted_score"], mine["gflops"]).statistic
        assert all(rho_of[i] == pytest.approx(rho) for i in here)
    last = trials[(trials["batch"] == batches[-1]) & trials["gflops"].notna()]
    rho = stats.spearmanr(last["predicted_score"], last["gflops"]).statistic
    assert panel.cost_model.layout.title.text.endswith(f"; batch {batches[-1]}: {rho:.2f})")
    assert panel.error.text == ""


def test_plot_panel_from_empty_to_live_trials(tuned_session) -> None:
    """A live dashboard starts with no trials: once they come every plot has data (the colour
    menu used to fall to None, and that error left all plots but the first empty)."""
    from msviz.records.run import TRIAL_COLUMNS
    from msviz.records.sidecar import SIDECAR_COLUMNS

    trials = tuned_session.trials
    panel = PlotPanel(pd.DataFrame(columns=TRIAL_COLUMNS + SIDECAR_COLUMNS))
    assert [a.text for a in panel.history.layout.annotations] == ["no trials yet"]
    assert panel.decisions_box.layout.display == "none"  # drawn on request, not empty axes
    panel.update(trials)
    assert panel.error.text == "" and panel.color_by.value == "status"
    ok = int(trials["latency_us"].notna().sum())
    assert ok == len(trials) == 16  # GMM-0: every candidate builds and runs
    # every trial a dot: in the history's "trial" trace, in the scatter's status=ok trace
    assert [(t.name, len(t.x)) for t in panel.history.data if t.name != "best so far"] == [
        ("trial", ok)]
    assert [(t.name, len(t.x)) for t in panel.scatter.data] == [("status=ok", ok)]
    for fig in (panel.history, panel.scatter):
        assert fig.layout.annotations == ()
    assert sum(len(t.x) for t in panel.cost_model.data) == ok
    # the best-so-far steps by hand: the first trial, each new lowest latency, the last trial
    latency = trials["latency_us"].tolist()
    steps = [0] + [i for i in range(1, ok) if latency[i] < min(latency[:i])]
    steps += [ok - 1] if steps[-1] != ok - 1 else []
    (best,) = [t for t in panel.history.data if t.name == "best so far"]
    assert list(best.x) == [trials["trial"].iloc[i] for i in steps]
    assert list(best.y) == [min(latency[: i + 1]) for i in steps]


def test_best_so_far_wall_time_within_the_session(tuned_session) -> None:
    """Seconds since the first trial: from 0 to no more than the session's wall time."""
    from msviz.views import best_so_far_info

    events = tuned_session.events.snapshot()
    wall = events[-1].time - next(e.time for e in events if e.kind == "started")
    (hist,) = best_so_far_info(tuned_session.trials).tasks
    assert min(hist.seconds) == 0.0 and 0.0 < max(hist.seconds) <= wall
    # the second batch was measured after the first
    batch = list(tuned_session.trials["batch"])
    assert max(s for s, b in zip(hist.seconds, batch, strict=True) if b == 0) < \
        min(s for s, b in zip(hist.seconds, batch, strict=True) if b == 1)


def test_trace_and_code_views_ask_for_a_trial(stock_run) -> None:
    assert "Select a trial" in TraceView(stock_run.trial).title.value
    assert "Select a trial" in CodeView(stock_run.trial).code.value


def test_trace_view_edit_and_measure(stock_run) -> None:
    selection = Selection()
    sent = []
    view = TraceView(stock_run.trial, selection=selection, on_measure=sent.append)
    best = stock_run.best()
    selection.trial = best.index
    sites = decision_sites(best)
    editable = [s for s in sites if s.editable]
    assert len(view.editors.children) == len(sites)
    tile = next(b for b in view.editors.children
                if "PerfectTile" in b.description and len(b.options) > 1)
    site = next(s for s in editable if f"#{s.index} " in tile.description)
    assert len(tile.options) == site.count  # only the valid choices are offered
    assert site.choices[tile.value] == site.decision
    assert view.measure_button.disabled
    tile.value = (tile.value + 1) % len(tile.options)
    assert view.edits() == {site.index: site.choices[tile.value]}
    assert view.replay is not None and re.search("diff_(add|chg|sub)", view.diff.value)
    assert not msviz.compat.structural_equal(view.replay.mod, best.mod)
    assert not view.measure_button.disabled
    view.measure_button.click()
    assert sent == [view.replay]
    view.reset_button.click()
    assert view.edits() == {} and view.diff.value == ""


@pytest.mark.parametrize("data, text", [
    ({"line": 17, "new_trial": True, "check": "ok", "error": None, "run_secs": [2e-5, 4e-5]},
     "measured a new trial (record line 17): 30.0 us; result checked: right"),
    ({"line": 17, "new_trial": True, "check": None, "error": None, "run_secs": [1e-6]},
     "measured a new trial (record line 17): 1.0 us; result not checked"),
    ({"line": 3, "new_trial": True, "check": "wrong", "error": "wrong result: C differs",
      "run_secs": None},
     "wrong result: a new trial (record line 3) computes another answer than the workload; "
     "never the best"),
    ({"line": 3, "new_trial": True, "check": None, "run_secs": None,
      "error": "RuntimeError\n  more"}, "failed: a new trial (record line 3): RuntimeError"),
    ({"line": 5, "new_trial": False, "check": None, "error": None, "run_secs": [5e-5]},
     "re-measured record line 5: 50.0 us"),
])
def test_measured_text(data, text) -> None:
    assert measured_text(data) == text


def test_trace_view_error_shows_under_view(stock_run) -> None:
    view = TraceView(stock_run.trial)
    assert len(stock_run.trials) == 12  # 8 measured, 4 build timeouts
    view.show(17)
    assert view.error.text == "[TraceView] trial 17 is out of range: this run has 12 trials"
    view.show(0)  # a good trial clears it
    assert view.error.text == "" and "Trace of trial 0" in view.title.value


def test_code_view(stock_run) -> None:
    selection = Selection()
    view = CodeView(stock_run.trial, selection=selection)
    assert list(view.kind.options) == [
        "TVMScript", "Trace (Python)", "Lowered TIR", "LLVM IR", "Assembly"]
    selection.trial = 0
    assert "sblock" in view.code.value and "trial 0" in view.title.value
    view.kind.value = "LLVM IR"
    assert "define" in view.code.value
    view.show_diff(0, 1)
    assert "trial 0" in view.diff.value and "diff_" in view.diff.value
    assert view.error.text == ""


def test_rules_editor() -> None:
    applied = []
    editor = RulesEditor(RuleSet.default("llvm"), on_apply=applied.append)
    names = [box.description for box, _ in editor.rule_boxes]
    assert "MultiLevelTiling" in names and "ParallelizeVectorizeUnroll" in names
    mlt = dict(editor.rule_boxes)[next(b for b, _ in editor.rule_boxes
                                       if b.description == "MultiLevelTiling")]
    mlt["max_innermost_factor"].value = 16
    assert set(editor.mutator_boxes) >= {"MutateTileSize", "MutateUnroll"}
    editor.apply_button.click()
    (rules,) = applied
    spec = next(s for s in rules.schedule_rules if s.name == "MultiLevelTiling")
    assert spec.params["max_innermost_factor"] == 16
    mlt["structure"].value = "SSRXX"
    editor.apply_button.click()
    assert len(applied) == 1
    assert "MultiLevelTiling" in editor.error.text and "structure" in editor.error.text


def _space_keys(rules: RuleSet) -> list[str]:
    """GMM-0's design spaces under ``rules`` straight from MetaSchedule, each trace with its
    decisions cut (what tells two spaces apart)."""
    from msviz import compat, workloads

    target = compat.make_target("llvm")
    ctx = compat.ms.TuneContext(mod=workloads.get("GMM-0").mod, target=target,
                                space_generator=rules.space_generator(target), num_threads=1)
    return ["\n".join(re.sub(r", decision=.*\)$", ")", line) for line in sch.trace.as_python())
            for sch in ctx.generate_design_space()]


def test_design_space_view_shows_changes() -> None:
    from msviz.views.design_spaces import SpaceChange

    view = DesignSpaceView("GMM-0")
    assert len(view.info.spaces) == 3
    assert all(s.size > 1 for s in view.info.spaces)
    assert "3 design space(s)" in view.summary.value
    rules = RuleSet.default("llvm")
    rules.set("MultiLevelTiling", max_innermost_factor=16)
    view.show_rules(rules)
    # the changes from spaces generated here: a space is kept when its decision-free trace is
    old, new = _space_keys(RuleSet.default("llvm")), _space_keys(rules)
    assert view.changes == SpaceChange(
        tuple(i for i, k in enumerate(new) if k not in old),
        tuple(i for i, k in enumerate(old) if k not in new),
        tuple((old.index(k), i) for i, k in enumerate(new) if k in old))
    # by hand: every space tiles the matmul with the rule's max_innermost_factor in its trace
    assert view.changes == SpaceChange((0, 1, 2), (0, 1, 2), ())
    assert ("after the rule edit: 3 space(s) appeared [0, 1, 2], 3 disappeared [0, 1, 2], "
            "0 kept") in view.summary.value
    view.show_rules(rules.copy())  # the same rules again: every space kept, in place
    assert view.changes == SpaceChange((), (), ((0, 0), (1, 1), (2, 2)))


def test_evolution_view_before_any_generation() -> None:
    view = EvolutionView([])
    assert view.figure.data == () and "no generation yet" in view.figure.layout.annotations[0].text


def test_evolution_view(tuned_session) -> None:
    view = EvolutionView(tuned_session.events.snapshot())
    gens = view.info.generations
    assert len(gens) >= 2
    assert view.generation.value == gens[-1].generation
    first = gens[0]
    assert first.initial["fresh"] >= 8
    assert first.by_score + first.by_random == 8
    assert len(first.measured_us) == 8
    assert "epsilon-greedy" in view.summary.value
    # the box plots of the shown generation hold the scores its generation events carried
    shown = view.generation.value
    scores = [list(e.data["scores"]) for e in tuned_session.events.snapshot()
              if e.kind == "generation" and e.data["generation"] == shown]
    boxes = [t for t in view.figure.data if t.type == "box"]
    assert [list(t.y) for t in boxes] == scores and len(scores) == 2
    failures: dict = {}
    for e in tuned_session.events.snapshot():
        if e.kind in ("initial_population", "generation") and e.data["generation"] == shown:
            for what, n in (e.data.get("failures") or {}).items():
                failures[what] = failures.get(what, 0) + n
    assert gens[-1].failures == failures


@pytest.mark.parametrize("bad", [-1])
def test_trace_view_clears(stock_run, bad: int) -> None:
    view = TraceView(stock_run.trial)
    view.show(0)
    assert view.editors.children
    view.show(bad)
    assert view.editors.children == () and view.table.value == ""


def test_plot_panel_redraws_only_what_changed(monkeypatch) -> None:
    from msviz.widgets import plots as panel_module

    frame = pd.DataFrame({
        "task": ["A"] * 4, "trial": range(4), "task_trial": range(4),
        "status": ["ok", "build_error", "ok", "ok"], "latency_us": [30.0, None, 20.0, 25.0],
        "gflops": [1.0, None, 1.5, 1.2], "batch": [0, 0, 1, 1],
        "predicted_score": [0.1, 0.2, 0.3, 0.2]})
    panel = PlotPanel(frame)
    drawn: list = []
    real = panel_module.show_figure
    monkeypatch.setattr(panel_module, "show_figure",
                        lambda widget, fig: (drawn.append(widget), real(widget, fig)))
    panel.update(frame)  # the same frame: nothing to redraw
    assert drawn == []
    panel.x_axis.value = "time"  # a menu redraws its own plot only
    assert drawn == [panel.history]
    drawn.clear()
    panel.color_by.value = "batch"
    assert drawn == [panel.scatter]
    drawn.clear()
    panel.update(frame.iloc[:3])  # new data: every plot
    assert drawn == [panel.history, panel.scatter, panel.cost_model]
    assert list(panel.scatter.data[0].x) == [0.0] and panel.error.text == ""


def test_plot_panel_forgets_the_previous_layout() -> None:
    empty = pd.DataFrame({c: [] for c in ("task", "trial", "task_trial", "status",
                                          "latency_us", "gflops")})
    panel = PlotPanel(empty)
    assert [a.text for a in panel.history.layout.annotations] == ["no trials yet"]
    assert panel.history.layout.xaxis.visible is False
    panel.update(pd.DataFrame({"task": ["A", "A"], "trial": [0, 1], "task_trial": [0, 1],
                               "status": ["ok", "ok"], "latency_us": [2.0, 1.0],
                               "gflops": [1.0, 2.0]}))
    layout = panel.history.layout
    assert layout.annotations == () and layout.xaxis.visible is None
    assert layout.yaxis.type == "log" and layout.template.layout.font is not None
    panel.metric.value = "gflops"  # no log axis left over from latency
    assert panel.history.layout.yaxis.type is None
    assert panel.history.layout.yaxis.title.text == "Throughput (GFLOPS)"
