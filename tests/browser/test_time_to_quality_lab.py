"""The time-to-quality curve in real JupyterLab + Chromium: live in the Tasks tab of a running
model session (the catalogue MLP, 4 tasks), then ``msviz.compare`` overlaying it with a second
seed's run. Screenshots: ``artifacts/time-to-quality-*.png``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT, _click, _open_tab, _state

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

KNOBS = ("max_trials=16, trials_per_batch=2, population_size=16, init_min_unmeasured=8, "
         "genetic_num_iters=1, cost_model_task_warmup=0, end_to_end_check=False, "
         "evaluator_config={'number': 1, 'repeat': 1, 'min_repeat_ms': 0}")

_CURVES = """
const g = document.querySelector(arguments[0] + ' .js-plotly-plot');
if (!g || !g._fullData || !g.offsetParent) return null;
return {title: g._fullLayout.title.text, x: g._fullLayout.xaxis.title.text,
        traces: g._fullData.map(t => ({name: t.name, points: (t.x || []).length})),
        drawn: g.querySelectorAll('.scatterlayer .point').length};
"""


def test_time_to_quality_live_and_overlaid(lab_server: LabServer, tmp_path: Path) -> None:
    # the second run and the comparison come from a thread, handed to the kernel's loop: a
    # cell that blocked (or awaited) would hold the kernel the live dashboard needs
    cells = [
        "import asyncio, threading, time, ipywidgets as W, msviz\n"
        f"session = msviz.Session('mlp', work_dir='wd1', seed=1, {KNOBS})\n"
        "dash = msviz.dashboard(session); session.step('batch')\n"
        "dash",
        "box = W.VBox(); loop = asyncio.get_running_loop()\n"
        "def later():\n"
        "    while session.state not in ('finished', 'stopped', 'failed'):\n"
        "        session.wait(); time.sleep(0.5)  # wait() returns at a pause too\n"
        f"    s2 = msviz.Session('mlp', work_dir='wd2', seed=2, {KNOBS})\n"
        "    s2.start(); s2.wait()\n"
        "    def show():\n"
        "        box.children = [msviz.compare(session, s2, names=['seed 1', 'seed 2'])]\n"
        "    loop.call_soon_threadsafe(show)\n"
        "threading.Thread(target=later, daemon=True).start()\n"
        "box",
    ]
    with lab_notebook(lab_server, tmp_path, "quality.ipynb", cells, ARTIFACTS,
                      "time-to-quality-failure.png", wait_for_cells=False, stop=True) as driver:
        _wait(driver, "return [...document.querySelectorAll('.msviz-dashboard .lm-TabBar-tab')]"
              ".some(t => t.textContent.includes('Tasks'))", timeout=900, what="the Tasks tab")
        _open_tab(driver, "Tasks")

        drawn = ("const g = document.querySelector('.msviz-time-to-quality .js-plotly-plot');"
                 "const n = g && g.offsetParent ? g.querySelectorAll('.scatterlayer .point')"
                 ".length : 0;")

        def points() -> int:
            return driver.execute_script(drawn + "return n")

        # the session ran one batch and paused: the untuned model and that batch
        _wait(driver, "return document.querySelector('.msviz-time-to-quality .js-plotly-plot "
              ".scatterlayer .point')", timeout=600, what="the curve's first points")
        _wait(driver, "const e = document.querySelector('.msviz-dashboard .msviz-state');"
              "return e && e.textContent.includes('paused')", timeout=120, what="the pause")
        # plotly draws the points after the first one appears, as fast as the host allows
        _wait(driver, drawn + "return n >= 2", timeout=60, what="the curve's two points")
        assert points() == 2
        # live: each step adds a point while the tab shows; the next step only once the session
        # paused after the last (a step while it still runs that batch would merge into it)
        for want in (3, 4):
            _wait(driver, "const e = document.querySelector('.msviz-dashboard .msviz-state');"
                  "return e && e.textContent.includes('paused')", timeout=120, what="the pause")
            _click(driver, ".msviz-dashboard .msviz-step-batch")
            _wait(driver, "const g = document.querySelector('.msviz-time-to-quality "
                  f".js-plotly-plot'); return g && g._fullData[0].x.length === {want}",
                  timeout=600, what=f"point {want} of the live curve")
        _wait(driver, "const e = document.querySelector('.msviz-dashboard .msviz-state');"
              "return e && e.textContent.includes('paused')", timeout=120, what="the pause")
        _wait(driver, drawn + "return n >= 4", timeout=60, what="the live curve's four points")
        live = driver.execute_script(_CURVES, ".msviz-time-to-quality")
        state = _state(driver)
        driver.save_screenshot(str(ARTIFACTS / "time-to-quality-live.png"))
        assert live["title"] == "Time to quality" and live["x"] == "Wall time (s)", live
        assert live["drawn"] == 4 and live["traces"][0]["points"] == 4, live
        assert "paused" in state, state
        _click(driver, ".msviz-dashboard .msviz-resume")
        # overlaid: two seeds' curves on the compare view
        _wait(driver, "return document.querySelector('.msviz-compare-quality .js-plotly-plot "
              ".scatterlayer .point')", timeout=900, what="the compared curves")
        time.sleep(1.0)
        view = driver.execute_script(
            "document.querySelector('.msviz-compare').scrollIntoView(); return true")
        assert view
        time.sleep(0.5)
        both = driver.execute_script(_CURVES, ".msviz-compare-quality")
        driver.save_screenshot(str(ARTIFACTS / "time-to-quality-compare.png"))
        assert [t["name"] for t in both["traces"]] == ["seed 1", "seed 2"], both
        # each: the untuned model, then one point per batch: 16 trials in batches of at most 2
        # (8, or more where a generation found fewer new schedules), counted from the work dirs
        import msviz

        batches = [len(msviz.open(tmp_path / "lab" / wd).trials[["task", "batch"]]
                       .drop_duplicates()) for wd in ("wd1", "wd2")]  # a batch is a task's
        assert all(b >= 8 for b in batches), batches
        assert [t["points"] for t in both["traces"]] == [1 + b for b in batches], (both, batches)
        page = driver.page_source
        for bad in BAD_TEXT:
            assert bad not in page
