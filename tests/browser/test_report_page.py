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
    with chromium(offline=True) as driver:
        driver.get(report.as_uri())
        deadline = time.time() + 30
        plots: list = []
        while time.time() < deadline and not plots:
            plots = driver.find_elements("css selector", ".js-plotly-plot .main-svg")
            time.sleep(0.2)
        assert plots, "the plotly figure did not render"
        points = driver.execute_script(
            "return document.querySelectorAll('.js-plotly-plot .scatterlayer .point').length"
        )
        ok = int((msviz.open(stock_work_dirs[key]).trials["status"] == "ok").sum())
        assert points >= ok > 0  # every successful trial is drawn
        assert "Best so far" in driver.page_source
        ARTIFACTS.mkdir(exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / f"report-{key}.png"))
