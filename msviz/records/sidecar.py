"""msviz's append-only sidecar: what MetaSchedule's stock JSON database drops.

The stock ``database_tuning_record.json`` keeps a trace and its ``run_secs`` (``[1e10]`` for a
failure) and nothing else. The engine appends one JSON line per trial to ``msviz_sidecar.jsonl``
in the same work dir, keyed by the record's line number in ``database_tuning_record.json``::

    {"v": 1, "kind": "trial", "line": 7, "task": "GMM-0", "timestamp": "...", "batch": 0,
     "generation": 0, "iteration": 2, "origin": "mutated", "pick": "score",
     "predicted_score": 0.93, "design_space": 1, "mutator": "MutateTileSize", "parent": 12,
     "ancestor_line": null, "error_kind": null, "error": null, "run_secs": [1.2e-05]}
    {"v": 1, "kind": "remeasure", "line": 7, "timestamp": "...", "run_secs": [...], "error": null}

Each line is written with one ``write`` and flushed, after the stock record it describes, so a
``kill -9`` can lose at most the sidecar line of the last record, never a record. A torn last line
(a crash mid-write) is cut off when a writer reopens the file, and skipped with a warning by the
reader. This module reads it; the writer is :class:`msviz.archive.sidecar_writer.SidecarWriter`.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msviz.errors import MsvizWarning
from msviz.records import row as trial_row
from msviz.records.row import SIDECAR_COLUMNS

__all__ = [
    "SIDECAR_COLUMNS",
    "SIDECAR_FILE",
    "Sidecar",
    "merge_sidecar",
    "quarantine_entries",
    "quarantine_of",
    "read_sidecar",
]

SIDECAR_FILE = "msviz_sidecar.jsonl"

#: The sidecar kind (and event kind) of a quarantine entry (see msviz.engine.search.quarantine).
QUARANTINE_KIND = "quarantine"
QUARANTINE_FIELDS = ("task", "where", "what", "message", "last_message", "count")


def quarantine_entries(items: Any) -> list[dict]:
    """The last state of each quarantine entry (by task, where, what) among ``quarantine``
    events' data or sidecar lines (other kinds are ignored), in the order each first
    appeared."""
    out: dict[tuple, dict] = {}
    for item in items:
        if item.get("kind", QUARANTINE_KIND) != QUARANTINE_KIND:
            continue
        key = (item.get("task"), item.get("where"), item.get("what"))
        out[key] = {k: item.get(k) for k in QUARANTINE_FIELDS}
    return list(out.values())


def quarantine_of(run: Any) -> list[dict]:
    """The quarantine entries of a :class:`msviz.Run` (the sidecar it read) or a work dir."""
    other = getattr(run, "sidecar_entries", None)
    if other is None:
        other = read_sidecar(getattr(run, "work_dir", run)).other
    return quarantine_entries(other)

@dataclass
class Sidecar:
    """The sidecar of a work dir, read back.

    Attributes
    ----------
    trials : dict[int, dict]
        The ``trial`` entry of each record line (the last one wins).
    remeasures : dict[int, list[dict]]
        The ``remeasure`` entries of each record line, in order.
    other : list[dict]
        Every other entry (session markers, remeasures of untracked schedules).
    """

    trials: dict[int, dict] = field(default_factory=dict)
    remeasures: dict[int, list[dict]] = field(default_factory=dict)
    other: list[dict] = field(default_factory=list)


def read_sidecar(work_dir: str | Path) -> Sidecar:
    """Read ``msviz_sidecar.jsonl`` of a work dir; an absent file gives an empty Sidecar.

    A line that is not valid JSON is skipped with one :class:`MsvizWarning` naming the file and
    the lines: a corrupt line anywhere, and a last line without its newline (torn by a crash, or
    still being written).
    """
    out = Sidecar()
    path = Path(work_dir) / SIDECAR_FILE
    if not path.is_file():
        return out
    bad: list[int] = []
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    torn = lines.pop()  # empty after a final newline, else a torn last line
    numbered = [(n, raw) for n, raw in enumerate(lines, start=1) if raw.strip()]
    try:  # one parse of the whole file; line by line only when some line is bad
        entries = json.loads(b"[" + b",".join(raw for _, raw in numbered) + b"]")
        if len(entries) != len(numbered):  # a line such as `1, 2` holds two values
            raise ValueError
    except ValueError:
        entries = [_entry(raw) for _, raw in numbered]
    for (number, _), entry in zip(numbered, entries, strict=True):
        if not isinstance(entry, dict):
            bad.append(number)
            continue
        kind, line = entry.get("kind"), entry.get("line")
        if kind == "trial" and isinstance(line, int):
            out.trials[line] = entry
        elif kind == "remeasure" and isinstance(line, int):
            out.remeasures.setdefault(line, []).append(entry)
        else:
            out.other.append(entry)
    problems = []
    if bad:
        shown = ", ".join(map(str, bad[:20])) + (" ..." if len(bad) > 20 else "")
        problems.append(f"skipped {len(bad)} corrupt sidecar line(s) (line {shown})")
    if torn.strip():
        problems.append(f"skipped its torn last line (line {len(lines) + 1}, no newline: "
                        "cut by a crash, or still being written)")
    if problems:
        warnings.warn(f"{path}: {'; '.join(problems)}", MsvizWarning, stacklevel=2)
    return out


def _entry(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def merge_sidecar(trials: Any, work_dir: str | Path) -> Any:
    """Add the sidecar's columns to a trials frame (matched on its ``line`` column).

    Sidecar error text replaces the frame's, and sets ``status`` (``build_error``,
    ``run_timeout``, ``infra_error``, ...) of a failed trial. Returns a new DataFrame.
    ``Run`` merges while it reads; this is for frames built elsewhere.
    """
    sidecar = read_sidecar(work_dir)
    frame = trials.copy()
    lines = [int(v) for v in frame["line"]] if "line" in frame else []
    data: dict[str, list] = {c: [] for c in SIDECAR_COLUMNS}
    errors = list(frame["error"]) if "error" in frame else [None] * len(lines)
    status = list(frame["status"]) if "status" in frame else [None] * len(lines)
    for row, line in enumerate(lines):
        entry = sidecar.trials.get(line, {})
        for column in SIDECAR_COLUMNS[:-1]:
            data[column].append(entry.get(column))
        again = sidecar.remeasures.get(line)
        data["remeasured_secs"].append([e.get("run_secs") for e in again] if again else None)
        if entry.get("error"):
            errors[row] = entry["error"]
            if status[row] != "ok":
                status[row] = trial_row.status(None, entry.get("error_kind"), entry["error"])
    data["timestamp"] = [trial_row.iso_timestamp(v) for v in data["timestamp"]]
    if lines:
        data["error"], data["status"] = errors, status
    typed = trial_row.trials_frame(data, index=frame.index)
    for column in typed.columns:
        frame[column] = typed[column]
    return frame
