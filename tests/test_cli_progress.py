"""The CLI's progress bar: redrawn in place on a terminal, occasional plain lines otherwise."""

from __future__ import annotations

import io
from pathlib import Path

from msviz.cli import Progress, stage_text
from msviz.engine import Session
from msviz.engine.events import EventLog


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_not_a_terminal_prints_occasional_lines(tmp_path: Path) -> None:
    session = Session("mlp", work_dir=tmp_path / "wd", max_trials=8)
    out = io.StringIO()
    bar = Progress(session, stream=out, every=3600.0)
    for _ in range(50):  # the CLI calls update() twice a second
        bar.update()
    text = out.getvalue()
    assert "\r" not in text
    assert text.count("\n") == 1  # one line, not 50: nothing changed since
    assert text.startswith("[....................] 0/8 trials")
    bar.close()
    assert out.getvalue().count("\n") == 2


def test_progress_on_a_terminal_redraws_in_place(tmp_path: Path) -> None:
    session = Session("GMM-0", work_dir=tmp_path / "wd", max_trials=8)
    out = _Terminal()
    bar = Progress(session, stream=out)
    bar.update()
    bar.update()
    bar.print("a table")
    bar.update()
    bar.close()
    text = out.getvalue()
    assert text.count("\r\x1b[K[") == 4 and text.count("\n") == 2  # the table line, the end
    assert "\r\x1b[Ka table\n" in text


def test_the_bar_names_the_last_stage_and_the_state_once() -> None:
    log = EventLog()
    log.emit("generation", "GMM-0")
    log.emit("log", "GMM-0", message="a line")
    assert stage_text(log.snapshot(), "running") == "generation"
    log.emit("finished", "GMM-0", reason="reached max_trials")
    assert stage_text(log.snapshot(), "finished") == ""  # not "finished finished"
    assert stage_text([], "idle") == ""
