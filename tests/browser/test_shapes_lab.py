"""One tuning, many shapes, in real JupyterLab + Chromium: a notebook cell starts covering a
tiny GMM family (M = 16, 64, 256; two shapes tuned) and shows ``msviz.shapes_view(tuning)``;
the cell returns at once and the view follows the tuning. Once it ends, the page holds the
regret heat map (a row per tuned shape, a column per shape, the ratios of the cover written
to disk), the bars and the dispatch table. Screenshots: ``artifacts/shapes-heatmap.png``
(the cover), ``shapes-running.png`` (while it tunes)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

CELL = """import msviz
fam = msviz.shapes("GMM", dim="M", sizes=[16, 64, 256])
tuning = msviz.tune_shapes(fam, work_dir="cover", trials=8, k=2, population_size=16,
                           init_min_unmeasured=8, genetic_num_iters=1, cost_model_task_warmup=0,
                           evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})
view = msviz.shapes_view(tuning)
tuning.start()
view"""

_VIEW = """
const box = document.querySelector('.msviz-shapes');
if (!box || !box.offsetParent) return null;
const plots = [...box.querySelectorAll('.js-plotly-plot')];
const fig = g => g && g._fullLayout ? {
    data: g.data.map(t => ({type: t.type, x: t.x, y: t.y, z: t.z, text: t.text})),
    title: g._fullLayout.title.text,
    xtitle: g._fullLayout.xaxis.title.text, ytitle: g._fullLayout.yaxis.title.text,
    notes: [...g.querySelectorAll('.annotation-text')].map(a => a.textContent),
    cells: [...g.querySelectorAll('.heatmaplayer text, .heatmaplayer .textpoint')]
        .map(t => t.textContent).filter(t => t),
    bars: g.querySelectorAll('.barlayer .point').length} : null;
const table = box.querySelector('table.msviz-shapes-table');
return {progress: (box.querySelector('.msviz-shapes-progress') || {}).textContent || '',
        summary: (box.querySelector('.msviz-shapes-summary') || {}).textContent || '',
        heat: fig(plots[0]), bars: fig(plots[1]),
        heatShown: !!(plots[0] && plots[0].offsetParent),
        table: (box.querySelector('.msviz-shapes-text') || {}).textContent || '',
        rows: table ? [...table.querySelectorAll('tbody tr')].map(
            r => [...r.querySelectorAll('td')].map(c => c.textContent.trim())) : [],
        ranges: [...box.querySelectorAll('.msviz-shapes-ranges li')].map(l => l.textContent)};
"""


def test_shapes_view_in_lab(lab_server: LabServer, tmp_path: Path) -> None:
    import msviz
    from msviz.views.shapes import ratio_text, shape_cover_info

    with lab_notebook(lab_server, tmp_path, "shapes.ipynb", [CELL], ARTIFACTS,
                      "shapes-heatmap-failure.png") as driver:
        # the cell returned with the tuning running: the view is there, saying so
        _wait(driver, "const v = (() => {" + _VIEW + "})(); return v && v.progress",
              timeout=120, what="the shapes view")
        early = driver.execute_script(_VIEW)
        assert "Shape tuning:" in early["progress"], early
        if not (early["heat"] or {}).get("data"):  # tuning: one line says so, no figures
            assert "no shape cover yet" in early["table"] and not early["heatShown"], early
            driver.find_element("css selector", ".msviz-shapes").screenshot(
                str(ARTIFACTS / "shapes-running.png"))
        _wait(driver, "const v = (() => {" + _VIEW + "})();"
              " return v && v.progress.includes('finished') && v.heat && v.heat.data.length > 0",
              timeout=600, what="the cover drawn after the tuning")
        time.sleep(1.0)  # plotly's redraw
        view = driver.execute_script(_VIEW)
        assert view["heatShown"], view
        info = shape_cover_info(msviz.open_shapes(tmp_path / "lab" / "cover"))
        assert len(info.chosen) == 2
        # the heat map: the cover's rows, columns and ratios, their texts in the cells
        heat = view["heat"]
        (trace,) = heat["data"]
        assert trace["type"] == "heatmap"
        assert trace["x"] == ["M=16", "M=64", "M=256"] and trace["y"] == list(info.chosen)
        expected = [[c.ratio for c in line] for line in info.cells]
        assert [[None if v is None else round(v, 9) for v in row] for row in trace["z"]] == \
            [[None if v is None else round(v, 9) for v in row] for row in expected]
        shown = [ratio_text(c.ratio) for line in info.cells for c in line if c.ratio]
        assert sorted(heat["cells"]) == sorted(shown), heat
        assert heat["cells"].count("1.00") >= 3  # each column's best, the tuned ones' own
        assert heat["xtitle"] == "run at (M)" and heat["ytitle"] == "tuned at"
        assert heat["title"].startswith("Weighted regret"), heat["title"]
        # the bars: a dispatched bar per shape, an own bar per tuned shape
        assert view["bars"]["bars"] == 3 + 2, view["bars"]
        # the summary and the dispatch table
        assert "tuned 2 of 3 shapes" in view["summary"], view
        assert [r[0] for r in view["rows"]] == ["M=16", "M=64", "M=256"]
        assert sum(r[2] == "yes" for r in view["rows"]) == 2
        assert view["ranges"] and all("schedules tuned at M=" in r for r in view["ranges"])
        box = driver.find_element("css selector", ".msviz-shapes")
        driver.execute_script("arguments[0].scrollIntoView()", box)
        time.sleep(0.5)
        box.screenshot(str(ARTIFACTS / "shapes-heatmap.png"))
        page = driver.page_source
        for bad in BAD_TEXT:
            assert bad not in page, bad
