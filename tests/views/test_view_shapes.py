"""The shape-cover view: the whole info of a hand-built cover (two tuned shapes of four, a carry
that failed, a cell never measured, an untuned shape with an estimated regret) against a
hand-written one, its heat map (z = hand-computed ratios), bars, dispatch text and HTML, and
the notes of an empty cover."""

from __future__ import annotations

import math

from msviz.records.shape_cover import Cell, Dispatch, ShapeCover, TunedShape
from msviz.views.shapes import (
    HeatCell,
    ShapeCoverInfo,
    ShapeRow,
    coverage_bars,
    dispatch_text,
    ratio_text,
    regret_heatmap,
    shape_cover_html,
    shape_cover_info,
    shape_progress_text,
    shape_warnings,
)

LABELS = ["M=1", "M=8", "M=64", "M=512"]
WEIGHTS = [0.4, 0.3, 0.2, 0.1]
SPLIT = "ScheduleError: cannot split loop"
EXTENT = "InternalError: loop extent"
TARGET = '{"kind":"llvm","tag":"","keys":["cpu"],"num-cores":2}'


def family() -> dict:
    return {"name": "GMM", "dim": "M", "kind": "workload",
            "shapes": [{"label": lab, "size": int(lab[2:]), "weight": w, "params": []}
                       for lab, w in zip(LABELS, WEIGHTS, strict=True)]}


def cover() -> ShapeCover:
    """M=1 then M=8 tuned; M=1's carries to M=512 all failed; M=8's never reached M=512 (the
    tuning stopped); M=64 untuned with an estimated regret, M=512 with nothing run."""
    cells = [Cell("M=1", "M=1", 10.0, 8), Cell("M=8", "M=1", 15.0, 2),
             Cell("M=1", "M=8", 40.0, 2), Cell("M=8", "M=8", 20.0, 8),
             Cell("M=1", "M=64", 300.0, 2), Cell("M=8", "M=64", 120.0, 1, 1, EXTENT),
             Cell("M=1", "M=512", None, 0, 2, SPLIT)]
    dispatch = [Dispatch("M=1", "M=1", 10.0, 10.0, 1.0, None, {"M=1": 1}),
                Dispatch("M=8", "M=8", 20.0, 20.0, 1.0, None, {"M=8": 1}),
                Dispatch("M=64", "M=8", 120.0, None, None, 1.5, {"M=8": 1}),
                Dispatch("M=512", None, None)]
    tuned = [TunedShape("M=8", 1, "the largest weighted estimated regret (3.10x)", 12.0, 8),
             TunedShape("M=1", 0, "the family's weighted middle (by log size)", 10.0, 8)]
    return ShapeCover(family(), TARGET, 8, None, tuned, cells, dispatch, 8.0, 50.0,
                      "dispatch", state="stopped")


def test_shape_cover_info_whole(same) -> None:
    estimated = math.exp(0.2 * math.log(1.5) / 0.9)  # weights .4, .3, .2 on 1, 1, 1.5
    expected = ShapeCoverInfo(
        family="GMM", dim="M", state="stopped",
        summary="GMM over M: tuned 2 of 4 shapes (M=1, M=8); weighted regret 1.00x on the "
                "tuned shapes, 1.09x estimated over all; 50.0 s in all, 8.0 s of it "
                "cross-measuring (stopped)",
        labels=tuple(LABELS), chosen=("M=1", "M=8"),
        rows=(ShapeRow("M=1", 0.4, True, "M=1", 10.0, 10.0, 1.0, None),
              ShapeRow("M=8", 0.3, True, "M=8", 20.0, 20.0, 1.0, None),
              ShapeRow("M=64", 0.2, False, "M=8", 120.0, None, None, 1.5),
              ShapeRow("M=512", 0.1, False, None, None, None, None, None)),
        cells=(
            (HeatCell("M=1", "M=1", 10.0, 1.0, 8, 0, ""),
             HeatCell("M=1", "M=8", 40.0, 2.0, 2, 0, ""),
             HeatCell("M=1", "M=64", 300.0, 2.5, 2, 0, ""),
             HeatCell("M=1", "M=512", None, None, 0, 2,
                      f"nothing ran: 2 carries failed ({SPLIT})")),
            (HeatCell("M=8", "M=1", 15.0, 1.5, 2, 0, ""),
             HeatCell("M=8", "M=8", 20.0, 1.0, 8, 0, ""),
             HeatCell("M=8", "M=64", 120.0, 1.0, 1, 1, f"1 carry of 2 failed ({EXTENT})"),
             HeatCell("M=8", "M=512", None, None, 0, 0,
                      "not measured: no schedule was carried here (the tuning stopped "
                      "first)"))),
        regret_known=1.0, regret_estimated=estimated, seconds=50.0, cross_seconds=8.0,
        ranges=(("M=1", "M=1", "M=1"), ("M=8", "M=64", "M=8"),
                ("M=512", "M=512", "nothing")))
    assert same(shape_cover_info(cover()), expected)


def test_ratio_text() -> None:
    assert [ratio_text(r) for r in (None, 1.0, 1.004, 0.997, 0.97, 2.366, 23.29, 150.2)] == \
        ["", "1.00", "1.00", "1.00", "0.97x", "2.37x", "23.3x", "150x"]


def test_regret_heatmap_cells() -> None:
    info = shape_cover_info(cover())
    fig = regret_heatmap(info)
    (heat,) = fig.data
    assert heat.type == "heatmap"
    assert list(heat.x) == LABELS and list(heat.y) == ["M=1", "M=8"]
    assert [list(row) for row in heat.z] == [[10 / 10, 40 / 20, 300 / 120, None],
                                             [15 / 10, 20 / 20, 120 / 120, None]]
    assert [list(row) for row in heat.text] == [["1.00", "2.00x", "2.50x", ""],
                                                ["1.50x", "1.00", "1.00", ""]]
    assert "300 µs, 2.50x the best known" in heat.customdata[0][2]
    assert EXTENT in heat.customdata[1][2]
    assert fig.layout.xaxis.title.text == "run at (M)"
    assert fig.layout.yaxis.title.text == "tuned at"
    assert fig.layout.title.text == ("Weighted regret 1.00x on the tuned shapes, 1.09x "
                                     "estimated over all")
    gaps = {(a.x, a.y): (a.text, a.hovertext) for a in fig.layout.annotations if a.x != 0}
    assert gaps == {("M=512", "M=1"): ("failed", f"nothing ran: 2 carries failed ({SPLIT})"),
                    ("M=512", "M=8"): ("not run", "not measured: no schedule was carried "
                                       "here (the tuning stopped first)")}
    # the tuned shapes' own cells outlined, their columns in bold
    assert [(s.x0, s.y0) for s in fig.layout.shapes] == [(-0.5, -0.5), (0.5, 0.5)]
    assert list(fig.layout.xaxis.ticktext) == ["<b>M=1</b>", "<b>M=8</b>", "M=64", "M=512"]


def test_coverage_bars() -> None:
    fig = coverage_bars(shape_cover_info(cover()))
    dispatched, own = fig.data
    assert list(dispatched.x) == ["M=1", "M=8", "M=64"]  # nothing ran on M=512
    assert list(dispatched.y) == [10.0, 20.0, 120.0]
    assert list(own.x) == ["M=1", "M=8"] and list(own.y) == [10.0, 20.0]
    assert "weight 0.2; schedules tuned at M=8; estimated regret 1.50x" in \
        dispatched.customdata[2]
    assert fig.layout.yaxis.type == "log"
    assert any("not tuned (no own bar): M=64, M=512" in a.text for a in fig.layout.annotations)


def test_dispatch_text_and_html() -> None:
    info = shape_cover_info(cover())
    assert dispatch_text(info) == (
        "GMM over M: 3 ranges\n"
        "  M=1                          -> schedules tuned at M=1\n"
        "  M=8 .. M=64                  -> schedules tuned at M=8\n"
        "  M=512                        -> nothing ran here")
    text = shape_cover_html(info)
    assert "msviz-shapes-summary" in text and info.summary in text
    assert text.count("<tr class='msviz-shapes-row'>") == 4
    assert "~1.50x (estimated)" in text and "<i>nothing ran here</i>" in text
    assert "msviz-shapes-summary" not in shape_cover_html(info, summary=False)


def test_empty_cover_draws_notes(same) -> None:
    empty = ShapeCover(family(), "llvm", 8, 1.05, [], [], [], 0.0, 1.5, None, state="stopped")
    info = shape_cover_info(empty)
    assert info.chosen == () and info.cells == () and info.ranges == ()
    assert info.summary == ("GMM over M: nothing tuned yet (0 of 4 shapes); 1.5 s in all, "
                            "0.0 s of it cross-measuring (stopped)")
    for fig in (regret_heatmap(info), coverage_bars(info)):
        assert not fig.data
        assert [a.text for a in fig.layout.annotations] == [
            "nothing tuned (stopped): no shape's schedules to carry to the 4 shapes"]
    assert dispatch_text(info) == "GMM over M: nothing dispatched yet"
    for fig in (regret_heatmap(None), coverage_bars(None)):
        assert not fig.data and "no shape cover yet" in fig.layout.annotations[0].text
    assert "no shape cover yet" in shape_cover_html(None)


def test_progress_text() -> None:
    events = [{"kind": "picked", "shape": "M=8", "why": "middle"},
              {"kind": "tuned", "shape": "M=8", "seconds": 12.04, "trials": 8},
              {"kind": "crossed", "source": "M=8", "shape": "M=1"},
              {"kind": "warning", "message": "8 trials are fewer than a first batch"},
              {"kind": "picked", "shape": "M=1", "why": "regret"}]
    assert shape_progress_text(events) == ("tuned M=8 (8 trials, 12.0 s); tuning M=1; "
                                           "1 shape cross-measured; running")
    events += [{"kind": "finished", "state": "stopped"}]
    assert shape_progress_text(events) == ("tuned M=8 (8 trials, 12.0 s); 1 shape "
                                           "cross-measured; stopped")
    assert shape_progress_text([]) == "nothing tuned yet; running"
    assert shape_warnings(events) == ["8 trials are fewer than a first batch"]
