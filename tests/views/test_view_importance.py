"""Decision importance's info (from hand-made decisions) and its figure."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from msviz.analysis.restriction import RuleChange
from msviz.errors import MsvizWarning
from msviz.views import importance as I


def test_importance_info_whole(same) -> None:
    frame = pd.DataFrame({
        "trial": [0, 1, 2, 3, 4, 5],
        "latency_us": [10.0, 20.0, 30.0, 40.0, 50.0, 60.0],
        "#1 SamplePerfectTile": ["[2, 4]", "[2, 4]", "[8, 1]", "[8, 1]", "[8, 1]", "[8, 1]"],
        "#3 SampleCategorical": ["16"] * 6,
        "#5 SampleComputeLocation": ["-1", "0", "-1", "0", "-1", "0"],
    })
    expected = I.ImportanceInfo("PED-ANOVA", "GMM-0", 6, 2, 0.2, 20.0, (
        I.SiteImportance("#1 SamplePerfectTile", 1.0, (("[2, 4]", 2),), 2),
        I.SiteImportance("#3 SampleCategorical", 0.0, (("16", 2),), 1),
        I.SiteImportance("#5 SampleComputeLocation", 0.0, (("-1", 1), ("0", 1)), 2),
    ))
    assert same(I.importance_info(frame, task="GMM-0", quantile=0.2, min_top=2), expected)
    fig = I.importance_figure(expected)
    assert list(fig.data[0].y) == ["#5 SampleComputeLocation", "#3 SampleCategorical",
                                   "#1 SamplePerfectTile"]
    assert list(fig.data[0].x) == [0.0, 0.0, 1.0]
    assert fig.layout.title.text == ("Decision importance · GMM-0<br>"
                                     "<sup>PED-ANOVA, top 2 of 6 trials</sup>")
    assert not fig.layout.annotations
    # every trial a winner: the bars are equal shares, and the figure says why
    few = I.importance_figure(expected._replace(trials=2))
    assert few.layout.annotations[0].text == (
        "all 2 trials of this design space count as winners: too few to tell sites apart")
    assert few.layout.yaxis.visible is not False  # the site names stay on the bars


def test_importance_info_empty(same) -> None:
    with pytest.warns(MsvizWarning, match="no successful trial"):
        info = I.importance_info(pd.DataFrame({"trial": [], "latency_us": []}))
    assert same(info, I.ImportanceInfo("PED-ANOVA", "", 0, 0, 0.1, math.nan, ()))
    fig = I.importance_figure(info)  # still draws its title and a note
    assert fig.layout.title.text == "Decision importance<br><sup>PED-ANOVA</sup>"
    assert "no successful trial" in fig.layout.annotations[0].text


def test_importance_text_and_html() -> None:
    info = I.ImportanceInfo("PED-ANOVA", "GMM-0", 6, 2, 0.2, 20.0, (
        I.SiteImportance("#1 SamplePerfectTile", 1.0, (("[2, 4]", 2),), 2),
        I.SiteImportance("#5 SampleComputeLocation", 0.0, (("-1", 1), ("0", 1)), 2),
    ))
    change = RuleChange("RandomComputeLocation", "", None, None, "winners at the root")
    assert I.importance_text(info, [change]) == (
        "GMM-0: PED-ANOVA over 6 trials of its best design space, winners the fastest 2 "
        "(up to 20 µs)\n"
        "   1.00  #1 SamplePerfectTile      winners chose [2, 4] (2)\n"
        "   0.00  #5 SampleComputeLocation  winners chose -1 (1), 0 (1)\n"
        "  proposed: remove RandomComputeLocation: winners at the root")
    few = info._replace(trials=2)
    assert I.importance_text(few).splitlines()[-2:] == [
        "  (all 2 trials of this design space count as winners: too few to tell sites apart)",
        "  proposed: nothing to restrict"]
    assert I.importance_text(info._replace(sites=())) == (
        "GMM-0: no successful trial with decisions")
    page = I.importance_html(info, [change])
    assert "<li>remove RandomComputeLocation: winners at the root</li>" in page
    assert page.count("<tr>") == 3 and "<td>1.000</td>" in page and "-1 (1), 0 (1)" in page
    assert "Nothing to restrict" in I.importance_html(info)
