"""The importance view beside the decisions plot: bars, the proposed restriction, and the
button that re-runs the task with it and compares the two runs (real TVM, tiny budget)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from msviz.trace.spaces import trial_decisions
from msviz.widgets import Dashboard
from msviz.widgets.compare_view import CompareView


def test_importance_and_rerun_from_the_dashboard(tuned_session: Any) -> None:
    dash = Dashboard(tuned_session)
    view = dash.plots.importance
    assert view in dash.plots.decisions_box.children  # beside the decisions plot
    assert view.apply_button.disabled and not view.figure.data  # nothing before the plot
    dash.plots.decisions_button.click()
    assert view.error.value == "" and dash.plots.error.value == ""
    run = tuned_session.open()
    sites = [c for c in trial_decisions(run, limit=None, task="GMM-0", space="best").columns
             if c not in ("trial", "latency_us")]
    bars = view.figure.data[0]
    assert sorted(bars.y) == sorted(sites) and sum(bars.x) == pytest.approx(1.0)
    assert "PED-ANOVA" in view.figure.layout.title.text
    restriction = view.restriction
    assert restriction.task == "GMM-0" and restriction.summary in view.proposal.value.replace(
        "&gt;", ">")
    assert not view.apply_button.disabled

    view.rerun_options = {"max_trials": 4, "trials_per_batch": 4, "seed": 7}
    view.apply_button.click()
    session = restriction.session
    assert session is not None and view.apply_button.disabled
    assert str(session.rules) == str(restriction.rules)  # tuned with the restricted rules
    assert session.knobs.population_size == 16  # and the first session's knobs
    assert session.wait(600) == "finished"
    deadline = time.monotonic() + 30
    while not view.compare_box.children and time.monotonic() < deadline:
        time.sleep(0.1)  # the adapter hands the end event over on its timer thread
    assert view.error.value == ""
    assert isinstance(view.compare_box.children[0], CompareView)
    summary = view.compare_view.info.summary
    assert [(s.name, s.trials) for s in summary] == [("original", 16), ("restricted", 4)]
    best = min(s.best_us for s in summary)
    assert min(summary, key=lambda s: s.best_us).trials_to_within is not None
    assert "to within 5% of the best of both" in view.status.value
    assert f"best {best:.4g} µs" in view.status.value
    assert not view.apply_button.disabled  # ready to re-run again
