"""Headless Debian Chromium driven by Selenium, with the network closed except loopback."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@contextmanager
def chromium(*, offline: bool = True, size: str = "1400,1900") -> Iterator[object]:
    """A Selenium WebDriver on headless Chromium; ``offline`` sends all non-loopback traffic
    to a dead proxy, so a page that needs the network shows it."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.fail("chromium and chromedriver must be installed (scripts/setup.sh does it)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="msviz-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--window-size={size}", f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    if offline:
        options.add_argument("--proxy-server=http://127.0.0.1:9")
        options.add_argument("--proxy-bypass-list=127.0.0.1;localhost")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
