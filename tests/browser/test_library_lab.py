"""A library-assisted run in real JupyterLab + Chromium: a tuning library (the catalogue MLP
tuned at batch 4) and a run of the MLP at batch 8 with ``library=`` (its matmuls are siblings:
their first batches measure the library's schedules carried to the new shapes). The opened
run's Tasks tab shows the Library section (summary, table, a bar per task), and its Trials tab
the carried trials' lineage. Screenshots: ``artifacts/tab-tasks-library.png`` (the section),
``trials-library-lineage.png`` (the trial table)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT, _open_tab

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

TINY = dict(population_size=16, init_min_unmeasured=8, genetic_num_iters=1,
            cost_model_task_warmup=0, end_to_end_check=False, seed=1,
            evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})

_SECTION = """
const box = document.querySelector('.msviz-dashboard .msviz-library');
if (!box || !box.offsetParent) return null;
const g = box.querySelector('.js-plotly-plot');
return {text: box.textContent,
        bars: g ? g.querySelectorAll('.barlayer .point').length : 0,
        title: g && g._fullLayout ? g._fullLayout.title.text : '',
        notes: g ? [...g.querySelectorAll('.annotation-text')].map(a => a.textContent) : []};
"""

_TABLE = """
const t = document.querySelector('.msviz-dashboard .msviz-tt');
if (!t || !t.offsetParent) return null;
const heads = [...t.querySelectorAll('thead th')].map(h => h.textContent.trim());
const rows = [...t.querySelectorAll('tbody tr')].map(
    r => [...r.querySelectorAll('td')].map(c => c.textContent.trim()));
return {heads: heads, rows: rows};
"""


def _tune(root: Path) -> int:
    """The library and the run (in the notebook's folder); the run's carried trials."""
    import msviz
    from msviz import models

    lib = msviz.Session("mlp", work_dir=root / "lib", max_trials=8, trials_per_batch=2,
                        **TINY)
    lib.start()
    assert lib.wait(900) == "finished"
    run = msviz.Session(models.build("mlp", input_shape=(8, 64)), work_dir=root / "wd",
                        max_trials=8, trials_per_batch=2, library=root / "lib", **TINY)
    run.start()
    assert run.wait(900) == "finished"
    rows = run.trials
    return int((rows["origin"] == "library").sum())


def test_library_coverage_and_lineage_in_lab(lab_server: LabServer, tmp_path: Path) -> None:
    root = tmp_path / "lab"
    root.mkdir()
    carried = _tune(root)
    assert carried >= 1
    cells = ["import msviz\nrun = msviz.open('wd')\ndash = msviz.dashboard(run)\ndash"]
    with lab_notebook(lab_server, tmp_path, "library.ipynb", cells, ARTIFACTS,
                      "tab-tasks-library-failure.png") as driver:
        _wait(driver, "return [...document.querySelectorAll('.msviz-dashboard .lm-TabBar-tab')]"
              ".some(t => t.textContent.includes('Tasks'))", timeout=300, what="the Tasks tab")
        _open_tab(driver, "Tasks")
        _wait(driver, "const s = (() => {" + _SECTION + "})(); return s && s.bars > 0",
              timeout=120, what="the Library section with its bars")
        section = driver.execute_script(_SECTION)
        assert "library covers" in section["text"], section
        assert "sibling" in section["text"], section
        assert f"{carried} trials from the library" in section["text"] or \
            "from the library" in section["text"], section
        assert section["bars"] >= 1 and not any(n.startswith("no ") for n in section["notes"]), \
            section
        box = driver.find_element("css selector", ".msviz-dashboard .msviz-library")
        driver.execute_script("arguments[0].scrollIntoView()", box)
        time.sleep(0.5)
        box.screenshot(str(ARTIFACTS / "tab-tasks-library.png"))
        _open_tab(driver, "Trials")
        _wait(driver, "const t = (() => {" + _TABLE + "})(); return t && t.rows.length > 0",
              timeout=120, what="the trial table")
        table = driver.execute_script(_TABLE)
        heads = table["heads"]
        assert "origin" in heads and "carried_from" in heads, heads
        origin, source = heads.index("origin"), heads.index("carried_from")
        shown = [r for r in table["rows"] if len(r) > source and r[origin] == "library"]
        assert shown, table
        assert all(r[source].startswith("lib/") for r in shown), shown
        table_el = driver.find_element("css selector", ".msviz-dashboard .msviz-tt")
        driver.execute_script("arguments[0].scrollIntoView()", table_el)
        time.sleep(0.5)
        driver.save_screenshot(str(ARTIFACTS / "trials-library-lineage.png"))
        page = driver.page_source
        for bad in BAD_TEXT:
            assert bad not in page, bad
