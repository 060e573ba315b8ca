"""The dashboard in a real JupyterLab, driven from headless Chromium: Pause, Step batch, the
table and plot gain the trials, a decision edit shows its diff."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.browser.jupyterlab import LabServer, lab_notebook, wait

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

#: Far more trials than the test steps through: the session must still be running when Pause is
#: pressed (a 32-trial GMM-0 session, its first batch a warm-up, can finish before that).
MAX_TRIALS = 400

CELLS = [
    f"import msviz\nMAX_TRIALS = {MAX_TRIALS}\n"
    "session = msviz.Session('GMM-0', work_dir='wd', max_trials=MAX_TRIALS, trials_per_batch=8,\n"
    "                        population_size=16, init_min_unmeasured=8, genetic_num_iters=1,\n"
    "                        seed=7)\n"
    "dash = msviz.dashboard(session)\n"
    "session.start()\n"
    "dash",
]

BAD_TEXT = ("Error displaying widget", "Failed to load model class", "Click to show javascript")


_wait = wait


def _click(driver, selector: str) -> None:
    driver.execute_script(f"document.querySelector({selector!r}).click()")


def _open_tab(driver, title: str) -> None:
    """A real mouse click on a dashboard tab (lumino tab bars ignore synthetic clicks)."""
    for tab in driver.find_elements("css selector", ".msviz-dashboard .lm-TabBar-tab"):
        if title in tab.text:
            tab.click()
            return
    raise AssertionError(f"no tab {title!r}")


def _rows_and_progress(driver, timeout: float = 60) -> tuple[int, str]:
    """The trials the table holds (its pager's count: a page shows 50 rows) and the progress
    line, once the line counts as many trials as the table holds: they are separate widgets,
    which the page may update one after the other (as fast as the host allows); after
    ``timeout``, as they are (the checks then fail)."""
    deadline = time.monotonic() + timeout
    while True:
        rows, progress = driver.execute_script(
            "const info = document.querySelector('.msviz-tt-info');"
            "const m = info && info.textContent.match(/([0-9]+) trials/);"
            "return [m ? Number(m[1]) : document.querySelectorAll('.msviz-tt tbody tr').length,"
            " [...document.querySelectorAll('.msviz-dashboard .widget-html')]"
            ".map(e => e.textContent.trim()).find(t => /^[0-9]+\\/[0-9]+ trials/.test(t))]")
        if (progress or "").startswith(f"{rows}/") or time.monotonic() > deadline:
            return rows, progress
        time.sleep(0.3)


def _state(driver) -> str:
    return driver.execute_script(
        "const e = document.querySelector('.msviz-dashboard .msviz-state');"
        "return e ? e.textContent : ''")


def test_dashboard_in_jupyterlab(lab_server: LabServer, tmp_path: Path) -> None:
    with lab_notebook(lab_server, tmp_path, "dashboard.ipynb", CELLS, ARTIFACTS,
                      "dashboard-failure.png", stop=True) as driver:
        _wait(driver, "return document.querySelector('.msviz-dashboard .msviz-pause')",
              what="the dashboard to render")
        _wait(driver, "const b = document.querySelector('.msviz-dashboard .msviz-pause');"
              "return b && !b.disabled", what="Pause to be enabled")
        _click(driver, ".msviz-dashboard .msviz-pause")
        _wait(driver, "const e = document.querySelector('.msviz-dashboard .msviz-state');"
              "return e && e.textContent === 'paused'", timeout=240, what="paused")
        rows_before, progress = _rows_and_progress(driver)
        assert re.match(rf"{rows_before}/{MAX_TRIALS} trials", progress), progress
        _click(driver, ".msviz-dashboard .msviz-step-batch")
        # a batch asks for 8 and may get fewer: PickWithEpsGreedy (as the C++) drops a random
        # pick that a score pick of the same batch took (tests/engine/conftest.py batch_column)
        _wait(driver, "const m = (document.querySelector('.msviz-tt-info') || {})"
              ".textContent?.match(/([0-9]+) trials/);"
              f"return (m ? Number(m[1]) : document.querySelectorAll('.msviz-tt tbody tr')"
              f".length) > {rows_before}", timeout=240, what="the batch's rows in the table")
        _wait(driver, "const e = document.querySelector('.msviz-dashboard .msviz-state');"
              "return e && e.textContent === 'paused'", timeout=120, what="paused again")
        # the table holds every trial the progress line counts
        rows, progress = _rows_and_progress(driver)
        assert re.match(rf"{rows}/{MAX_TRIALS} trials", progress), progress
        assert 1 <= rows - rows_before <= 8
        # the plots show them: open the Plots tab and count each graph's points. Best so far
        # (a dot per trial; the step line has none), every trial by status, cost model
        # (every measured candidate has its predicted score): a point per row in each
        _open_tab(driver, "Plots")
        # (by title: the decisions and importance plots are drawn on request)
        points = ("Object.fromEntries([...document.querySelectorAll('.msviz-dashboard "
                  ".js-plotly-plot')].filter(g => g.offsetParent && g.querySelector('.gtitle'))"
                  ".map(g => [g.querySelector('.gtitle').textContent.split(' (')[0],"
                  " g.querySelectorAll('.scatterlayer .point').length]))")
        plots = ("Best so far", "Every trial, by status", "Cost model")
        _wait(driver, f"const n = {points}; return {list(plots)}.every(t => n[t] >= {rows})",
              timeout=60, what=f"{rows} points in each of {plots}")
        shown = driver.execute_script(f"return {points}")
        assert {t: shown.get(t) for t in plots} == dict.fromkeys(plots, rows), shown
        # select the first trial and edit one decision in the trace view
        _open_tab(driver, "Trials")
        driver.find_element("css selector", ".msviz-tt tbody tr").click()
        _open_tab(driver, "Trace")
        _wait(driver, "return [...document.querySelectorAll('.msviz-dashboard select')]"
              ".some(s => s.options.length > 1 && s.offsetParent)", timeout=120,
              what="decision editors")
        driver.execute_script(
            "const s = [...document.querySelectorAll('.msviz-dashboard select')]"
            ".find(s => s.options.length > 1 && s.offsetParent);"
            "s.selectedIndex = (s.selectedIndex + 1) % s.options.length;"
            "s.dispatchEvent(new Event('change', {bubbles: true}));")
        _wait(driver, "return document.querySelector('.msviz-dashboard .msviz-diff "
              "table.diff')", timeout=180, what="the TVMScript diff")
        page = driver.page_source
        for bad in BAD_TEXT:
            assert bad not in page
        driver.save_screenshot(str(ARTIFACTS / "dashboard.png"))
