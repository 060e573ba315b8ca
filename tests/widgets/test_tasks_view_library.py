"""The Tasks tab's Library section with real widget state: fed from a real-looking event list
(a session's ``library_coverage`` event), from a work dir's sidecar line (a dashboard of the
stock 4-task model's copy), and live on a real session's dashboard; hidden without one."""

from __future__ import annotations

import html
import re
import time
from pathlib import Path

import pandas as pd

import msviz
from msviz.engine.events import Event
from msviz.records.coverage_types import MATCHES, coverage_to_dict
from msviz.views.coverage import MATCH_COLORS, coverage_info
from msviz.widgets import Dashboard
from msviz.widgets.tasks_view import TasksView
from tests.conftest import MODEL_TASKS
from tests.library_data import COVERAGE, library_work_dir

WEIGHTS = {"fused_matmul2_add_relu": 2}
#: What the figure draws per match: (task, weight x untuned µs).
BARS = {"exact": ("fused_matmul3_add1", 10.0), "anchor": ("fused_matmul2_add_relu", 40.0),
        "sibling": ("matmul1", 30.0), "none": ("matmul", 40.0)}


def _events(with_coverage: bool = True, also: tuple[str, ...] = ()) -> list[Event]:
    """A model session's first events, as the engine emits them, the coverage at the start
    (``also``: tasks after the model's that the coverage does not list)."""
    now = time.time()
    tasks = [{"index": i, "name": n, "flop": 16384.0, "weight": WEIGHTS.get(n, 1),
              "max_trials": None, "pinned": False, "skipped": False}
             for i, n in enumerate((*MODEL_TASKS, *also))]
    kinds: list[tuple[str, dict]] = [
        ("started", {"model": "mlp", "num_tasks": 4}),
        ("library_coverage", {"coverage": coverage_to_dict(COVERAGE)}),
        ("tasks", {"tasks": tasks}),
        ("untuned", {"tasks": [{"index": t.index, "name": t.name, "untuned_us": t.untuned_us,
                                "error": None} for t in COVERAGE.tasks]}),
        ("scheduled", {"batch": 0, "scheduler": "gradient", "pick": 2, "pick_name": "matmul1",
                       "reason": "round-robin warm-up", "forced": False,
                       "gradients": [None] * 4, "best_us": [None] * 4, "trials": [0] * 4,
                       "done": [False] * 4}),
    ]
    if not with_coverage:
        kinds = [k for k in kinds if k[0] != "library_coverage"]
    return [Event(i, kind, now + i, "mlp", data) for i, (kind, data) in enumerate(kinds)]


def _trials() -> pd.DataFrame:
    """Two trials: the exact hit's record committed from the library, a sibling's carried."""
    return pd.DataFrame({
        "task": ["fused_matmul3_add1", "matmul1"], "trial": [0, 1], "status": ["ok", "ok"],
        "latency_us": [2.5, 31.0], "origin": ["library", "library"],
        "carried_from": ["mlp_v1/fused_matmul3_add1 trial 12", "resnet18/fused_dense_add trial 7"],
        "carry": ["exact", "sibling"], "adjusted": ["", "#3, #7"]})


def _check_library_section(view: TasksView, carried: str, uncovered: int = 0) -> None:
    """The section as :data:`COVERAGE` draws it; ``uncovered`` tasks after the model's are
    not in the coverage (an empty Library cell)."""
    assert view.library_box.layout.display is None  # shown
    text = view.library_text.value
    assert html.escape(coverage_info(COVERAGE).summary) in text
    assert "from 2 runs: mlp_v1, resnet18" in text
    assert text.count("msviz-library-row") == 4
    assert f"<div class='msviz-library-trials'>{carried}</div>" in text
    fig = view.library_plot
    assert fig.layout.title.text == "Library coverage"
    assert [t.name for t in fig.data] == list(MATCHES)
    for bar in fig.data:
        name, width = BARS[bar.name]
        assert list(bar.y) == [name] and list(bar.x) == [width]
        assert bar.marker.color == MATCH_COLORS[bar.name]
    # the task table: a Library column after the name, each task's match
    table = view.table.value
    assert "<th>Name</th><th>Library</th>" in table
    cells = re.findall(r"<td class='msviz-task-library' style='color:[^']+'>(\w*)</td>", table)
    assert cells == [*MATCHES, *[""] * uncovered]  # the model's tasks are in MATCHES order
    assert view.error.text == ""


def test_library_section_from_events() -> None:
    view = TasksView()
    view.update_from_events(_events(), _trials())
    _check_library_section(view, "2 trials from the library: 1 exact, 1 sibling")
    # a later batch of events without the coverage keeps the section
    view.update_from_events(_events(with_coverage=False)[-1:], _trials().iloc[:1])
    _check_library_section(view, "1 trial from the library: 1 exact")


def test_no_library_section_without_coverage() -> None:
    view = TasksView()
    view.update_from_events(_events(with_coverage=False), _trials())
    assert view.coverage_info is None
    assert view.library_box.layout.display == "none"
    assert view.library_text.value == "" and view.library_plot.data == ()
    assert "<th>Library</th>" not in view.table.value
    assert "msviz-task-library" not in view.table.value


def test_a_malformed_coverage_event_is_said_under_the_view() -> None:
    events = _events()
    bad = {"coverage": {"tasks": [{"name": "matmul", "match": "close"}]}}
    events[1] = Event(1, "library_coverage", events[1].time, "mlp", bad)
    view = TasksView()
    view.update_from_events(events, _trials())
    assert view.error.text == ("[TasksView] coverage task 0 (matmul): match is 'close', not "
                               "one of exact, anchor, sibling, none")
    assert view.library_box.layout.display == "none"
    assert len(view.info.frame) == 4  # the rest of the tab is drawn


def test_work_dir_dashboard_shows_the_library(stock_model_work_dir: Path, tmp_path: Path
                                              ) -> None:
    library_work_dir(stock_model_work_dir, tmp_path / "mlp")
    dash = Dashboard(msviz.open(tmp_path / "mlp"))
    assert dash.tabs.titles[1] == "Tasks"
    dash.tabs.selected_index = 1
    _check_library_section(dash.tasks_view,
                           "3 trials from the library: 1 exact, 1 anchor, 1 sibling")
    # the same work dir without the coverage line: no section
    plain = Dashboard(msviz.open(stock_model_work_dir))
    plain.tabs.selected_index = 1
    assert plain.tasks_view.library_box.layout.display == "none"


def test_live_dashboard_gets_the_library_from_its_event(tuned_session) -> None:
    dash = Dashboard(tuned_session)
    assert "Tasks" not in dash.tabs.titles  # one PrimFunc, no coverage event yet
    n = len(tuned_session.events)
    # coverage, tasks, untuned: the session's own workload (its trials, none from the
    # library) a fifth task the coverage does not list
    events = [Event(n + i, e.kind, e.time, e.task, e.data)
              for i, e in enumerate(_events(also=(tuned_session.workload.name,))[1:4])]
    dash.on_events(events)
    assert "Tasks" in dash.tabs.titles
    dash.tabs.selected_index = dash.tabs.titles.index("Tasks")
    _check_library_section(dash.tasks_view, "no trial from the library yet", uncovered=1)
