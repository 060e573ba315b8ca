"""``msviz compare``: the summary table of work dirs, from a terminal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import msviz
from msviz.cli import main


def test_compare_prints_the_summary(stock_work_dirs: dict[str, Path],
                                    capsys: pytest.CaptureFixture[str]) -> None:
    gmm = stock_work_dirs["GMM"]
    assert main(["compare", str(gmm), str(gmm)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Best latency so far, the first run as the baseline:"
    header = lines[1].split()
    assert header[:5] == ["Tasks", "Trials", "Failed", "Best", "(us)"]
    best = np.nanmin(msviz.open(gmm).trials["latency_us"])
    rows = [line.split() for line in lines[3:]]
    assert rows[0][:5] == ["GMM", "1", "12", "4", f"{best:.4g}"]
    assert rows[0][5] == "1" and rows[1][:2] == ["GMM", "(2)"]
