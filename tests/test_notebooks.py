"""Every tutorial notebook runs top to bottom: no cell error, no traceback printed anywhere
(an exception in a worker thread does not fail its cell, so streams are checked too)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_notebooks_are_stored_without_outputs() -> None:
    assert len(NOTEBOOKS) == 12
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the kernel times a model's end-to-end check in one fresh process, not 3: the tutorials
    # run every step the same; what several draws make of their timings is tested on its own
    # (tests/engine/test_model.py, tests/records/test_model_profile.py)
    monkeypatch.setenv("MSVIZ_DRAWS", "1")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.output_type == "stream" else ""
            assert out.output_type != "error", f"{path.name} cell {index}: {out.get('evalue')}"
            assert "Traceback" not in text, f"{path.name} cell {index} printed:\n{text}"
    shown = widget_errors(nb)
    assert not shown, f"{path.name}: a widget shows an error: {shown}"
    print(f"{path.name}: {elapsed:.1f} s")


def widget_errors(nb: nbformat.NotebookNode) -> list[str]:
    """Texts of msviz error areas (``[View] message``) and red progress bars in the widget state
    the kernel left: an error a widget shows is not a cell error, so nbclient cannot see it."""
    states = nb.metadata.get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    found = []
    for model in states.values():
        state = model.get("state", {})
        value = state.get("value")
        if isinstance(value, str) and "msviz-error" in value:
            found.append(re.sub(r"<[^>]+>", "", value))
        if model.get("model_name") == "IntProgressModel" and state.get("bar_style") == "danger":
            found.append(f"progress bar turned red ({state.get('description', '')})")
    return found


def test_an_error_a_widget_shows_is_seen(tmp_path: Path) -> None:
    """The check above can fail: a notebook whose cell shows an error area, and no cell error."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from msviz.widgets.common import ErrorArea\n"
        "area = ErrorArea()\n"
        "area.show(area, 'the trace no longer replays')\n"
        "area")])
    NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert all(o.output_type != "error" for o in nb.cells[0].outputs)
    assert widget_errors(nb) == ["[ErrorArea] the trace no longer replays"]
