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


def _odd_times_said(path: Path, lines: list[int]) -> str:
    return (f"{path}: {len(lines)} record line(s) hold run_secs below 1 ns, zero or negative "
            f"(line {', '.join(map(str, lines))}): no kernel runs that fast, but MetaSchedule "
            "ranks them as they are (the least mean is what compile_tir picks); msviz never picks "
            "one faster than the machine can be (status 'impossible')")


def _impossible_said(path: Path, lines: list[int]) -> str:
    """The start of the warning on records that cannot be true (the reasons follow)."""
    return (f"{path}: {len(lines)} record(s) cannot be true (status 'impossible', never the best, "
            "although MetaSchedule's compile_tir would rank them by their time): "
            f"line {lines[0]}: ")


def test_unreadable_lines_are_skipped_and_odd_times_read_as_stock_reads_them(gmm: Path) -> None:
    """NaN, Infinity and NUL bytes: lines stock's JSONDatabase cannot read, skipped and said.
    Zero, negative and sub-ns times: stock reads and ranks them by their mean as they are (the
    least is what compile_tir picks); msviz reads them, says so, and flags them impossible
    (they cannot be true): never its best."""
    path = gmm / RECORD_FILE
    lines = path.read_text().splitlines()
    good = lines[0]
    odd = {  # each is the fastest trial once read
        "[-1.0]": _with_run_secs(good, "[-1.0]"),
        "[0.0]": _with_run_secs(good, "[0.0]"),
        "[1e-15]": _with_run_secs(good, "[1e-15]"),
        "[2e-05,-3e-05]": _with_run_secs(good, "[2e-05,-3e-05]"),
    }
    corrupt = {
        "[NaN]": _with_run_secs(good, "[NaN]"),
        "[Infinity]": _with_run_secs(good, "[Infinity]"),
    }
    spaced = {"[-1e-5] spaced": json.dumps([0, [*json.loads(_with_run_secs(good, "[-1e-5]"))[1]]])}
    nul = {"NUL in trace": good[:80] + "\x00\x00" + good[80:], "zeroed": "\x00" * 64}
    added = [*odd.values(), *corrupt.values(), *spaced.values(), *nul.values()]
    path.write_text("\n".join([*lines, *added, lines[1]]) + "\n")
    n = len(lines)
    odd_lines = [*range(n + 1, n + 5), n + 7]
    corrupt_lines = [n + 5, n + 6, n + 8, n + 9]
    run, said = _open(gmm)
    assert said[:2] == [
        f"{path}: skipped {len(corrupt_lines)} torn or corrupt record line(s) (line "
        f"{', '.join(map(str, corrupt_lines))}); the other lines were read",
        _odd_times_said(path, odd_lines)]
    assert len(said) == 3 and said[2].startswith(_impossible_said(path, odd_lines))
    # the rest, as our own parse of the lines reads them
    kept = [*range(1, n + 1), *odd_lines, n + len(added) + 1]
    assert list(run.trials["line"]) == kept
    texts = [*lines, *added, lines[1]]
    records = [json.loads(texts[k - 1]) for k in kept]
    assert list(run.trials["run_secs"]) == [tuple(secs) for _, (_, secs, _, _) in records]
    # stock's pick: the least mean among records with some time that is not the 1e10 mark;
    # msviz's: the least among those that can be true (the odd times cannot)
    means = [sum(s) / len(s) * 1e6 for _, (_, s, _, _) in records if any(v != 1e10 for v in s)]
    assert min(means) == -1e6
    odd = run.trials["line"].isin(odd_lines)
    assert set(run.trials.loc[odd, "status"]) == {"impossible"}
    real = [sum(s) / len(s) * 1e6 for k, (_, (_, s, _, _)) in zip(kept, records)
            if k not in odd_lines and any(v != 1e10 for v in s)]
    assert run.best().latency_us == pytest.approx(min(real), rel=1e-12) and min(real) > 1.0
    assert int(run.trials.at[run.best().index, "line"]) not in odd_lines


def test_a_time_below_1_ns_is_read_and_said(gmm: Path) -> None:
    path = gmm / RECORD_FILE
    good = path.read_text().splitlines()[0]
    path.write_text(_with_run_secs(good, "[1e-09]") + "\n" + _with_run_secs(good, "[9e-10]")
                    + "\n")
    run, said = _open(gmm)
    assert said[0] == _odd_times_said(path, [2])
    assert len(said) == 2 and said[1].startswith(_impossible_said(path, [1, 2]))
    assert list(run.trials["run_secs"]) == [(1e-09,), (9e-10,)]
    assert list(run.trials["status"]) == ["impossible"] * 2  # 4 PFLOPS on 2 cores
    with pytest.raises(ValueError, match="no successful trial"):
        run.best()


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
