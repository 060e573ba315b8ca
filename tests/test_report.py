"""The HTML report and the ``msviz`` command line."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

import msviz
from msviz.cli import main
from msviz.report import render_report


def test_report_is_self_contained(stock_work_dirs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(stock_work_dirs["GMM"]), "-o", str(out)]) == 0
    text = out.read_text()
    # plotly.js inlined once, no script loaded from the network
    assert text.count("plotly.js v") == 1
    assert not re.search(r"<script[^>]+src=", text)
    assert "Best so far" in text
    assert "LocalBuilder: Timeout" in text  # failures visible with their error text
    run = msviz.open(stock_work_dirs["GMM"])
    assert text.count('class="failed"') == int((run.trials["status"] != "ok").sum()) >= 4
    assert f"Best trial #{run.best().index}" in text
    assert "sch.get_sblock" in text and "T.sblock" in text
    assert "Failures by cause" in text
    # where the time went: a stock work dir's logs give the time between batches, said so
    from msviz.views.profile import profile_info, profile_table_text

    table = profile_table_text(profile_info(run.profile))
    assert "logs: time between batches" in table
    assert html.escape(table) in text[text.index('<h2 id="time">'):]
    # what mattered: the bars and a row per decision site of the best trial's trace
    mattered = text[text.index('<h2 id="importance">What mattered</h2>'):]
    assert mattered.count('class="plotly-graph-div"') == 1  # one task: one figure
    for site in msviz.decision_sites(run.best()):
        assert f'<td class="text">#{site.index} {site.kind}</td>' in mattered


def test_failure_triage_groups_by_cause(stock_work_dirs: dict[str, Path]) -> None:
    from msviz.views import failure_triage_info

    trials = msviz.open(stock_work_dirs["GMM"]).trials
    frame = failure_triage_info(trials).frame
    assert frame["count"].sum() == int((trials["status"] != "ok").sum())
    timeout = frame[frame["cause"].str.contains("killed after 0.001")]
    assert len(timeout) == 1 and timeout.iloc[0]["count"] >= 4
    assert timeout.iloc[0]["status"] == "build_timeout"
    assert "8, 9, 10, 11" in timeout.iloc[0]["trials"]
    assert failure_triage_info(trials[trials["status"] == "ok"]).frame.empty


def test_report_on_empty_run(tmp_path: Path) -> None:
    (tmp_path / "database_workload.json").write_text("")
    (tmp_path / "database_tuning_record.json").write_text("")
    with pytest.warns(msviz.MsvizWarning, match="no trials"):
        text = render_report(tmp_path)
    assert "0 trials in 0 task(s)" in text


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("msviz: error:") and "nowhere" in err and "Traceback" not in err


def test_cli_show(stock_work_dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(stock_work_dirs["SFM"]), "--top", "2"]) == 0
    out = capsys.readouterr().out
    trials = msviz.open(stock_work_dirs["SFM"]).trials
    failed = int((trials["status"] != "ok").sum())
    assert "Speed (GFLOPS)" in out and f"{len(trials)} trials, {failed} failed" in out
    header = out.splitlines()[0].split()
    assert header[:3] == ["ID", "Name", "FLOP"]  # the index name is a column, not a line
    mattered = out[out.index("What mattered"):].splitlines()
    run = msviz.open(stock_work_dirs["SFM"])
    assert mattered[1].startswith(f"{run.best().task}: PED-ANOVA over ")
    sites = [f"#{s.index} {s.kind}" for s in msviz.decision_sites(run.best())]
    assert sorted(line.split()[1] + " " + line.split()[2] for line in mattered[2:2 + len(sites)]
                  ) == sorted(sites)


def test_report_model_section(stock_model_work_dir: Path) -> None:
    from tests.conftest import MODEL_TASKS

    run = msviz.open(stock_model_work_dir)
    e2e = {"untuned_us": 80.0, "tuned_us": 20.0, "match": True, "max_abs_diff": 0.0,
           "fallback": ["matmul"], "error": None}
    text = render_report(run, end_to_end=e2e)
    model = text[text.index('<h2 id="model">'):text.index("<h2>Task ")]
    total = sum(run.tasks["weighted_latency_us"])
    assert ("estimated model latency (sum of weight x best latency, a task not tuned yet at its "
            f"untuned time): {total:.4f} µs" in model)
    assert f"MetaSchedule's log says {run.total_latency_us:.4f}" in model
    rows = re.findall(r"<tr><td>(\d)</td><td class=\"text\">([\w]+)</td><td>([\d,]+)</td>"
                      r"<td>(\d)</td>", model)
    assert rows == [(str(i), name, f"{int(flop):,}", str(int(weight))) for i, name, flop, weight
                    in zip(range(4), MODEL_TASKS, run.tasks["flop"], run.tasks["weight"],
                           strict=True)]
    assert "Estimated model latency" in model and "Trials per task" in model
    assert "untuned 80.000 µs" in model and "speed-up 4.00x" in model and "matmul" in model
    assert text.count("plotly.js v") == 1
    # the task table once: in the model section (no second, shorter one above it)
    assert "<h2>Tasks</h2>" not in text and "<table" not in text[:text.index('<h2 id="model">')]
    plain = render_report(stock_model_work_dir)  # no end-to-end result: no such line
    assert '<h2 id="model">' in plain and "End to end" not in plain


def test_report_of_many_tasks_has_one_best_so_far_figure(
        stock_model_work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From SMALL_MULTIPLES_FROM tasks on (4 here, patched from 7): one figure of a panel per
    task, and each task's section keeps its best schedule but no figure of its own."""
    import msviz.report as report
    import msviz.views.history as history

    monkeypatch.setattr(report, "SMALL_MULTIPLES_FROM", 4)
    monkeypatch.setattr(history, "SMALL_MULTIPLES_FROM", 4)  # the figure's own panels
    text = render_report(stock_model_work_dir)
    assert text.count("Best so far, 4 tasks (a panel each)") == 1
    tasks = text[text.index("<h2>Task "):text.index('<h2 id="time">')]
    assert "plotly-graph-div" not in tasks and tasks.count("<h3>Best trial #") == 4
    monkeypatch.setattr(report, "SMALL_MULTIPLES_FROM", 7)
    monkeypatch.setattr(history, "SMALL_MULTIPLES_FROM", 7)
    text = render_report(stock_model_work_dir)
    tasks = text[text.index("<h2>Task "):text.index('<h2 id="time">')]
    assert tasks.count("plotly-graph-div") == 4
