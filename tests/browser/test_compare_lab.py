"""msviz.compare in real JupyterLab + Chromium: a stock tune_tir run of GMM-0 against a tiny
msviz session of the same workload; one step line per run (by trial, then by wall time) over
the summary table. Screenshots: ``artifacts/compare-*.png``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

_LINES = """
const g = document.querySelector('.msviz-compare .js-plotly-plot');
if (!g || !g._fullData) return null;
return g._fullData.map(t => ({name: t.name, points: (t.x || []).length,
  drawn: [...g.querySelectorAll('.scatterlayer .js-line')]
    .filter(p => (p.getAttribute('d') || '').length > 2).length,
  x: g._fullLayout.xaxis.title.text}));
"""


def _lines(driver, ready, timeout: float = 120) -> list | None:
    """The plot's lines once ``ready(lines)`` (plotly draws them after the first appears, as
    fast as the host allows), or as they are after ``timeout`` (the checks then say what is
    missing)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = driver.execute_script(_LINES)
        if (lines and ready(lines)) or time.monotonic() > deadline:
            return lines
        time.sleep(0.3)


def test_compare_two_runs_in_jupyterlab(stock_work_dirs: dict[str, Path], lab_server: LabServer,
                                         tmp_path: Path) -> None:
    cells = [
        "import msviz\n"
        "s = msviz.Session('GMM-0', work_dir='wd', max_trials=8, trials_per_batch=8,\n"
        "                  population_size=16, init_min_unmeasured=8, genetic_num_iters=1,\n"
        "                  seed=2)\n"
        "s.start(); assert s.wait(300) == 'finished'\n"
        f"view = msviz.compare({str(stock_work_dirs['GMM'])!r}, s, names=['stock', 'msviz'])\n"
        "view",
    ]
    with lab_notebook(lab_server, tmp_path, "compare.ipynb", cells, ARTIFACTS,
                      "compare-failure.png", wait_for_cells=False) as driver:
        _wait(driver, "return document.querySelector('.msviz-compare .js-plotly-plot "
              ".scatterlayer .js-line')", timeout=400, what="the compare plot")
        lines = _lines(driver, lambda lines: len(lines) == 2 and lines[0]["drawn"] == 2
                       and all(line["points"] >= 2 for line in lines))
        assert [line["name"] for line in lines] == ["stock", "msviz"], lines
        assert lines[0]["drawn"] == 2 and all(line["points"] >= 2 for line in lines), lines
        assert lines[0]["x"] == "Trial"
        table = driver.execute_script(
            "return document.querySelector('.msviz-compare-table table').innerText")
        assert "Speedup over stock" in table and "msviz" in table, table
        driver.save_screenshot(str(ARTIFACTS / "compare-by-trial.png"))
        for button in driver.find_elements("css selector", ".msviz-compare .widget-toggle-button"):
            if button.text.strip() == "by wall time":
                button.click()
        _wait(driver, "const g = document.querySelector('.msviz-compare .js-plotly-plot');"
              "return g && g._fullLayout.xaxis.title.text === 'Wall time (s)'", timeout=60,
              what="the wall-time axis")
        lines = _lines(driver, lambda lines: lines[0]["drawn"] == 2)
        assert lines[0]["drawn"] == 2, lines
        driver.save_screenshot(str(ARTIFACTS / "compare-by-time.png"))
        page = driver.page_source
        for bad in BAD_TEXT:
            assert bad not in page
