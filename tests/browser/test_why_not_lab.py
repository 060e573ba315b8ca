"""The "Why not?" panel in real JupyterLab + Chromium: a click on Ask for the plain-layout int8
dense with k = 30 shows what blocks ``dot_16x4_vnni`` (the extent 30); for the packed int8 dense
(I8DP-0) the answer is "possible", and on a VNNI CPU a click on Measure builds, checks and times
the forced schedule. On a CPU without VNNI the panels ask about a VNNI CPU named explicitly (the
analysis needs no VNNI host; running the forced kernel does). Screenshots:
``artifacts/why-not-*.png``."""

from __future__ import annotations

from pathlib import Path

import pytest

from msviz import compat
from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT
from tests.browser.test_vnni_views import ARTIFACTS, _shot

pytestmark = pytest.mark.browser

HAS_VNNI = compat.target_has_features(compat.make_target("llvm"), ("avx512vnni",))

CELLS = [
    "import msviz\n"
    "from tvm import te\n"
    "from msviz import compat\n"
    "from msviz.widgets.why_not_view import WhyNotView\n"
    "a = te.placeholder((16, 30), 'uint8', name='A')\n"
    "b = te.placeholder((32, 30), 'int8', name='B')\n"
    "r = te.reduce_axis((0, 30), name='k')\n"
    "c = te.compute((16, 32), lambda i, j: te.sum(a[i, r].astype('int32') * "
    "b[j, r].astype('int32'), axis=r), name='C')\n"
    "mod = compat.normalize_mod(te.create_prim_func([a, b, c]))\n"
    "# this CPU if it has VNNI, else one that has it, named\n"
    "vnni = compat.make_target('llvm')\n"
    "if not compat.target_has_features(vnni, ('avx512vnni',)):\n"
    "    vnni = {'kind': 'llvm', 'mcpu': 'cascadelake', 'num-cores': 2}",
    "plain = WhyNotView(lambda **want: msviz.why_not(mod, target=vnni, **want))\n"
    "plain.value.value = 'dot_16x4_vnni'\n"
    "plain",
    "packed = WhyNotView(lambda **want: msviz.why_not('I8DP-0', target=vnni, **want))\n"
    "packed.value.value = 'dot_16x4_vnni'\n"
    "packed",
]


def _click(driver, selector: str, index: int) -> None:
    driver.execute_script(
        f"const b = document.querySelectorAll({selector!r})[{index}];"
        "b.scrollIntoView({block: 'center'}); b.click();")


def test_why_not_panel_in_the_browser(lab_server: LabServer, tmp_path: Path) -> None:
    with lab_notebook(lab_server, tmp_path, "why_not.ipynb", CELLS, ARTIFACTS,
                      "why-not-failure.png") as driver:
        count = "return document.querySelectorAll({!r}).length"
        assert _wait(driver, count.format(".msviz-why-ask"), what="two Ask buttons") == 2
        _click(driver, ".msviz-why-ask", 0)  # the browser's click reaches the kernel
        blocked = _wait(driver, "const e = document.querySelector('.msviz-blocked-by');"
                        "return e && e.textContent", timeout=300, what="the answer")
        assert blocked == "MultiLevelTilingWithIntrin"
        reason = driver.execute_script(
            "return document.querySelector('.msviz-why-reason').textContent")
        assert "the reduction loop k of block C has extent 30, which is not a multiple of 4" \
            in reason, reason
        _shot(driver, ".msviz-why-not", "why-not-blocked.png", 0)
        _click(driver, ".msviz-why-ask", 1)
        _wait(driver, "return [...document.querySelectorAll('.msviz-why-head')]"
              ".some(e => e.textContent.includes('possible'))", timeout=300,
              what="the packed dense's answer")
        _wait(driver, "return !document.querySelectorAll('.msviz-why-measure')[1].disabled",
              what="Measure enabled")
        if not HAS_VNNI:  # a VNNI kernel cannot run here: the answer is what can be checked
            page = driver.execute_script("return document.body.innerText")
            assert not [t for t in BAD_TEXT if t in page]
            _shot(driver, ".msviz-why-not", "why-not-possible.png", 1)
            return
        _click(driver, ".msviz-why-measure", 1)
        status = _wait(driver, "return [...document.querySelectorAll('.msviz-why-not')][1]"
                       ".innerText.match(/measured the forced schedule[^\\n]*/)?.[0]",
                       timeout=300, what="the measurement")
        assert "result checked: right" in status, status
        page = driver.execute_script("return document.body.innerText")
        assert not [t for t in BAD_TEXT if t in page]
        _shot(driver, ".msviz-why-not", "why-not-possible.png", 1)
