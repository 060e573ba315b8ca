"""What the search skipped because it raised (a session's quarantine), as lines for the Trials
tab and the report.

The same concept in the engine: :mod:`msviz.engine.search.quarantine` keeps it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["QuarantineInfo", "quarantine_info"]

_WHERE = {"candidate": "candidate", "design_space": "design space", "postproc": "postproc",
          "mutator": "mutator"}


class QuarantineInfo(NamedTuple):
    """The quarantine in words.

    Attributes
    ----------
    title : str
        ``"Quarantined: N skipped (K causes)"``, or ``""`` when nothing was skipped.
    lines : list of str
        One per entry: ``"<task>: postproc <name> raised <count> time(s): <message>"``.
    """

    title: str
    lines: list[str]


def quarantine_info(entries: Sequence[dict]) -> QuarantineInfo:
    """The lines of :attr:`msviz.Session.quarantine` (or a work dir's quarantine entries)."""
    if not entries:
        return QuarantineInfo("", [])
    lines = []
    for e in entries:
        count = int(e.get("count") or 0)
        where = _WHERE.get(str(e.get("where")), str(e.get("where")))
        lines.append(f"{e.get('task')}: {where} {e.get('what')} raised {count} "
                     f"time{'s' if count != 1 else ''} and was skipped: {e.get('message')}")
    total = sum(int(e.get("count") or 0) for e in entries)
    return QuarantineInfo(
        f"Quarantined: {total} skipped ({len(entries)} cause{'s' if len(entries) != 1 else ''})",
        lines)
