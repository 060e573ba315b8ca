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
        deadline = time.time() + 90
        while time.time() < deadline and port is None:
            if proc.poll() is not None:
                raise RuntimeError(f"jupyter-lab exited: {(home / 'server.log').read_text()}")
            for info in (home / "runtime").glob(f"jpserver-{proc.pid}.json"):
                port = json.loads(info.read_text()).get("port")
            time.sleep(0.3)
        if port is None:
            raise RuntimeError("jupyter-lab did not write its server info in 90 s")
        base = f"http://127.0.0.1:{port}"
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
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
