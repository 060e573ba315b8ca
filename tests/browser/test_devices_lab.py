"""The Devices tab in real JupyterLab + Chromium, after a live session over a loopback RPC fleet:
its per-minute plot has bars, the summary names the tracker and both servers; a screenshot goes
to ``artifacts/tab-devices.png``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT, _open_tab
from tests.browser.test_dashboard_tabs import _has_data, _settled_survey

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

CELLS = [
    "import msviz\n"
    "from msviz.engine.measure.loopback import LocalFleet\n"
    "fleet = LocalFleet(servers=2, key='lab-fleet').start()\n"
    "session = msviz.Session('GMM-0', work_dir='wd', runner=fleet.runner(), max_trials=8,\n"
    "                        trials_per_batch=4, population_size=16, init_min_unmeasured=8,\n"
    "                        genetic_num_iters=1, seed=7,\n"
    "                        evaluator_config={'number': 1, 'repeat': 1, 'min_repeat_ms': 0})\n"
    "dash = msviz.dashboard(session)\n"
    "session.start()\n"
    "dash",
]


def test_devices_tab_after_a_session_over_rpc(lab_server: LabServer, tmp_path: Path) -> None:
    with lab_notebook(lab_server, tmp_path, "devices.ipynb", CELLS, ARTIFACTS,
                      "devices-failure.png", stop=True) as driver:
        _wait(driver, "const e = document.querySelector('.msviz-dashboard .msviz-state');"
              "return e && e.textContent === 'finished'", timeout=600, what="finished")
        titles = [t.text for t in driver.find_elements(
            "css selector", ".msviz-dashboard .lm-TabBar-tab") if t.text]
        assert titles[-1] == "Devices", titles
        _open_tab(driver, "Devices")
        _wait(driver, "return document.querySelectorAll('.msviz-dashboard "
              ".js-plotly-plot .barlayer .point').length >= 1", timeout=60, what="bars")
        survey = _settled_survey(driver, lambda survey: not survey["errors"] and any(
            _has_data(g) and not g["note"] for g in survey["graphs"]))
        driver.save_screenshot(str(ARTIFACTS / "tab-devices.png"))
        (ARTIFACTS / "devices-survey.json").write_text(json.dumps(survey, indent=1))
        text = _wait(driver, "const e = document.querySelector('.msviz-devices');"
                     "return e && e.closest('.widget-html').textContent", what="the summary")
        assert "Tracker" in text and "lab-fleet" in text
        assert text.count("127.0.0.1:") >= 3  # the tracker and both servers
        assert [g for g in survey["graphs"] if _has_data(g) and not g["note"]], survey
        assert survey["errors"] == []
        page = driver.page_source
        for bad in BAD_TEXT:
            assert bad not in page
