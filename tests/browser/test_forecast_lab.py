"""The Tasks tab's Forecast section in real JupyterLab + Chromium, live: a forecast-scheduler
session of the catalogue MLP (4 tasks) stepped batch by batch from the dashboard; after each
batch the last pick's reason, the calibration and the model at the end of the budget are in
words, and each measured task has its curve with a shaded band. Screenshot:
``artifacts/tab-tasks-forecast.png`` (the section), ``tab-tasks-forecast-page.png``."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT, _click, _open_tab

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

KNOBS = ("max_trials=12, max_seconds=600, task_scheduler='forecast', trials_per_batch=2, "
         "population_size=16, init_min_unmeasured=8, genetic_num_iters=1, "
         "cost_model_task_warmup=0, end_to_end_check=False, seed=1, "
         "evaluator_config={'number': 1, 'repeat': 1, 'min_repeat_ms': 0}")

_SECTION = """
const box = document.querySelector('.msviz-dashboard .msviz-forecast');
if (!box || !box.offsetParent) return null;
const g = box.querySelector('.js-plotly-plot');
const part = s => (box.querySelector(s) || {}).textContent || '';
const state = (document.querySelector('.msviz-dashboard .msviz-state') || {}).textContent || '';
return {reason: part('.msviz-forecast-reason'), held: part('.msviz-forecast-calibration'),
        budget: part('.msviz-forecast-budget'), state: state,
        title: g && g._fullLayout ? g._fullLayout.title.text : '',
        legend: g && g._fullData ? g._fullData.filter(t => t.showlegend !== false)
                                             .map(t => t.name) : [],
        bands: g ? g.querySelectorAll('.scatterlayer path.js-fill').length : 0,
        points: g ? g.querySelectorAll('.scatterlayer .point').length : 0,
        notes: g ? [...g.querySelectorAll('.annotation-text')].map(a => a.textContent) : []};
"""


def _after_batch(driver, batch: int, tasks: int) -> dict:
    """The section once the session paused in batch ``batch`` (its pick's reason shown,
    ``tasks`` curves drawn with as many bands) and two reads agree."""
    last = None

    def ready() -> object:
        nonlocal last
        s = driver.execute_script(_SECTION)
        done = (s and f"(batch {batch})" in s["reason"] and "paused" in s["state"]
                and len(s["legend"]) == tasks and s["bands"] == tasks and s["points"] >= tasks)
        same, last = done and s == last, s if done else None
        return same and s

    return _poll(ready, timeout=600, what=f"the forecast after batch {batch}")


def _poll(check, timeout: float, what: str) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_forecast_section_live(lab_server: LabServer, tmp_path: Path) -> None:
    cells = ["import msviz\n"
             f"session = msviz.Session('mlp', work_dir='wd', {KNOBS})\n"
             "dash = msviz.dashboard(session); session.step('batch')\n"
             "dash"]
    with lab_notebook(lab_server, tmp_path, "forecast.ipynb", cells, ARTIFACTS,
                      "tab-tasks-forecast-failure.png", wait_for_cells=False,
                      stop=True) as driver:
        _wait(driver, "return [...document.querySelectorAll('.msviz-dashboard .lm-TabBar-tab')]"
              ".some(t => t.textContent.includes('Tasks'))", timeout=900, what="the Tasks tab")
        _open_tab(driver, "Tasks")
        # paused after the first batch: it joined before the pause, so its forecast is there
        section = _after_batch(driver, 0, 1)
        assert "first batch: never tried" in section["reason"], section
        # step: the pick of batch k and the forecast after it; each task gets its first
        # batch, then reasoned picks (batches 4 and 5; 12 trials in 6 batches)
        for batch in range(1, 6):
            _click(driver, ".msviz-dashboard .msviz-step-batch")
            section = _after_batch(driver, batch, min(batch + 1, 4))
            if batch == 1:
                assert "(batch 1): fused_matmul2_add1: first batch: never tried" in \
                    section["reason"], section
                assert "no forecast checked yet" in section["held"], section
                assert section["budget"].startswith(
                    "Model: at the end of the budget (10m, in "), section
                assert section["title"] == "Forecast per task", section
        reason = section["reason"]
        assert "(batch 5): task " in reason and "expected -" in reason, section
        assert " us of model latency in ~" in reason, section
        # the picks of batches 4 and 5 had bands; both outcomes joined before the pause
        assert re.search(r"Forecasts held: [012] of 2 outcomes inside the 80% band",
                         section["held"]), section
        assert " µs (80% band " in section["budget"], section
        assert not any(n.startswith("no forecast") for n in section["notes"]), section
        box = driver.find_element("css selector", ".msviz-dashboard .msviz-forecast")
        driver.execute_script("arguments[0].scrollIntoView()", box)
        time.sleep(0.5)
        box.screenshot(str(ARTIFACTS / "tab-tasks-forecast.png"))
        driver.save_screenshot(str(ARTIFACTS / "tab-tasks-forecast-page.png"))
        # the time-to-quality curve carries the forecast to the end of the budget
        quality = driver.find_element("css selector", ".msviz-dashboard .msviz-time-to-quality")
        driver.execute_script("arguments[0].scrollIntoView()", quality)
        _wait(driver, "return [...document.querySelectorAll('.msviz-dashboard "
              ".msviz-time-to-quality .legendtext')].some(t => t.textContent.includes("
              "'forecast at the end of the budget'))", timeout=60,
              what="the forecast on the time-to-quality curve")
        time.sleep(0.5)
        quality.screenshot(str(ARTIFACTS / "tab-tasks-quality-forecast.png"))
        page = driver.page_source
        for bad in BAD_TEXT:
            assert bad not in page
