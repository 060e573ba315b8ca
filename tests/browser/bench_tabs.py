"""Benchmark helpers (not tests): a large run's dashboard in a real JupyterLab + headless
Chromium, as users meet it. Every tab timed from the click to its plots drawn (or their note
saying why they have no data) with what each plot shows and a screenshot; a resumed session's
refresh timed from the batch's ``measured`` event to the browser's drawing of it; the kernel's
memory; the HTML report opened."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.browser.chromium import chromium
from tests.browser.jupyterlab import jupyterlab, run_all_cells, wait, write_notebook
from tests.browser.test_dashboard_lab import _open_tab

#: The visible plots of the shown tab as [drawn, survey]: drawn when every one is laid out at a
#: real width with its traces drawn (WebGL ones on their canvas) or a note saying why it has
#: none; the survey says, per plot, its title, traces, points, legend entries and note.
TAB_STATE = """
const visible = e => e.offsetParent !== null && e.getBoundingClientRect().width > 0;
const root = document.querySelector('.msviz-dashboard');
const plots = [...root.querySelectorAll('.js-plotly-plot')].filter(visible);
let drawn = true;
const survey = plots.map(gd => {
  const full = (gd._fullData || []).filter(t => t.visible === true);
  const svgTraces = full.filter(t => !(t.type || '').endsWith('gl'));
  const glTraces = full.filter(t => (t.type || '').endsWith('gl'));
  const layers = gd.querySelectorAll('.scatterlayer .trace, .barlayer .trace, .boxlayer .trace,'
    + ' .heatmaplayer .hm, .parcoords, .pielayer .trace').length;
  const note = [...gd.querySelectorAll('.annotation-text')].map(a => a.textContent).join(' | ');
  const title = (gd.querySelector('.gtitle') || {}).textContent || '';
  let points = gd.querySelectorAll('.scatterlayer .point, .barlayer .point').length;
  points += [...gd.querySelectorAll('.scatterlayer .js-line')]
    .filter(p => (p.getAttribute('d') || '').length > 2).length;
  points += gd.querySelectorAll('.heatmaplayer .hm image').length;
  for (const t of glTraces) points += (t.x || []).length;
  const ok = gd._fullLayout && gd.querySelector('.main-svg')
    && gd.getBoundingClientRect().width >= 100
    && (svgTraces.length === 0 || layers > 0)
    && (glTraces.length === 0 || gd.querySelector('canvas.gl-canvas-context'))
    && (full.length > 0 || note.length > 0);
  if (!ok) drawn = false;
  return {title, traces: full.length, gl: glTraces.length, points, note,
          legend: gd.querySelectorAll('.legend .traces').length,
          height: Math.round(gd.getBoundingClientRect().height)};
});
const text = [...root.querySelectorAll('.widget-tab-contents > *, .lm-TabPanel-stackedPanel > *')]
  .filter(visible).map(e => e.innerText.length).reduce((a, b) => a + b, 0);
const errors = [...root.querySelectorAll('.msviz-error')].filter(visible).map(e => e.textContent)
  .filter(t => t.trim());
return [drawn && text > 0, {plots: survey, text, errors}];
"""

_WATCH_KERNEL = (
    "const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;"
    "window.__msvizKernel = kernel;"
    "kernel.statusChanged.connect((_, status) => {"
    " if (status === 'busy' && window.__msvizClick !== null && !window.__msvizBusy)"
    "  { window.__msvizBusy = performance.now(); }"
    " if (status === 'idle' && window.__msvizBusy && !window.__msvizIdle)"
    "  { window.__msvizIdle = performance.now(); } });")
_ARM_CLICK = (
    "window.__msvizClick = null; window.__msvizBusy = false; window.__msvizIdle = false;"
    " document.addEventListener('pointerdown', e => { window.__msvizClick = performance.now(); },"
    " {capture: true, once: true});")
_TIMED = (
    "const done = arguments[arguments.length - 1];"
    "const state = () => { STATE };"
    "const deadline = performance.now() + 60000;"
    "const poll = () => { const [ok, survey] = state();"
    " if (ok && window.__msvizClick !== null && window.__msvizIdle)"
    "   return done([performance.now() - window.__msvizClick, {...survey,"
    "    kernel_ms: window.__msvizIdle - window.__msvizClick}]);"
    " if (performance.now() > deadline) return done([null, survey]);"
    " requestAnimationFrame(poll); };"
    "poll();").replace("STATE", TAB_STATE)


def _tab_titles(driver: Any) -> list[str]:
    return [t.text for t in driver.find_elements(
        "css selector", ".msviz-dashboard .lm-TabBar-tab") if t.text]


def _kernel_value(driver: Any, root: Path, code: str, name: str, timeout: float = 120) -> Any:
    """Run ``code`` (which must write JSON to the file ``name`` in ``root``) in the kernel."""
    target = root / name
    target.unlink(missing_ok=True)
    driver.execute_script("window.__msvizKernel.requestExecute({code: arguments[0]});", code)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if target.is_file() and target.stat().st_size:
            time.sleep(0.1)
            return json.loads(target.read_text())
        time.sleep(0.2)
    raise AssertionError(f"the kernel did not write {name}")


def dashboard_tabs(root: Path, setup: str, *, shots: Path, label: str,
                   reopen: int = 1) -> dict:
    """Run ``setup`` (code that leaves a dashboard in ``dash`` and the kernel's RSS before it
    in ``rss0``) as a notebook cell in JupyterLab showing ``dash``; click every tab in turn
    and time it until drawn (``reopen`` more rounds after the first); a screenshot of each
    tab (a tall window, so the whole tab shows) as ``shots/<label>-<tab>.png``.

    Returns ``{"tabs": {title: [seconds...]}, "survey": {title: ...}, "rss_mb": ...,
    "built_s": ...}``: the kernel's RSS growth from before the dashboard to after every tab
    was drawn, and ``built_s`` if ``setup`` set it.
    """
    write_notebook(root, f"{label}.ipynb", [setup + "\ndash"])
    out: dict = {"tabs": {}, "survey": {}}
    with jupyterlab(root) as url, chromium(offline=True) as driver:
        run_all_cells(driver, url, f"{label}.ipynb")
        wait(driver, "return document.querySelectorAll('.msviz-tt tbody tr').length > 0",
             timeout=300, what="the trials table")
        time.sleep(2)
        driver.execute_script(_WATCH_KERNEL)
        titles = _tab_titles(driver)
        for round_ in range(1 + reopen):
            for title in [*titles[1:], titles[0]]:
                driver.execute_script(_ARM_CLICK)
                _open_tab(driver, title)
                seconds, survey = driver.execute_async_script(_TIMED)
                out["tabs"].setdefault(title, []).append(seconds)
                if round_ == 0:
                    out["survey"][title] = survey
                if title == titles[0] and round_ == 0:  # a trial for the Trace and Code tabs
                    driver.find_element("css selector", ".msviz-tt tbody tr").click()
                time.sleep(1.0)
        out["rss_mb"], out["built_s"] = _kernel_value(
            driver, root, "import json, psutil\n"
            "open('rss.json', 'w').write(json.dumps([(psutil.Process().memory_info().rss"
            " - rss0) / 1e6, globals().get('built')]))", "rss.json")
        driver.set_window_size(1400, 7000)
        for title in titles:
            _open_tab(driver, title)
            time.sleep(2.5)
            name = f"{label}-{title.lower().replace(' ', '-')}"
            driver.save_screenshot(str(shots / f"{name}.png"))
            # and each plot on its own, at full size (the whole page is too tall to read)
            plots = [p for p in driver.find_elements(
                "css selector", ".msviz-dashboard .js-plotly-plot") if p.is_displayed()]
            for i, plot in enumerate(plots):
                plot.screenshot(str(shots / f"{name}-{i}.png"))
        driver.set_window_size(1400, 1900)
    return out


#: Records each change of the dashboard's progress line ("n/N trials ...") with the time
#: (epoch ms) of the first frame after it painted.
_WATCH_PROGRESS = """
window.__msvizDrawn = [];
const find = () => [...document.querySelectorAll('.msviz-dashboard .widget-html')]
  .find(e => /^[0-9]+\\/[0-9]+ trials/.test(e.textContent.trim()));
let last = find().textContent;
new MutationObserver(() => {
  const now = find().textContent;
  if (now === last) return;
  last = now;
  requestAnimationFrame(() => setTimeout(() =>
    window.__msvizDrawn.push([performance.timeOrigin + performance.now(), now]), 0));
}).observe(document.querySelector('.msviz-dashboard'),
           {subtree: true, childList: true, characterData: true});
"""


def refresh_in_browser(root: Path, setup: str, *, label: str, tab: str = "Trials",
                       timeout: float = 900) -> list[dict]:
    """Run ``setup`` (code that leaves a resumed, not started ``session`` and its ``dash``),
    show ``tab``, start the session and wait for it to finish. Per batch: the kernel's
    handling of its events (``python_ms``) and the time from the ``measured`` event to the
    browser's first frame showing the new progress line (``browser_ms``)."""
    timed = (
        "\nimport time as _t\n_orig = dash.on_events\n_log = []\n"
        "def _timed(events):\n"
        "    tic = _t.perf_counter()\n"
        "    _orig(events)\n"
        "    m = [e for e in events if e.kind == 'measured']\n"
        "    if m:\n"
        "        _log.append([m[-1].time, (_t.perf_counter() - tic) * 1e3,"
        " dash.progress_label.value])\n"
        "dash.adapter.handlers = [_timed]\n")
    write_notebook(root, f"{label}.ipynb", [setup + timed + "dash"])
    with jupyterlab(root) as url, chromium(offline=True) as driver:
        run_all_cells(driver, url, f"{label}.ipynb")
        wait(driver, "return document.querySelectorAll('.msviz-tt tbody tr').length > 0",
             timeout=300, what="the trials table")
        driver.execute_script(_WATCH_KERNEL)
        _open_tab(driver, tab)
        time.sleep(2)
        driver.execute_script(_WATCH_PROGRESS)
        driver.execute_script("window.__msvizKernel.requestExecute({code: 'session.start()'});")
        wait(driver, "const e = document.querySelector('.msviz-dashboard .msviz-state');"
             "return e && ['finished', 'stopped', 'failed'].includes(e.textContent)",
             timeout=timeout, what="the session to end")
        time.sleep(1.5)
        kernel = _kernel_value(driver, root, "import json\nopen('refresh.json', 'w')"
                               ".write(json.dumps(_log))", "refresh.json")
        drawn = driver.execute_script("return window.__msvizDrawn")
    out = []
    for event_time, python_ms, text in kernel:
        key = text.split("·")[0].strip()
        shown = [t for t, label_ in drawn if label_.split("·")[0].strip() == key]
        out.append({"python_ms": python_ms, "trials": key,
                    "browser_ms": (shown[0] - event_time * 1e3) if shown else None})
    return out


def report_seconds(path: Path, shot: Path) -> tuple[float, int]:
    """Open an HTML report in Chromium (offline): seconds from navigation start to every
    plot drawn (browser clock), and the number of plots; a screenshot of its top."""
    with chromium(offline=True) as driver:
        driver.set_script_timeout(120)
        driver.get(path.as_uri())
        result = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "const poll = () => { const plots = [...document.querySelectorAll('.js-plotly-plot')];"
            " const ready = document.readyState === 'complete' && plots.length > 0 &&"
            "  plots.every(gd => gd._fullLayout && gd.querySelector('.main-svg'));"
            " if (ready) return done([performance.now(), plots.length]);"
            " if (performance.now() > 120000) return done([null, plots.length]);"
            " requestAnimationFrame(poll); }; poll();")
        driver.save_screenshot(str(shot))
    ms, plots = result
    return (None if ms is None else ms / 1e3), plots
