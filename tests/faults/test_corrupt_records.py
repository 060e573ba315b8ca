"""Corrupt records never become numbers: run_secs that are not positive finite times, NUL
bytes, an empty workload file. Each is skipped with a warning naming the file and line."""

from __future__ import annotations

import json
import math
import shutil
import warnings
from pathlib import Path

import pytest

import msviz
from msviz.records.database import RECORD_FILE, WORKLOAD_FILE


def _with_run_secs(line: str, secs: str) -> str:
    """A stock record line with its run_secs text replaced (the rest kept byte for byte)."""
    target_end = line.rfind("},[[")
    target_start = line.rfind(",{", 0, target_end)
    secs_start = line.rindex("[", 0, target_start)
    return line[:secs_start] + secs + line[target_start:]


def _open(work_dir: Path) -> tuple[msviz.Run, list[str]]:
    """The run and the warnings opening it gave (each an MsvizWarning)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = msviz.open(work_dir)
    assert all(isinstance(w.message, msviz.MsvizWarning) for w in caught), caught
    return run, [str(w.message) for w in caught]


@pytest.fixture
def gmm(stock_work_dirs: dict[str, Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(stock_work_dirs["GMM"], tmp_path / "gmm"))


def test_bad_run_secs_and_nul_lines_are_skipped(gmm: Path) -> None:
    path = gmm / RECORD_FILE
    lines = path.read_text().splitlines()
    good = lines[0]
    bad = {  # each would be the fastest trial if it were read
        "[-1.0]": _with_run_secs(good, "[-1.0]"),
        "[0.0]": _with_run_secs(good, "[0.0]"),
        "[1e-15]": _with_run_secs(good, "[1e-15]"),
        "[2e-05,-3e-05]": _with_run_secs(good, "[2e-05,-3e-05]"),
        "[NaN]": _with_run_secs(good, "[NaN]"),
        "[Infinity]": _with_run_secs(good, "[Infinity]"),
        "[-1e-5] spaced": json.dumps([0, [*json.loads(_with_run_secs(good, "[-1e-5]"))[1]]]),
        "NUL in trace": good[:80] + "\x00\x00" + good[80:],
        "zeroed": "\x00" * 64,
    }
    path.write_text("\n".join([*lines, *bad.values(), lines[1]]) + "\n")
    bad_lines = list(range(len(lines) + 1, len(lines) + 1 + len(bad)))
    run, said = _open(gmm)
    assert said == [
        f"{path}: skipped {len(bad)} torn or corrupt record line(s) (line "
        f"{', '.join(map(str, bad_lines))}); the other lines were read"]
    # the rest, as our own parse of the original lines reads them
    kept = [*range(1, len(lines) + 1), len(lines) + len(bad) + 1]
    assert list(run.trials["line"]) == kept
    records = [json.loads(text) for text in [*lines, lines[1]]]
    assert list(run.trials["run_secs"]) == [tuple(secs) for _, (_, secs, _, _) in records]
    means = [sum(s) / len(s) * 1e6 for _, (_, s, _, _) in records if max(s) < 1e10]
    assert run.best().latency_us == pytest.approx(min(means), rel=1e-12)
    assert (run.trials["latency_us"].dropna() > 0).all()


def test_the_least_time_a_record_may_hold(gmm: Path) -> None:
    path = gmm / RECORD_FILE
    good = path.read_text().splitlines()[0]
    path.write_text(_with_run_secs(good, "[1e-09]") + "\n" + _with_run_secs(good, "[9e-10]")
                    + "\n")
    with pytest.warns(msviz.MsvizWarning, match=r"skipped 1 torn or corrupt record line\(s\) "
                      r"\(line 2\)"):
        run = msviz.open(gmm)
    assert list(run.trials["run_secs"]) == [(1e-09,)]
    assert run.best().latency_us == pytest.approx(1e-3)


def test_empty_workload_file_is_said_once(gmm: Path) -> None:
    records = len((gmm / RECORD_FILE).read_text().splitlines())
    (gmm / WORKLOAD_FILE).write_text("")
    run, said = _open(gmm)
    assert said == [
        f"{gmm / WORKLOAD_FILE} holds no workload (it is empty): none of the {records} record "
        f"line(s) of {gmm / RECORD_FILE} can be read"]
    assert len(run.trials) == 0 and len(run.tasks) == 0
    with pytest.raises(ValueError, match="no tuning records"):
        run.best()


def test_report_of_a_dir_with_a_nul_line(gmm: Path, tmp_path: Path) -> None:
    from msviz.report import write_report

    path = gmm / RECORD_FILE
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:50] + "\x00" + lines[2][51:]
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(msviz.MsvizWarning, match=r"\(line 3\)"):
        run = msviz.open(gmm)
    assert 3 not in set(run.trials["line"]) and len(run.trials) == len(lines) - 1
    out = write_report(run, tmp_path / "report.html")
    assert out.stat().st_size > 0 and math.isfinite(run.best().latency_us)
