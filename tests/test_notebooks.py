"""Every tutorial notebook runs top to bottom: no cell error, no traceback printed anywhere
(an exception in a worker thread does not fail its cell, so streams are checked too)."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_notebooks_are_stored_without_outputs() -> None:
    assert len(NOTEBOOKS) == 6
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.output_type == "stream" else ""
            assert out.output_type != "error", f"{path.name} cell {index}: {out.get('evalue')}"
            assert "Traceback" not in text, f"{path.name} cell {index} printed:\n{text}"
    print(f"{path.name}: {elapsed:.1f} s")
