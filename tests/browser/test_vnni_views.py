"""Auto-tensorization views in real JupyterLab + Chromium, after a tiny I8DP-0 session on this
VNNI CPU: the trace view marks blockize / tensorize and shows the intrinsic, the code view
highlights vpdpbusd, the design-space view names the intrinsic (and warns about a missing one).
Screenshots: ``artifacts/vnni-*.png``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from msviz import compat
from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not compat.target_has_features(compat.make_target("llvm"),
                                                      ("avx512vnni",)),
                       reason="this CPU has no AVX-512 VNNI"),
]

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

CELLS = [
    "import msviz\n"
    "from msviz import compat\n"
    "from msviz.widgets import CodeView, DesignSpaceView, Selection, TraceView\n"
    "target = compat.make_target('llvm')\n"
    "run = msviz.open('wd')\n"
    "sel = Selection()",
    "trace_view = TraceView(run.trial, selection=sel, target=target)\n"
    "sel.trial = run.best().index\n"
    "trace_view",
    "code_view = CodeView(run.trial, selection=sel, target=target)\n"
    "code_view.kind.value = 'Assembly'\n"
    "code_view.show(run.best().index)\n"
    "code_view",
    "spaces = DesignSpaceView('I8DP-0', target=target)\n"
    "spaces",
    "rules = msviz.RuleSet.default(target)\n"
    "rules.set('MultiLevelTilingWithIntrin', intrin_name='dot_16x4_nope')\n"
    "DesignSpaceView('I8DP-0', target=target, rules=rules)",
]


def _shot(driver, selector: str, name: str, index: int = 0) -> None:
    driver.execute_script(
        f"document.querySelectorAll({selector!r})[{index}].scrollIntoView({{block: 'start'}})")
    time.sleep(1.0)
    driver.save_screenshot(str(ARTIFACTS / name))


def test_vnni_views_in_the_browser(lab_server: LabServer, tmp_path: Path) -> None:
    import msviz

    session = msviz.Session("I8DP-0", work_dir=tmp_path / "lab" / "wd", max_trials=8,
                            trials_per_batch=8, strategy="replay", seed=2)
    session.start()
    assert session.wait(600) == "finished"
    with lab_notebook(lab_server, tmp_path, "vnni.ipynb", CELLS, ARTIFACTS, "vnni-failure.png",
                      wait_for_cells=False) as driver:
            _wait(driver, "return document.querySelectorAll('table.msviz-spaces').length >= 2",
                  timeout=900, what="both design-space views")
            count = "return document.querySelectorAll({!r}).length"
            badges = _wait(driver, count.format(".msviz-tensorize"), what="tensorize badges")
            assert badges >= 3
            assert driver.execute_script(count.format("details.msviz-intrinsic")) == 1
            intrinsic = driver.execute_script(
                "return document.querySelector('details.msviz-intrinsic').textContent")
            assert "dot_16x4_vnni" in intrinsic and "vpdpbusd.512" in intrinsic
            marks = driver.execute_script(count.format(".msviz-mark"))
            special = driver.execute_script(
                "return document.querySelector('.msviz-special').textContent")
            assert marks > 0 and f"vpdpbusd x{marks}" in special, special
            tables = driver.execute_script(
                "return [...document.querySelectorAll('table.msviz-spaces')]"
                ".map(t => t.textContent)")
            assert "dot_16x4_vnni" in tables[0] and "dot_16x4_vnni" not in tables[1]
            warning = driver.execute_script(
                "return document.querySelector('.msviz-warning').textContent")
            assert "'dot_16x4_nope' does not exist" in warning
            page = driver.execute_script("return document.body.innerText")
            assert not [t for t in BAD_TEXT if t in page]
            _shot(driver, "table.msviz-trace", "vnni-trace.png")
            _shot(driver, "details.msviz-intrinsic", "vnni-intrinsic.png")
            _shot(driver, ".msviz-special", "vnni-code.png")
            _shot(driver, ".msviz-mark", "vnni-code-marks.png")
            _shot(driver, "table.msviz-spaces", "vnni-spaces.png")
            _shot(driver, ".msviz-warning", "vnni-spaces-warning.png")
