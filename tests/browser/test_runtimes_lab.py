"""The Tasks tab's Runtimes section in real JupyterLab + Chromium: a work dir with a
``runtimes`` sidecar line (``msviz.vs_runtimes``' result, hand-written here) opened in a
notebook shows its tables and its per-task bars (TVM against ONNX Runtime, largest gap first);
screenshot ``artifacts/tab-tasks-runtimes.png``."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from msviz.archive.sidecar_writer import SidecarWriter
from tests.browser.jupyterlab import LabServer, lab_notebook
from tests.browser.jupyterlab import wait as _wait
from tests.browser.test_dashboard_lab import BAD_TEXT, _open_tab
from tests.browser.test_tasks_tab import (
    _BARS,
    ARTIFACTS,
    _dashboard_cells,
    _settled,
    _wait_for_dashboard,
)
from tests.runtimes_data import entry

pytestmark = pytest.mark.browser


def test_tasks_tab_shows_the_runtimes(stock_model_work_dir: Path, lab_server: LabServer,
                                      tmp_path: Path) -> None:
    work_dir = tmp_path / "wd"
    shutil.copytree(stock_model_work_dir, work_dir)
    line = {k: v for k, v in entry().items() if k not in ("v", "kind", "timestamp")}
    with SidecarWriter(work_dir) as writer:
        writer.write("runtimes", **line)
    cells = _dashboard_cells(work_dir)
    report: dict = {}
    try:
        with lab_notebook(lab_server, tmp_path, "runtimes.ipynb", cells, ARTIFACTS,
                          "tab-tasks-runtimes-failure.png") as driver:
            _wait_for_dashboard(driver)
            _open_tab(driver, "Tasks")
            _wait(driver, "return document.querySelector('.msviz-runtimes')", timeout=60,
                  what="the Runtimes section")
            graphs = _settled(lambda: driver.execute_script(_BARS), lambda gs: any(
                g["title"] == "TVM in the model vs ONNX Runtime" and g["bars"] > 0 for g in gs))
            driver.execute_script("document.querySelector('.msviz-runtimes').scrollIntoView()")
            time.sleep(0.5)  # the scroll, before the screenshot only
            driver.save_screenshot(str(ARTIFACTS / "tab-tasks-runtimes.png"))
            whole = driver.execute_script(
                "return [...document.querySelectorAll('.msviz-runtimes tr.msviz-runtime-row')]"
                ".map(r => [...r.cells].map(c => c.textContent))")
            tasks = driver.execute_script(
                "return [...document.querySelectorAll('.msviz-runtimes tr.msviz-runtime-task')]"
                ".map(r => [...r.cells].map(c => c.textContent))")
            report.update(graphs=graphs, whole=whole, tasks=tasks)
            assert [r[:4] for r in whole] == [["onnxruntime", "40.0", "80.0", "2.12x"],
                                              ["openvino", "100.0", "80.0", "0.80x"]]
            assert [r[6] for r in whole] == ["match", "DIFFER"]
            assert [r[0] for r in tasks] == ["fused_conv2d_add_add1_relu",
                                             "fused_conv2d_add_relu", "softmax"]
            bars = next(g for g in graphs if g["title"] == "TVM in the model vs ONNX Runtime")
            # TVM's 3 tasks and ONNX Runtime's 2 tasks and its "other" row
            assert bars["bars"] == 6, graphs
            # the y axis is reversed (largest gap on top): its ticks come bottom first
            assert bars["labels"][::-1] == [*(r[0] for r in tasks),
                                             "other (ORT nodes of no task)"], graphs
            page = driver.page_source
            for bad in BAD_TEXT:
                assert bad not in page
    finally:
        (ARTIFACTS / "tab-tasks-runtimes-survey.json").write_text(json.dumps(report, indent=1))
