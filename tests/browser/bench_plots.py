"""Benchmark helper (not a test): how long the dashboard's Plots tab takes to draw in a real
JupyterLab + headless Chromium, from the click on the tab to every figure drawn."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat

from tests.browser.chromium import chromium
from tests.browser.jupyterlab import jupyterlab
from tests.browser.test_dashboard_lab import _open_tab, _wait

#: True when every visible plotly graph of the dashboard has drawn: its SVG is laid out at a
#: real width and each of its traces has its markers or lines (an empty figure has none).
DRAWN = """
const plots = [...document.querySelectorAll('.msviz-dashboard .js-plotly-plot')]
  .filter(gd => gd.offsetParent !== null);
if (plots.length === 0) return null;
let points = 0;
for (const gd of plots) {
  if (!gd._fullLayout || !gd.querySelector('.main-svg')) return null;
  if (gd.getBoundingClientRect().width < 100) return null;
  const traces = (gd.data || []).filter(t => t.visible !== false && (t.x || []).length);
  const gl = traces.filter(t => (t.type || '').endsWith('gl'));
  const drawn = gd.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length;
  if (drawn < traces.length - gl.length) return null;
  if (gl.length && !gd.querySelector('canvas.gl-canvas-context')) return null;
  points += gd.querySelectorAll('.scatterlayer .point, .barlayer .point').length;
  points += gd.querySelectorAll('.scatterlayer .js-line').length;
  for (const t of gl) points += t.x.length;
}
return [plots.length, points];
"""
#: What each visible plot shows (for a failure message).
STATE = """
return [...document.querySelectorAll('.msviz-dashboard .js-plotly-plot')]
  .filter(gd => gd.offsetParent !== null).map(gd => ({
    width: gd.getBoundingClientRect().width, layout: !!gd._fullLayout,
    traces: (gd.data || []).length, gl: !!gd.querySelector('canvas.gl-canvas-context'),
    nonempty: (gd.data || []).filter(t => t.visible !== false && (t.x || []).length).length,
    drawn: gd.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length,
    points: gd.querySelectorAll('.point').length}));
"""


def _artifacts() -> Path:
    path = Path(__file__).resolve().parents[2] / "artifacts"
    path.mkdir(exist_ok=True)
    return path


def plots_tab_seconds(root: Path, work_dir: str, trials: int, *, reopen: int = 2) -> list[float]:
    """Open ``root/work_dir`` (``trials`` records) in a resumed session's dashboard in
    JupyterLab; click the Plots tab and time it until every figure is drawn, in the browser's
    own clock: from the click's ``pointerdown`` to the first frame that shows them all after
    the kernel has handled the tab change (busy, then idle: its figure updates have arrived).

    Returns the seconds of: the first opening; an opening with the plots stale (as after a
    batch that arrived while the Trials tab showed: the kernel redraws them); ``reopen`` more.
    """
    cell = (
        "import msviz\n"
        f"session = msviz.Session('GMM-0', work_dir={work_dir!r}, resume=True,\n"
        f"                        max_trials={trials + 16}, trials_per_batch=8)\n"
        "dash = msviz.dashboard(session)\n"
        "dash"
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(cell)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, root / "plots.ipynb")
    seconds: list[float] = []
    with jupyterlab(root) as url, chromium(offline=True) as driver:
        driver.set_script_timeout(300)
        driver.get(url.replace("/lab?", "/lab/tree/plots.ipynb?"))
        _wait(driver, "return window.jupyterapp && document.querySelector('.jp-Notebook')",
              what="the notebook to open")
        ok = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "(async () => { const app = window.jupyterapp; await app.restored;"
            " const panel = app.shell.currentWidget; await panel.sessionContext.ready;"
            " done(await app.commands.execute('notebook:run-all-cells'));"
            " })().catch(e => done('error: ' + e));")
        assert ok is True, ok
        _wait(driver, "return document.querySelectorAll('.msviz-tt tbody tr').length > 0",
              timeout=300, what="the trials table")
        time.sleep(2)  # let the page settle
        driver.execute_script(
            "const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;"
            "window.__msvizKernel = kernel;"
            "kernel.statusChanged.connect((_, status) => {"
            " if (status === 'busy' && window.__msvizClick !== null) window.__msvizBusy = true;"
            " if (status === 'idle' && window.__msvizBusy) window.__msvizIdle = true; });")
        for i in range(2 + reopen):
            if i == 1:  # as if a batch had arrived while the Trials tab showed
                driver.execute_script(
                    "window.__msvizKernel.requestExecute({code: 'dash._plots_stale = True'});")
                time.sleep(2)
            driver.execute_script(
                "window.__msvizClick = null; window.__msvizBusy = false;"
                " window.__msvizIdle = false; document.addEventListener('pointerdown',"
                " e => { window.__msvizClick = performance.now(); },"
                " {capture: true, once: true});")
            _open_tab(driver, "Plots")
            result = driver.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                f"const drawn = () => {{ {DRAWN} }};"
                "const deadline = performance.now() + 60000;"
                "const poll = () => { const d = drawn();"
                " if (d && window.__msvizClick !== null && window.__msvizIdle)"
                "   return done([performance.now() - window.__msvizClick, d]);"
                " if (performance.now() > deadline) return done(null);"
                " requestAnimationFrame(poll); };"
                "poll();")
            if result is None:
                state = driver.execute_script(STATE)
                driver.save_screenshot(str(_artifacts() / f"bench-plots-{trials}-failure.png"))
                raise AssertionError(f"the plots never finished drawing: {state}")
            elapsed_ms, (plots, points) = result
            assert plots >= 3 and points >= 1, (plots, points)
            seconds.append(elapsed_ms / 1e3)
            _open_tab(driver, "Trials")
            time.sleep(1.0)
        _open_tab(driver, "Plots")
        time.sleep(1.0)
        driver.save_screenshot(str(_artifacts() / f"bench-plots-{trials}.png"))
    return seconds
