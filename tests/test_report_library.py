"""The report's Library coverage section: present (summary, table, figure, the trials that
came from the library) for a work dir whose sidecar holds a coverage, absent without one."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from msviz.report import render_report
from msviz.views.coverage import coverage_info
from tests.library_data import CARRIED, COVERAGE, library_work_dir


@pytest.fixture(scope="module")
def library_dir(stock_model_work_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    dst = tmp_path_factory.mktemp("library_report") / "mlp"
    library_work_dir(stock_model_work_dir, dst)
    return dst


def test_report_has_a_library_section(library_dir: Path) -> None:
    text = render_report(library_dir)
    start = text.index('<h2 id="library">Library coverage</h2>')
    section = text[start:text.index("<h2>Task ", start)]
    assert html.escape(coverage_info(COVERAGE).summary) in section
    assert section.count("msviz-library-row") == 4
    assert "old_run: database_tuning_record.json line 3 cannot be read" in section
    assert "plotly-graph-div" in section and '"title":{"text":"Library coverage"}' in section
    assert ("<p class=\"msviz-library-trials\">3 trials from the library: 1 exact, 1 anchor, "
            "1 sibling</p>") in section
    for _, source, _ in CARRIED.values():
        assert source in section
    assert ("carried from resnet18/fused_dense_add trial 7, decisions #3 and #7 adjusted"
            in section)
    assert text.count("plotly.js v") == 1  # inlined once, by the model section before it
    assert text.index('<h2 id="model">') < start


def test_no_library_section_without_a_coverage(stock_model_work_dir: Path) -> None:
    assert 'id="library"' not in render_report(stock_model_work_dir)
