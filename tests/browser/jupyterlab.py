"""A throwaway JupyterLab server on 127.0.0.1 with a token, in its own process group."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def jupyterlab(root: Path) -> Iterator[str]:
    """Start JupyterLab serving ``root``; yields the lab URL with its token."""
    token = secrets.token_hex(16)
    home = root.parent / f"{root.name}-jupyter"
    env = dict(os.environ)
    for name, sub in (("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_CONFIG_DIR", "config"),
                      ("JUPYTER_DATA_DIR", "data"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                      ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython")):
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[name] = str(home / sub)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    # keep the data dir of the venv (lab extensions) visible next to the fresh one
    env["JUPYTER_PATH"] = str(Path(sys.prefix) / "share" / "jupyter")
    notify = home / "settings" / "@jupyterlab" / "apputils-extension"
    notify.mkdir(parents=True, exist_ok=True)
    (notify / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    log = open(home / "server.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", "--port=0",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
         "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--allow-root"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        port = None
        # generous: a loaded host may take minutes to start JupyterLab (a fast one: seconds)
        deadline = time.time() + 300
        while time.time() < deadline and port is None:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter-lab exited: {(home / 'server.log').read_text()}")
            for info in (home / "runtime").glob(f"jpserver-{proc.pid}.json"):
                port = json.loads(info.read_text()).get("port")
            time.sleep(0.3)
        if port is None:
            raise RuntimeError("jupyter-lab did not write its server info in 300 s")
        base = f"http://127.0.0.1:{port}"
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=10)
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError(f"jupyter-lab at {base} did not answer in 300 s: "
                                       f"{(home / 'server.log').read_text()[-2000:]}") from None
                time.sleep(0.3)
        yield f"{base}/lab?token={token}"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # kernels it started
        except ProcessLookupError:
            pass
        log.close()


def wait(driver: Any, script: str, timeout: float = 120, what: str = "") -> object:
    """Poll ``script`` in the page until it returns something truthy; fail after ``timeout``."""
    deadline = time.time() + timeout
    value = None
    while time.time() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what or script!r} (last value {value!r})")


def write_notebook(root: Path, name: str, cells: list[str]) -> Path:
    """A notebook ``root/name`` with these code cells and the python3 kernel."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, root / name)
    return root / name


def run_all_cells(driver: Any, url: str, name: str, *, wait_for_cells: bool = True) -> None:
    """Open notebook ``name`` of the lab at ``url`` and run all its cells (fails on an error);
    with ``wait_for_cells=False`` only start them."""
    driver.set_script_timeout(180)
    driver.get(url.replace("/lab?", f"/lab/tree/{name}?"))
    wait(driver, "return window.jupyterapp && document.querySelector('.jp-Notebook')",
         what="the notebook to open")
    run = ("const r = await app.commands.execute('notebook:run-all-cells'); done(r);"
           if wait_for_cells else "app.commands.execute('notebook:run-all-cells'); done(true);")
    ok = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "(async () => { const app = window.jupyterapp; await app.restored;"
        " const panel = app.shell.currentWidget; await panel.sessionContext.ready;"
        f" {run} }})().catch(e => done('error: ' + e));")
    assert ok is True, ok


def stop_session(driver: Any) -> None:
    """Ask the kernel to stop the notebook's ``session`` (so no tuning outlives the test)."""
    driver.execute_script(
        "const app = window.jupyterapp; if (app && app.shell.currentWidget &&"
        " app.shell.currentWidget.sessionContext) {"
        " app.shell.currentWidget.sessionContext.session?.kernel?.requestExecute("
        "{code: 'session.stop(); session.wait(60)'}); }")
    time.sleep(2)


@contextmanager
def lab_notebook(tmp_path: Path, name: str, cells: list[str], artifacts: Path,
                 failure_shot: str, *, wait_for_cells: bool = True,
                 stop: bool = False) -> Iterator[Any]:
    """JupyterLab + Chromium on a new notebook ``name`` (in ``tmp_path/lab``) with ``cells``,
    all cells run; yields the driver, saving ``artifacts/failure_shot`` if the body fails.
    ``wait_for_cells=False`` starts the cells and yields at once (for cells that take longer
    than the driver's 120 s read timeout: poll the page for what they show). ``stop=True``
    stops the notebook's ``session`` at the end, whatever happened."""
    from tests.browser.chromium import chromium

    root = tmp_path / "lab"
    root.mkdir(exist_ok=True)
    write_notebook(root, name, cells)
    artifacts.mkdir(exist_ok=True)
    with jupyterlab(root) as url, chromium(offline=True) as driver:
        try:
            run_all_cells(driver, url, name, wait_for_cells=wait_for_cells)
            yield driver
        except BaseException:
            driver.save_screenshot(str(artifacts / failure_shot))
            raise
        finally:
            if stop:
                stop_session(driver)
