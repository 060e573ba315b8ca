"""JupyterLab servers on 127.0.0.1 with a token, in their own process group, and what the
browser tests do with one: open a notebook in Chromium, run its cells, shut its kernel down.

The browser tests share one :class:`LabServer` (``tests/browser/conftest.py``); each test gets
its own folder under the server's root, its own notebook, kernel, workspace and browser."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class LabServer:
    """A JupyterLab server serving ``root``, its Jupyter dirs (config, runtime, settings, its
    log ``server.log``) fresh in ``home``; :meth:`start` starts it, :meth:`stop` stops it and
    every kernel it started."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root, self.home = Path(root), Path(home)
        self.token = secrets.token_hex(16)
        self.base = ""
        self.proc: subprocess.Popen | None = None
        self._log: Any = None

    @property
    def url(self) -> str:
        """The lab URL with its token."""
        return f"{self.base}/lab?token={self.token}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        for name, sub in (("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_CONFIG_DIR", "config"),
                          ("JUPYTER_DATA_DIR", "data"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                          ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
                          ("IPYTHONDIR", "ipython")):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
            env[name] = str(self.home / sub)
        env["JUPYTER_PLATFORM_DIRS"] = "1"
        # keep the data dir of the venv (lab extensions) visible next to the fresh one
        env["JUPYTER_PATH"] = str(Path(sys.prefix) / "share" / "jupyter")
        notify = self.home / "settings" / "@jupyterlab" / "apputils-extension"
        notify.mkdir(parents=True, exist_ok=True)
        (notify / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        return env

    def _server_log(self, tail: int = 2000) -> str:
        return (self.home / "server.log").read_text()[-tail:]

    def start(self) -> LabServer:
        """Start the server and wait until it answers (fails after 300 s)."""
        env = self._env()
        self._log = open(self.home / "server.log", "a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", "--port=0",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
             f"--ServerApp.root_dir={self.root}", "--LabApp.expose_app_in_browser=True",
             "--LabApp.news_url=None",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--allow-root"],
            env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            self._wait_until_up(self.proc)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_up(self, proc: subprocess.Popen) -> None:
        port = None
        # generous: a loaded host may take minutes to start JupyterLab (a fast one: seconds)
        deadline = time.time() + 300
        while time.time() < deadline and port is None:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter-lab exited: {self._server_log(20000)}")
            for info in (self.home / "runtime").glob(f"jpserver-{proc.pid}.json"):
                port = json.loads(info.read_text()).get("port")
            time.sleep(0.3)
        if port is None:
            raise RuntimeError("jupyter-lab did not write its server info in 300 s")
        self.base = f"http://127.0.0.1:{port}"
        while True:
            try:
                urllib.request.urlopen(f"{self.base}/api/status?token={self.token}",
                                       timeout=10)
                return
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError(f"jupyter-lab at {self.base} did not answer in 300 s: "
                                       f"{self._server_log()}") from None
                time.sleep(0.3)

    def ensure(self) -> LabServer:
        """Start the server again if it exited (so one crash fails one test, not the rest)."""
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            self.start()
        return self

    def stop(self) -> None:
        """SIGTERM (the server shuts its kernels down), then SIGKILL to its process group."""
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # what it left in its group
            except ProcessLookupError:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None

    def api(self, method: str, path: str, timeout: float = 60) -> Any:
        """Call the server's REST API (``path`` under ``/api/``); the decoded JSON or None."""
        request = urllib.request.Request(f"{self.base}/api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def notebook_url(self, path: Path, workspace: str) -> str:
        """The URL that opens notebook ``path`` (under the root) in a workspace of its own:
        nothing another test left open in the default workspace is restored beside it."""
        relative = urllib.parse.quote(path.relative_to(self.root).as_posix())
        return (f"{self.base}/lab/workspaces/{workspace}/tree/{relative}"
                f"?token={self.token}")

    def shut_down(self, folder: Path) -> None:
        """Shut down the kernels of the notebooks under ``folder`` (and delete their
        sessions); the server stays up for the next test."""
        if self.proc is None or self.proc.poll() is not None:
            return
        prefix = folder.relative_to(self.root).as_posix() + "/"
        try:
            for session in self.api("GET", "sessions"):
                if session.get("path", "").startswith(prefix):
                    self.api("DELETE", f"sessions/{session['id']}")
        except OSError:  # best effort: stop() shuts down every kernel at the session's end
            pass


@contextmanager
def jupyterlab(root: Path) -> Iterator[str]:
    """Start a JupyterLab of its own serving ``root``; yields the lab URL with its token
    (the benchmarks use it; the tests share one, see ``tests/browser/conftest.py``)."""
    server = LabServer(root, root.parent / f"{root.name}-jupyter").start()
    try:
        yield server.url
    finally:
        server.stop()


def workspace_name(folder: Path) -> str:
    """A JupyterLab workspace name (letters, digits, ``-``, ``_``) for a test's ``folder``."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", f"{folder.parent.name}-{folder.name}")


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
    open_and_run(driver, url.replace("/lab?", f"/lab/tree/{name}?"),
                 wait_for_cells=wait_for_cells)


def open_and_run(driver: Any, notebook_url: str, *, wait_for_cells: bool = True) -> None:
    """Open the notebook at ``notebook_url`` and run all its cells (fails on an error); with
    ``wait_for_cells=False`` only start them."""
    driver.set_script_timeout(180)
    driver.get(notebook_url)
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
def lab_notebook(server: LabServer, tmp_path: Path, name: str, cells: list[str],
                 artifacts: Path, failure_shot: str, *, wait_for_cells: bool = True,
                 stop: bool = False) -> Iterator[Any]:
    """Chromium on a new notebook ``name`` (in ``tmp_path/lab``, under the shared ``server``'s
    root) with ``cells``, all cells run in a kernel of its own; yields the driver, saving
    ``artifacts/failure_shot`` if the body fails. ``wait_for_cells=False`` starts the cells and
    yields at once (for cells that take longer than the driver's 120 s read timeout: poll the
    page for what they show). ``stop=True`` stops the notebook's ``session`` at the end,
    whatever happened. The notebook's kernel is shut down at the end; the server stays up."""
    from tests.browser.chromium import chromium

    root = tmp_path / "lab"
    root.mkdir(exist_ok=True)
    path = write_notebook(root, name, cells)
    artifacts.mkdir(exist_ok=True)
    server.ensure()
    try:
        with chromium(offline=True) as driver:
            try:
                open_and_run(driver, server.notebook_url(path, workspace_name(tmp_path)),
                             wait_for_cells=wait_for_cells)
                yield driver
            except BaseException:
                driver.save_screenshot(str(artifacts / failure_shot))
                raise
            finally:
                if stop:
                    stop_session(driver)
    finally:
        server.shut_down(root)
