"""The shape-cover view as a widget: its state from a cover written to disk (opened by its
work root and given as a ShapeCover), and following a real (tiny) live ShapeTuning through
the UI adapter on an asyncio loop, redrawn when the cover is written."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import msviz
from msviz.records.shape_cover import COVER_FILE
from msviz.widgets.shapes_view import ShapesView
from tests.views.test_view_shapes import LABELS, cover

TINY = dict(population_size=16, init_min_unmeasured=8, genetic_num_iters=1,
            cost_model_task_warmup=0,
            evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})


def _written(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / COVER_FILE).write_text(json.dumps(cover().to_dict()))
    return root


def test_view_of_a_work_root(tmp_path: Path) -> None:
    root = _written(tmp_path)
    view = msviz.shapes_view(root)
    assert isinstance(view, ShapesView) and "msviz-shapes" in view._dom_classes
    assert view.error.text == ""
    assert view.cover is not None and view.cover.root == str(root)
    assert "tuned 2 of 4 shapes (M=1, M=8)" in view.summary.value
    assert view.progress.value == ""  # a finished cover: no live progress line
    assert view.heatmap_box.layout.display is None and view.bars_box.layout.display is None
    (heat,) = view.heatmap.data
    assert list(heat.x) == LABELS and list(heat.y) == ["M=1", "M=8"]
    assert [list(r) for r in heat.z] == [[1.0, 2.0, 2.5, None], [1.5, 1.0, 1.0, None]]
    assert view.heatmap.layout.yaxis.title.text == "tuned at"
    assert [len(t.x) for t in view.bars.data] == [3, 2]
    assert view.table.value.count("msviz-shapes-row") == 4
    assert "msviz-shapes-summary" not in view.table.value  # the summary is shown once
    # the same cover as an object
    again = ShapesView(msviz.open_shapes(root))
    assert [list(r) for r in again.heatmap.data[0].z] == [list(r) for r in heat.z]
    again.close()
    view.close()


def test_view_refuses_other_sources(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="ShapeCover"):
        ShapesView(42)
    with pytest.raises(msviz.WorkDirError, match=r"shapes\.json"):
        ShapesView(tmp_path)


def test_view_follows_a_live_tuning(tmp_path: Path) -> None:
    fam = msviz.shapes("GMM", dim="M", sizes=[16, 64])
    tuning = msviz.tune_shapes(fam, work_dir=tmp_path / "cover", trials=8, k=1, **TINY)
    seen: list[tuple[str, int]] = []

    async def follow() -> ShapesView:
        view = ShapesView(tuning)  # the running loop: the adapter posts its redraws here
        # no cover yet: the table's line says so, no figures of notes
        assert not view.heatmap.data and "no shape cover yet" in view.table.value
        assert view.heatmap_box.layout.display == view.bars_box.layout.display == "none"
        view.adapter.add_handler(lambda events: seen.append(
            (events[-1]["kind"], len(view.heatmap.data))))
        tuning.start()
        while tuning.state == "running":
            await asyncio.sleep(0.2)
        # the last batch of events reaches the loop a little later: wait for it, on any host
        for _ in range(600):
            if seen and seen[-1][0] == "finished":
                break
            await asyncio.sleep(0.1)
        return view

    view = asyncio.run(asyncio.wait_for(follow(), 600))
    assert tuning.state == "finished", tuning.error
    assert view.adapter.errors == []
    # delivered in batches on the loop; after the last one the view had drawn the cover
    assert seen and seen[-1] == ("finished", 1), seen
    assert any(e["kind"] == "crossed" for e in tuning.events)
    assert view.redraws >= 2
    assert view.cover is tuning.cover
    assert view.error.text == ""
    assert "finished" in view.progress.value and "tuned M=" in view.progress.value
    (heat,) = view.heatmap.data
    chosen = tuning.cover.chosen
    assert len(chosen) == 1 and list(heat.y) == chosen and list(heat.x) == ["M=16", "M=64"]
    own = list(heat.x).index(chosen[0])
    assert heat.z[0][own] == pytest.approx(1.0)
    assert "1 of 2 shapes" in view.summary.value
    assert view.table.value.count("msviz-shapes-row") == 2
    assert view.heatmap_box.layout.display is None and view.bars_box.layout.display is None
    view.close()


def test_view_of_a_cover_with_nothing_tuned() -> None:
    empty = cover()
    empty.tuned, empty.cells, empty.dispatch = [], [], []
    view = ShapesView(empty)
    assert "nothing tuned yet (0 of 4 shapes)" in view.summary.value
    # the heat map says why it is empty; no second note in the bars
    assert not view.heatmap.data and view.heatmap_box.layout.display is None
    assert "nothing tuned (stopped)" in view.heatmap.layout.annotations[0].text
    assert view.bars_box.layout.display == "none"
    assert view.table.value.count("msviz-shapes-row") == 4
    view.close()
