"""Every tab of the dashboard after a live 16-trial session, in real JupyterLab + Chromium:
each visible plotly graph has rendered data points, each visible menu has options, no widget
shows an error; one screenshot per tab under ``artifacts/``."""

from __future__ import annotations

import itertools
import json
import math
import re
import time
from pathlib import Path

import pytest

from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT, _open_tab

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
WORKTREE = Path(__file__).resolve().parents[2]

CELLS = [
    "import msviz\n"
    "print(msviz.__file__)\n"
    "session = msviz.Session('GMM-0', work_dir='wd', max_trials=16, trials_per_batch=8,\n"
    "                        population_size=16, init_min_unmeasured=8, genetic_num_iters=1,\n"
    "                        seed=7)\n"
    "dash = msviz.dashboard(session)\n"
    "session.start()\n"
    "dash",
]

#: What the page shows in each visible plotly graph, menu and error area (as JSON).
_SURVEY = """
const visible = e => !!(e.offsetParent) && e.getBoundingClientRect().width > 0;
const root = document.querySelector('.msviz-dashboard');
const graphs = [...root.querySelectorAll('.js-plotly-plot')].filter(visible).map(g => {
  const title = g.querySelector('.gtitle');
  return {
    title: title ? title.textContent : '',
    points: g.querySelectorAll('.scatterlayer .point').length,
    lines: [...g.querySelectorAll('.scatterlayer .js-line')]
      .filter(p => (p.getAttribute('d') || '').length > 2).length,
    boxes: g.querySelectorAll('.boxlayer .box path, .boxlayer path.box').length,
    bars: g.querySelectorAll('.barlayer .point').length,
    parcoords: g.querySelectorAll('.parcoords .axis .tick').length,
    gl: g.querySelectorAll('canvas.gl-canvas').length,
    note: [...g.querySelectorAll('.annotation-text')].map(a => a.textContent).join(' | '),
  };
});
const menus = [...root.querySelectorAll('select')].filter(visible)
  .map(s => ({cls: s.className, options: s.options.length,
              label: (s.closest('.widget-dropdown, label') || s).textContent.slice(0, 60)}));
const errors = [...root.querySelectorAll('.msviz-error')].filter(visible)
  .map(e => e.textContent);
return JSON.stringify({graphs, menus, errors});
"""


def _survey(driver) -> dict:
    return json.loads(driver.execute_script(_SURVEY))


def _has_data(graph: dict) -> bool:
    return graph["points"] + graph["lines"] + graph["boxes"] + graph["bars"] \
        + graph["parcoords"] > 0


def _settled_survey(driver, ready, timeout: float = 120) -> dict:
    """The survey once ``ready(survey)`` holds and two surveys half a second apart agree (the
    page draws a tab's plots after it opens, as fast as the host allows), or the survey as it
    is after ``timeout`` (the checks then say what is missing)."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        survey = _survey(driver)
        if (ready(survey) and survey == last) or time.monotonic() > deadline:
            return survey
        last = survey if ready(survey) else None
        time.sleep(0.5)


def _toggle(driver, text: str) -> None:
    for button in driver.find_elements("css selector", ".msviz-dashboard .widget-toggle-button"):
        if button.text.strip() == text:
            button.click()
            return
    raise AssertionError(f"no toggle button {text!r}")


_FIRST_GRAPH = "const g = [...document.querySelectorAll('.msviz-dashboard .js-plotly-plot')]" \
    ".filter(e => e.offsetParent)[0];"


def _check_toggles(driver) -> dict:
    """GFLOPS then wall time on the best-so-far plot: the axes follow in the browser (a log
    axis or a note left over from the previous figure would stay without a reset)."""
    _toggle(driver, "GFLOPS")
    _wait(driver, _FIRST_GRAPH + "return g._fullLayout.yaxis.type === 'linear'", timeout=60,
          what="a linear GFLOPS axis")
    _toggle(driver, "by wall time")
    _wait(driver, _FIRST_GRAPH + "return g._fullLayout.xaxis.title.text === 'Wall time (s)'",
          timeout=60, what="the wall-time axis")
    time.sleep(1.0)
    driver.save_screenshot(str(ARTIFACTS / "tab-plots-wall-time.png"))
    seconds = driver.execute_script(_FIRST_GRAPH + "return g.data[0].x")
    wall = driver.execute_script(_FIRST_GRAPH + "return g._fullLayout.xaxis.range")
    assert 0 <= min(seconds) and max(seconds) < 600, seconds  # seconds, not µs or ns
    driver.execute_script("document.querySelector('.msviz-dashboard .parcoords')"
                          ".scrollIntoView({block: 'center'})")
    time.sleep(1.0)
    driver.save_screenshot(str(ARTIFACTS / "tab-plots-decisions.png"))
    _toggle(driver, "latency")
    _toggle(driver, "by trial")
    driver.execute_script("document.querySelector('.msviz-dashboard').scrollIntoView()")
    return {"seconds": seconds, "x range": wall}


def _edit_and_measure(driver) -> str:
    """Trace tab: choose another value of the first decision with a choice, press Measure and
    wait for the view to say how the new trial went (the session has finished: a re-measure
    sets up its own tuner)."""
    from selenium.webdriver.support.ui import Select

    menu = next(Select(s) for s in driver.find_elements("css selector", ".msviz-dashboard select")
                if s.is_displayed() and len(Select(s).options) > 1)
    now = [o.get_attribute("selected") is not None for o in menu.options].index(True)
    menu.select_by_index((now + 1) % len(menu.options))
    button = "[...document.querySelectorAll('.msviz-dashboard button')]" \
        ".find(b => b.offsetParent && b.textContent.trim() === 'Measure')"
    _wait(driver, f"const b = {button}; return b && !b.disabled", timeout=60,
          what="an enabled Measure button")
    driver.execute_script(f"{button}.click()")
    status = "const s = document.querySelector('.msviz-dashboard .msviz-measure-status');"
    _wait(driver, status + "return s && s.textContent.startsWith('measured a new trial')",
          timeout=240, what="the measured edit")
    time.sleep(1.0)
    driver.save_screenshot(str(ARTIFACTS / "tab-trace-measured.png"))
    return driver.execute_script(status + "return s.textContent")


#: The tabs of a local (no RPC) single-workload session's dashboard, in order.
TABS = ["Trials", "Plots", "Time", "Trace", "Code", "Evolution", "Design spaces", "Rules"]


def _expected_graphs(work_dir: Path) -> dict[str, dict[str, int]]:
    """What each graph must draw, from the session's own rows (read from its work dir): the
    graph's title up to `` (`` or ``:`` -> counts of the survey's marks."""
    import msviz

    run = msviz.open(work_dir)
    trials, profile = run.trials, run.profile
    n = len(trials)
    stages = profile["stage"].nunique()
    # one bar per run of consecutive profile lines of the same (task, batch), per stage
    keys = list(zip(profile["task"].astype(str), profile["batch"].astype(object).fillna(-1),
                    strict=True))
    rows = 1 + sum(a != b for a, b in itertools.pairwise(keys))
    last = int(trials["generation"].max())
    return {
        # a dot per trial (failures on the axis floor) and the best-so-far step line
        "Best so far": {"points": n, "lines": 1},
        "Every trial, by status": {"points": n},
        "Cost model": {"points": int(trials["predicted_score"].notna().sum())},
        "Where the time went": {"bars": stages},
        "Seconds per batch, by stage": {"bars": stages * rows},
        # the last generation's scored population (one genetic iteration: one box) and a
        # point for each candidate it measured
        f"Generation {last}": {"points": int((trials["generation"] == last).sum()), "boxes": 1},
    }


def _best_space_trials(work_dir: Path) -> int:
    """How many successful records share the fastest record's design space (the same decision
    sites: instruction index and kind of each decided instruction), read from the JSON lines."""
    spaces, best = [], (float("inf"), None)
    for line in (work_dir / "database_tuning_record.json").read_text().splitlines():
        if not line.strip():
            continue
        (insts, decisions), run_secs = json.loads(line)[1][:2]
        if not run_secs or not all(math.isfinite(float(s)) and float(s) < 1e9 for s in run_secs):
            continue
        key = tuple(sorted(f"#{i} {insts[i][0]}" for i, _ in decisions))
        spaces.append(key)
        best = min(best, (sum(map(float, run_secs)) / len(run_secs), key))
    return spaces.count(best[1])


def _title_key(title: str) -> str:
    return re.split(r" \(|:", title, maxsplit=1)[0]


def _tab_titles(driver) -> list[str]:
    return [t.text for t in driver.find_elements(
        "css selector", ".msviz-dashboard .lm-TabBar-tab") if t.text]


def test_every_tab_after_live_session(lab_server: LabServer, tmp_path: Path) -> None:
    report: dict = {}
    toggles: dict = {}
    measured = ""
    try:
        with lab_notebook(lab_server, tmp_path, "tabs.ipynb", CELLS, ARTIFACTS, "tabs-failure.png",
                          stop=True) as driver:
            # the kernel imports this checkout's msviz
            _wait(driver, "return document.querySelector('.jp-OutputArea-output pre')",
                  what="the printed msviz path")
            printed = driver.execute_script(
                "return document.querySelector('.jp-OutputArea-output pre').textContent")
            assert str(WORKTREE / "msviz") in printed, printed
            _wait(driver, "const e = document.querySelector('.msviz-dashboard .msviz-state');"
                  "return e && e.textContent === 'finished'", timeout=300, what="finished")
            titles = _tab_titles(driver)
            assert titles == TABS, titles
            expected = _expected_graphs(tmp_path / "lab" / "wd")
            in_best_space = _best_space_trials(tmp_path / "lab" / "wd")
            assert expected["Best so far"]["points"] == 16
            # importance reads the fastest trial's design space; with MIN_TOP (5) trials or
            # fewer there every trial is a winner, and the bars say so above them
            few = (f"all {in_best_space} trials of this design space count as winners: too "
                   "few to tell sites apart") if in_best_space <= 5 else ""

            def note(graph: dict) -> str:  # the one note a graph may show over its data
                return few if graph["title"].startswith("Decision importance") else ""

            def drawn_all(survey: dict) -> bool:  # what the checks below ask of a tab
                drawn = {_title_key(g["title"]): g for g in survey["graphs"]}
                return (all(_has_data(g) and g["note"] == note(g) for g in survey["graphs"])
                        and all(m["options"] > 0 for m in survey["menus"])
                        and not survey["errors"]
                        and all({k: drawn[t][k] for k in counts} == counts
                                for t, counts in expected.items() if t in drawn))

            for title in titles:
                _open_tab(driver, title)
                if title == "Plots":
                    _wait(driver, "return document.querySelectorAll('.msviz-dashboard "
                          ".js-plotly-plot .scatterlayer .point').length >= 16",
                          timeout=60, what="the trial points")
                    driver.find_element("css selector", ".msviz-dashboard .msviz-decisions-button"
                                        ).click()
                    _wait(driver, "return document.querySelector('.msviz-dashboard "
                          ".js-plotly-plot .parcoords')", timeout=120, what="parcoords")
                if title == "Trace":
                    _wait(driver, "return [...document.querySelectorAll('.msviz-dashboard "
                          "select')].some(s => s.offsetParent && s.options.length > 1)",
                          timeout=120, what="decision editors")
                    measured = _edit_and_measure(driver)
                if title == "Design spaces":
                    _wait(driver, "return [...document.querySelectorAll('.msviz-dashboard "
                          "select')].some(s => s.offsetParent && s.options.length > 0)",
                          timeout=120, what="design spaces")
                survey = _settled_survey(driver, drawn_all)
                report[title] = survey
                driver.save_screenshot(str(ARTIFACTS / f"tab-{title.lower().replace(' ', '-')}"
                                           ".png"))
                if title == "Plots":
                    toggles = _check_toggles(driver)
                if title == "Trials":  # select a trial for the trace and code tabs
                    _wait(driver, "return document.querySelector('.msviz-tt tbody tr')",
                          timeout=60, what="the trials table")
                    driver.find_element("css selector", ".msviz-tt tbody tr").click()
            (ARTIFACTS / "tabs-survey.json").write_text(
                json.dumps({**report, "toggles": toggles}, indent=1))
            page = driver.page_source
            for bad in BAD_TEXT:
                assert bad not in page
            graphs = report["Plots"]["graphs"]
            assert len(graphs) >= 3, graphs
            # each plot the session's rows decide draws exactly what they hold
            drawn = {_title_key(g["title"]): g for survey in report.values()
                     for g in survey["graphs"]}
            for title, counts in expected.items():
                assert title in drawn, (title, sorted(drawn))
                assert {k: drawn[title][k] for k in counts} == counts, (title, drawn[title])
            # the edited schedule became record line 17, checked right (plain GMM: no trap)
            assert re.fullmatch(r"measured a new trial \(record line 17\): [0-9.]+ us; "
                                r"result checked: right", measured), measured
            importance = [g for g in report["Plots"]["graphs"]
                          if g["title"].startswith("Decision importance")]
            assert len(importance) == 1, report["Plots"]["graphs"]
            assert f"of {in_best_space} trials" in importance[0]["title"], importance
            for tab, survey in report.items():
                for graph in survey["graphs"]:
                    # data points, and no leftover "why no data yet" note over them
                    assert _has_data(graph) and graph["note"] == note(graph), (tab, graph)
                for menu in survey["menus"]:
                    assert menu["options"] > 0, (tab, menu)
                assert survey["errors"] == [], (tab, survey["errors"])
    except BaseException:
        (ARTIFACTS / "tabs-survey.json").write_text(json.dumps(report, indent=1))
        raise
