"""The differential tier prints its counts per target at the end of a pytest run."""

from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from tests.differential import harness

    if harness.RESULTS:
        terminalreporter.write_sep("-", "differential tier: stock MetaSchedule vs msviz")
        terminalreporter.write_line(harness.summary(harness.RESULTS))
