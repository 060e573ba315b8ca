#!/usr/bin/env bash
# Set up msviz on a fresh machine: Debian Chromium (browser tests), a venv in .venv, the package
# with its dev extras. Safe to run again: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    echo "setup: installing Debian chromium + chromium-driver (browser tests)"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
  else
    echo "setup: no apt-get; browser tests need chromium and chromedriver on PATH" >&2
  fi
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
stamp=".venv/.msviz-setup-$(sha1sum pyproject.toml | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing msviz and its dependencies into .venv (a few minutes the first time)"
  .venv/bin/python -m pip install -q -U pip 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -m pip install -q -e ".[dev,onnx,compare,ray,parquet]" 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import msviz, tvm, xgboost, plotly, ipywidgets, anywidget, ray, pyarrow, onnxruntime"
  rm -f .venv/.msviz-setup-*
  touch "$stamp"
fi
echo "setup: ready (.venv/bin/msviz)"
