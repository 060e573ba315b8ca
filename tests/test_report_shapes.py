"""The HTML report of a shape cover: written by ``write_shapes_report`` and by ``msviz report
ROOT`` when ROOT holds shapes.json (self-contained, the heat map's cells, the dispatch table, the
tuned shapes and why), and the output checks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import msviz
from msviz.cli import main
from msviz.records.shape_cover import COVER_FILE
from msviz.report import render_shapes_report, write_shapes_report
from tests.views.test_view_shapes import EXTENT, SPLIT, cover


@pytest.fixture
def root(tmp_path: Path) -> Path:
    where = tmp_path / "root"
    where.mkdir()
    (where / COVER_FILE).write_text(json.dumps(cover().to_dict()))
    return where


def _figures(text: str) -> list[dict]:
    """The plotly figures' JSON of a report (``Plotly.newPlot(id, data, layout, ...)``)."""
    found = re.findall(r'Plotly\.newPlot\(\s*"[^"]+",\s*(\[.*?\]),\s*(\{.*?\}),\s*\{"responsive"',
                       text, flags=re.S)
    return [{"data": json.loads(d), "layout": json.loads(lay)} for d, lay in found]


def test_cli_report_of_a_work_root(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(root)]) == 0
    out = root / "report.html"
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    text = out.read_text()
    assert text.count("plotly.js v") == 1 and not re.search(r"<script[^>]+src=", text)
    assert "msviz shapes report: GMM over M" in text
    assert "tuned 2 of 4 shapes (M=1, M=8)" in text and "target llvm" in text
    heat, bars = _figures(text)
    assert heat["data"][0]["type"] == "heatmap"
    assert heat["data"][0]["z"] == [[1.0, 2.0, 2.5, None], [1.5, 1.0, 1.0, None]]
    assert heat["layout"]["title"]["text"].startswith("Weighted regret 1.00x")
    assert [len(t["x"]) for t in bars["data"]] == [3, 2]
    # the failed carry's reason is in the page (hover of the gap), the dispatch as text
    assert SPLIT in text and EXTENT in text
    assert "M=8 .. M=64                  -&gt; schedules tuned at M=8" in text
    tuned = text[text.index('<h2 id="tuned">'):]
    assert tuned.index("the family&#x27;s weighted middle") < tuned.index("the largest weighted")
    # a second time: refused unless forced
    assert main(["report", str(root)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["report", str(root), "--force", "-o", str(root / "again.html")]) == 0


def test_write_shapes_report(root: Path, tmp_path: Path) -> None:
    out = write_shapes_report(msviz.open_shapes(root), tmp_path / "sub" / "cover.html")
    assert out == tmp_path / "sub" / "cover.html" and "Cover" in out.read_text()
    with pytest.raises(msviz.WriteError, match="exists"):
        write_shapes_report(root, out)
    assert write_shapes_report(root, out, overwrite=True) == out
    assert write_shapes_report(root) == root / "report.html"
    with pytest.raises(msviz.WriteError, match="no work root"):
        write_shapes_report(cover())  # built by hand: no root to default to


def test_report_of_an_empty_cover(tmp_path: Path) -> None:
    empty = cover()
    empty.tuned, empty.cells, empty.dispatch = [], [], []
    empty.target = "llvm -keys=cpu"  # TVM 0.27 no longer reads it: shown as written
    text = render_shapes_report(empty, title="nothing yet")
    assert "target llvm -keys=cpu, 8 trials" in text
    assert "<h1>nothing yet</h1>" in text
    assert "nothing tuned yet (0 of 4 shapes)" in text
    assert "nothing tuned (stopped)" in text  # the figures' notes, not empty axes
    assert "GMM over M: nothing dispatched yet" in text and 'id="tuned"' not in text
