"""The Tasks tab of a stock ``tune_relax`` run of 4 tasks in real JupyterLab + Chromium: its
table and plots render with data points, clicking a task focuses the other tabs on it;
screenshots ``artifacts/tab-tasks*.png``."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

import msviz
from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT, _open_tab
from tests.browser.test_dashboard_tabs import _has_data, _settled_survey
from tests.conftest import MODEL_TASKS

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"


def _settled(read, ready, timeout: float = 120):
    """``read()`` once ``ready`` holds for it and two reads half a second apart agree (the page
    draws as fast as the host allows), or as it is after ``timeout`` (the checks then say what
    is missing)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        value = read()
        if (ready(value) and value == last) or time.monotonic() > deadline:
            return value
        last = value if ready(value) else None
        time.sleep(0.5)

_GRAPHS = """
const graphs = [...document.querySelectorAll('.msviz-tasks-view .js-plotly-plot')]
  .filter(g => g.offsetParent);
return graphs.map(g => ({title: (g.querySelector('.gtitle') || {}).textContent || '',
                         points: g.querySelectorAll('.scatterlayer .point').length,
                         traces: g.querySelectorAll('.scatterlayer .trace').length}));
"""


def _focus(driver, name: str) -> None:
    for button in driver.find_elements(
            "css selector", ".msviz-dashboard .msviz-task-focus .widget-toggle-button"):
        if button.text.strip() == name:
            button.click()
            return
    raise AssertionError(f"no focus button {name!r}")


def _dashboard_cells(work_dir: Path) -> list[str]:
    """A notebook that opens ``work_dir`` and shows its dashboard."""
    return ["import msviz\n"
            f"run = msviz.open({str(work_dir)!r})\n"
            "dash = msviz.dashboard(run)\n"
            "dash"]


def _wait_for_dashboard(driver: object) -> None:
    _wait(driver, "return document.querySelector('.msviz-dashboard .lm-TabBar-tab')",
          timeout=120, what="the dashboard")


def test_tasks_tab_of_a_stock_model_run(stock_model_work_dir: Path, lab_server: LabServer,
                                        tmp_path: Path) -> None:
    run = msviz.open(stock_model_work_dir)
    trials = run.trials
    ok = trials[trials["status"] == "ok"]
    # the estimate (weight x best, summed) after each trial, once every task has a success,
    # worked out here in plain Python; the plot marks its first and last point and each change
    weights = dict(zip(run.task_table["name"], run.task_table["weight"], strict=True))
    best: dict[str, float] = {}
    estimates = []
    for task, status, latency in zip(trials["task"], trials["status"], trials["latency_us"],
                                     strict=True):
        if status == "ok":
            best[task] = min(best.get(task, math.inf), latency)
        if len(best) == len(weights):
            estimates.append(sum(weights[t] * best[t] for t in weights))
    steps = {0, len(estimates) - 1} | {i for i in range(1, len(estimates))
                                       if estimates[i] != estimates[i - 1]}
    cells = _dashboard_cells(stock_model_work_dir)
    report: dict = {}
    try:
        with lab_notebook(lab_server, tmp_path, "tasks.ipynb", cells, ARTIFACTS,
                          "tab-tasks-failure.png") as driver:
            _wait_for_dashboard(driver)
            titles = [t.text for t in driver.find_elements(
                "css selector", ".msviz-dashboard .lm-TabBar-tab") if t.text]
            assert titles == ["Trials", "Tasks", "Plots", "Time", "Trace", "Code"], titles
            _open_tab(driver, "Tasks")
            _wait(driver, "return document.querySelectorAll('.msviz-tasks-view .js-plotly-plot "
                  ".scatterlayer .point').length > 0", timeout=60, what="the task plots")
            graphs = _settled(lambda: driver.execute_script(_GRAPHS), lambda gs: {
                g["title"]: g["points"] for g in gs}.get("Trials per task") == len(trials))
            report["graphs"] = graphs
            rows = driver.execute_script(
                "return [...document.querySelectorAll('.msviz-tasks tr.msviz-task-row')]"
                ".map(r => [...r.cells].map(c => c.textContent))")
            report["rows"] = rows
            driver.save_screenshot(str(ARTIFACTS / "tab-tasks.png"))
            assert [r[1] for r in rows] == list(MODEL_TASKS)
            assert [r[7] for r in rows] == ["4"] * 4
            by_title = {g["title"]: g for g in graphs}
            latency = by_title["Estimated model latency"]
            assert latency["points"] == len(steps), (graphs, estimates)
            per_task = by_title["Trials per task"]
            assert per_task["points"] == len(trials) and per_task["traces"] == 4, graphs
            # one task: the table marks it; the Trials tab lists only its trials
            _focus(driver, "matmul")
            _wait(driver, "return document.querySelector('.msviz-tasks tr.msviz-focused')",
                  timeout=30, what="the focused row")
            _settled(lambda: driver.execute_script(_GRAPHS), lambda gs: bool(gs))
            driver.save_screenshot(str(ARTIFACTS / "tab-tasks-focused.png"))
            _open_tab(driver, "Trials")
            mine = int((trials["task"] == "matmul").sum())
            _wait(driver, f"return document.querySelectorAll('.msviz-tt tbody tr').length"
                  f" === {mine}", timeout=30, what="the filtered trials")
            cells = driver.execute_script(
                "return [...document.querySelectorAll('.msviz-tt tbody tr')]"
                ".map(r => r.textContent)")
            assert all("matmul" in c and "matmul1" not in c for c in cells), cells
            driver.save_screenshot(str(ARTIFACTS / "tab-tasks-trials-focused.png"))
            _open_tab(driver, "Plots")
            survey = _settled_survey(driver, lambda sv: sv["graphs"] and all(
                _has_data(g) or g["note"] for g in sv["graphs"]))
            report["plots"] = survey
            driver.save_screenshot(str(ARTIFACTS / "tab-tasks-plots-focused.png"))
            assert survey["errors"] == []
            _open_tab(driver, "Code")
            best = int(ok[ok["task"] == "matmul"].sort_values("latency_us").iloc[0]["trial"])
            code = _settled(lambda: driver.execute_script(
                "return document.querySelector('.msviz-dashboard').textContent"),
                lambda text: f"trial {best}" in text)
            assert f"trial {best}" in code
            driver.save_screenshot(str(ARTIFACTS / "tab-tasks-code-focused.png"))
            page = driver.page_source
            for bad in BAD_TEXT:
                assert bad not in page
    finally:
        (ARTIFACTS / "tab-tasks-survey.json").write_text(json.dumps(report, indent=1))


_BARS = """
const graphs = [...document.querySelectorAll('.msviz-tasks-view .js-plotly-plot')]
  .filter(g => g.offsetParent);
return graphs.map(g => ({title: (g.querySelector('.gtitle') || {}).textContent || '',
                         bars: [...g.querySelectorAll('.barlayer .point path')]
                           .filter(p => p.getBBox().width > 0).length,
                         labels: [...g.querySelectorAll('.ytick text')].map(t => t.textContent)}));
"""


def test_tasks_tab_shows_the_model_profile(lab_server: LabServer, tmp_path: Path) -> None:
    """The catalogue MLP tuned briefly: the Tasks tab's model profile (table and bars) is drawn
    with its numbers; screenshot ``artifacts/tab-tasks-model-profile.png``."""
    from msviz.engine import Session
    from tests.engine.conftest import TINY

    session = Session("mlp", work_dir=tmp_path / "wd", max_trials=8,
                      **{**TINY, "trials_per_batch": 2})
    session.start()
    assert session.wait(900) == "finished"
    frame = msviz.open(session.work_dir).model_profile()
    cells = _dashboard_cells(session.work_dir)
    report: dict = {}
    try:
        with lab_notebook(lab_server, tmp_path, "profile.ipynb", cells, ARTIFACTS,
                          "tab-tasks-model-profile-failure.png") as driver:
            _wait_for_dashboard(driver)
            _open_tab(driver, "Tasks")
            _wait(driver, "return document.querySelectorAll('.msviz-tasks-view .js-plotly-plot "
                  ".barlayer .point').length > 0", timeout=60, what="the model profile bars")
            _settled(lambda: driver.execute_script(_BARS), lambda gs: bool(gs))
            # the Graph line above the task table: what the graph passes did to the MLP
            # (nothing to fold, 4 tasks and 5 calls on either graph, 3 matmul tasks prepacked,
            # the softmax's exp a polynomial)
            graph = driver.find_element("css selector", ".msviz-tasks-view .msviz-graph")
            driver.execute_script("arguments[0].scrollIntoView()", graph)
            time.sleep(0.5)
            driver.save_screenshot(str(ARTIFACTS / "tab-tasks-graph.png"))
            report["graph"] = graph.text
            assert graph.text == (
                "Graph: no batch norm to fold; 4 tasks on stock's graph -> 4, 5 kernel calls a "
                "run -> 5; weights prepacked for 3 tasks; exp/erf/tanh vectorized in 1 op"), \
                graph.text
            driver.execute_script(
                "document.querySelector('.msviz-model-profile').scrollIntoView()")
            time.sleep(0.5)  # the scroll, before the screenshot only
            driver.save_screenshot(str(ARTIFACTS / "tab-tasks-model-profile.png"))
            rows = driver.execute_script(
                "return [...document.querySelectorAll('.msviz-model-profile tr."
                "msviz-profile-row')].map(r => [...r.cells].map(c => c.textContent))")
            graphs = driver.execute_script(_BARS)
            report.update(rows=rows, graphs=graphs)
            assert [r[0] for r in rows] == list(frame["task"])
            assert [r[2] for r in rows] == [f"{v:.3f}" for v in frame["in_model_us"]]
            # Task, Calls, In model, Spread, Tuned, Ratio, then the mark
            assert [r[6] == "loses in place" for r in rows] == list(frame["flagged"])
            profile = next(g for g in graphs if g["title"] == "Kernels in the model vs in tuning")
            assert profile["bars"] == 2 * len(frame), graphs  # tuned and in-model, per task
            assert sorted(profile["labels"]) == sorted(frame["task"]), graphs
            page = driver.page_source
            for bad in BAD_TEXT:
                assert bad not in page
    finally:
        (ARTIFACTS / "tab-tasks-model-profile.json").write_text(json.dumps(report, indent=1))
