"""Decision importance in real JupyterLab + Chromium: the bars beside the decisions plot, the
proposed restriction, and its re-run compared with the first run, after clicks on the page.
Screenshots: ``artifacts/importance-*.png``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT, _click, _open_tab

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

_BARS = """
const g = document.querySelector('.msviz-importance .js-plotly-plot');
if (!g || !g._fullData || !g._fullData.length) return null;
return {sites: g._fullData[0].y, shares: g._fullData[0].x,
        drawn: g.querySelectorAll('.barlayer .point path').length,
        title: g._fullLayout.title.text};
"""


def _show(driver, selector: str) -> None:
    driver.execute_script(f"document.querySelector({selector!r}).scrollIntoView()")
    time.sleep(1.0)


def test_importance_and_rerun_in_jupyterlab(lab_server: LabServer, tmp_path: Path) -> None:
    cells = [
        "import msviz\n"
        "s = msviz.Session('GMM-0', work_dir='wd', max_trials=16, trials_per_batch=8,\n"
        "                  population_size=16, init_min_unmeasured=8, genetic_num_iters=1,\n"
        "                  seed=2)\n"
        "s.start(); assert s.wait(400) == 'finished'\n"
        "d = msviz.dashboard(s)\n"
        "d.plots.importance.rerun_options = {'max_trials': 4, 'trials_per_batch': 4, 'seed': 3}\n"
        "d",
    ]
    with lab_notebook(lab_server, tmp_path, "importance.ipynb", cells, ARTIFACTS,
                      "importance-failure.png", wait_for_cells=False) as driver:
        _wait(driver, "return document.querySelector('.msviz-dashboard .lm-TabBar-tab')",
              timeout=500, what="the dashboard")
        _open_tab(driver, "Plots")
        _wait(driver, "return document.querySelector('.msviz-decisions-button')", timeout=60,
              what="the decisions button")
        _click(driver, ".msviz-decisions-button")
        _wait(driver, "const g = document.querySelector('.msviz-importance .js-plotly-plot');"
              "return g && g.querySelectorAll('.barlayer .point path').length > 0",
              timeout=120, what="the importance bars")
        bars = driver.execute_script(_BARS)
        assert bars["drawn"] == len(bars["sites"]) >= 4, bars
        assert abs(sum(bars["shares"]) - 1.0) < 1e-9 and "PED-ANOVA" in bars["title"], bars
        proposal = driver.execute_script(
            "return document.querySelector('.msviz-restriction').innerText")
        assert proposal.startswith(("restrict GMM-0", "nothing to restrict")), proposal
        _show(driver, ".msviz-importance")
        driver.save_screenshot(str(ARTIFACTS / "importance-bars.png"))

        _click(driver, ".msviz-restrict-button")
        _wait(driver, "return document.querySelector('.msviz-importance .msviz-compare "
              ".js-plotly-plot .scatterlayer .js-line')", timeout=400,
              what="the comparison of the re-run")
        # the status is its own widget, set after the comparison: the page may show it later
        # ("re-run <how it ended>: ...", where "re-running ..." said how far it was)
        status = _wait(driver, "const e = document.querySelector('.msviz-rerun-status');"
                       "return e && e.innerText.startsWith('re-run ') && e.innerText",
                       timeout=60, what="the re-run's end in its status")
        assert "re-run finished" in status and "to within 5% of the best" in status, status
        table = driver.execute_script(
            "return document.querySelector('.msviz-importance .msviz-compare-table').innerText")
        assert "original" in table and "restricted" in table, table
        _show(driver, ".msviz-importance .msviz-compare")
        driver.save_screenshot(str(ARTIFACTS / "importance-rerun.png"))
        page = driver.page_source
        for bad in BAD_TEXT:
            assert bad not in page
