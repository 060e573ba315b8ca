"""The HTML report opened in headless Chromium with no network: the plot must render."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import msviz
from msviz.report import write_report
from tests.browser.chromium import chromium

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"


@pytest.mark.parametrize("key", ["GMM", "C2D", "SFM"])
def test_report_renders_offline(stock_work_dirs: dict[str, Path], tmp_path: Path, key: str) -> None:
    report = write_report(stock_work_dirs[key], tmp_path / f"report-{key}.html")
    ok = int((msviz.open(stock_work_dirs[key]).trials["status"] == "ok").sum())
    with chromium(offline=True) as driver:
        driver.get(report.as_uri())
        # plotly draws the figures one after the other once the page loads, as fast as the host
        # allows: wait (generously) for every successful trial's point, then check
        deadline = time.monotonic() + 120
        plots: list = []
        points = 0
        while time.monotonic() < deadline and not (plots and points >= ok):
            time.sleep(0.2)
            plots = driver.find_elements("css selector", ".js-plotly-plot .main-svg")
            points = driver.execute_script(
                "return document.querySelectorAll('.js-plotly-plot .scatterlayer .point')"
                ".length")
        assert plots, "the plotly figure did not render"
        assert points >= ok > 0  # every successful trial is drawn
        assert "Best so far" in driver.page_source
        ARTIFACTS.mkdir(exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / f"report-{key}.png"))
