"""Binder files: the same pins as the package, and the widget front ends JupyterLab needs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pins(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        match = re.match(r"^\s*([A-Za-z0-9_.-]+)\s*==\s*([^\s#;]+)", line)
        if match:
            out[match.group(1).lower()] = match.group(2)
    return out


def test_binder_pins_match_pyproject() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    dependencies = pyproject.split("dependencies = [", 1)[1].split("]", 1)[0]
    quoted = [line.strip().strip('",') for line in dependencies.splitlines()]
    binder = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    assert _pins(quoted) == _pins(binder)
    assert {"apache-tvm", "apache-tvm-ffi"} <= set(_pins(binder))
    assert any(line.strip() == "xgboost-cpu" for line in binder)
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    post = (ROOT / "binder" / "postBuild").read_text()
    assert post.startswith("#!/bin/bash") and "pip install --no-deps -e ." in post


def test_widget_lab_extensions_are_installed() -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        capture_output=True, text=True, check=True,
    )
    text = listing.stdout + listing.stderr
    for name in ("@jupyter-widgets/jupyterlab-manager", "anywidget", "jupyterlab-plotly"):
        assert name in text, name
