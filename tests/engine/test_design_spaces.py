"""A session's design spaces come from its worker: through the command queue while it runs
(applied between stages, never while a kernel is timed), on a thread of their own otherwise."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from msviz.space_generator import RuleSet, design_spaces_and_warnings


def _traces(result: tuple) -> list[tuple]:
    """Each space's instructions without their sampled decisions (random per generation), and
    its decision sites (instruction, kind, number of valid choices)."""
    spaces, _warnings = result
    return [(tuple(re.sub(r", decision=.*\)$", ")", line) for line in space.trace), space.sites)
            for space in spaces]


def test_design_spaces_idle_and_paused(tmp_path: Path, tiny_session: Any) -> None:
    session = tiny_session(tmp_path / "wd")
    expected = design_spaces_and_warnings("GMM-0", session.target, session.rules)
    assert len(expected[0]) == 3  # GMM-0 under the CPU defaults: three spaces

    idle = session.design_spaces().result(120)  # no worker yet: a thread of its own
    assert _traces(idle) == _traces(expected)

    session.step("generation")  # starts, pauses after the design spaces stage
    assert session.wait(300) == "paused"
    # queued for the worker: a paused worker applies commands while it waits, so the future
    # resolves without resuming
    queued = session.design_spaces()
    assert _traces(queued.result(120)) == _traces(expected)
    assert session.state == "paused"

    # other rules (no multi-level tiling): fewer sites, the rules given, not the session's
    fewer = RuleSet.default(session.target).remove("MultiLevelTiling")
    changed = session.design_spaces(fewer).result(120)
    assert _traces(changed) == _traces(design_spaces_and_warnings("GMM-0", session.target,
                                                                  fewer))
    assert _traces(changed) != _traces(expected)
    session.stop()
    assert session.wait(120) == "stopped"
