"""A tuning library's index of one source (:mod:`msviz.records.library`): the sources found
under the given paths, each work dir's workloads keyed (structural hash, anchor block, operator,
extents, dtype) per target with their best time and task name, and the entries made of a
(cached) index. Pure reading: nothing is written into a source."""


from __future__ import annotations

import contextlib
import json
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any, NamedTuple

from msviz import compat
from msviz.records import database as db_files
from msviz.records import log_ties, targets
from msviz.records import logs as log_files
from msviz.records.row import mean_run_secs, valid_run_secs
from msviz.records.sidecar import SIDECAR_FILE

__all__ = ["INDEX_FORMAT", "LibraryEntry", "entries_of", "find_sources", "index_work_dir",
           "module_keys", "nonblank_lines", "other_tvm", "text_of", "workload_keys"]


#: Bumped when what a cached index holds changes.
INDEX_FORMAT = 1
_RELEASE = r"\s*v?(\d+)\.(\d+)"
_find_anchor = compat.find_anchor_sblock


class LibraryEntry(NamedTuple):
    """One workload of one source of a library, on one target."""

    source: str  # the run's name (work dir folder, or bundle file stem; unique in the library)
    work_dir: Path  # where its database files are (a bundle's extracted temporary folder)
    workload: int  # 0-based index into that work dir's workload file (as RecordLine.workload)
    shash: str  # the workload's structural hash, as the workload file holds it
    anchor: str | None  # structural hash (decimal) of the workload's anchor block, None if none
    op: str | None  # the operator kind: the anchor block's name ("conv2d_nchw", "T_matmul_NT")
    extents: tuple[int, ...]  # the anchor block's iteration extents, () if unknown
    target: str  # its records' target, as Library.target_text writes it
    task: str | None  # the task name where the work dir names it (logs, sidecar), else None
    best_us: float  # best mean latency (µs) of its successful records (math.inf when none)
    trials: int  # how many records it has on that target


def module_keys(mod: Any) -> tuple[str, str | None, str | None, tuple[int, ...], str | None]:
    """(shash, anchor hash, op, extents, dtype) of an IRModule (see :func:`workload_keys`)."""
    shash = str(int(compat.structural_hash(mod)) % (1 << 64))  # as C++ prints a size_t
    try:
        block = _find_anchor(mod) if _find_anchor is not None else None
    except Exception:  # TVM's own errors: a module it finds no single anchor in
        block = None
    if block is None:
        return shash, None, None, (), None
    # module_equality.cc (ModuleEqualityAnchorBlock::Hash): map_free_vars=false,
    # skip_tensor_content=true
    anchor = str(int(compat.structural_hash(block, False, True)) % (1 << 64))
    extents = [getattr(iv.dom.extent, "value", None) for iv in block.iter_vars]
    writes = list(block.writes)
    dtype = str(writes[0].source.dtype) if writes else None
    return (shash, anchor, str(block.name_hint),
            tuple(int(e) for e in extents) if None not in extents else (), dtype)


def workload_keys(mod: Any) -> tuple[str, str | None, str | None, tuple[int, ...]]:
    """(shash, anchor, op, extents) of an IRModule, as a :class:`Library` keys its workloads.

    ``shash`` is the structural hash MetaSchedule's ``JSONDatabase`` writes for ``mod``;
    ``anchor`` the hash of its anchor block as the ``"anchor-block"`` module equality computes
    it (None without an anchor block, and then ``op`` is None and ``extents`` empty); ``op`` the
    anchor block's name; ``extents`` its iteration extents (empty where one is not constant).
    """
    return module_keys(mod)[:4]


def other_tvm(path: Path, version: Any) -> str | None:
    """The problem of a source written by another TVM release (None: the same, or unknown);
    releases are compared as major.minor (``0.27.0.post1`` is 0.27: its traces replay)."""
    theirs, here = re.match(_RELEASE, str(version or "")), re.match(_RELEASE, compat.tvm_version())
    return None if theirs is None or here is None or theirs.groups() == here.groups() else (
        f"{path}: written with TVM {version}, this is {compat.tvm_version()}: skipped (its traces "
        "may not replay)")


def _is_work_dir(path: Path) -> bool:
    return all((path / n).is_file() for n in (db_files.WORKLOAD_FILE, db_files.RECORD_FILE))


def find_sources(paths: list[Path], problems: list[str]) -> list[tuple[Path, bool]]:
    """(path, is a bundle) of every source under ``paths``, each once, in order."""
    found: dict[Path, tuple[Path, bool]] = {}

    def add(path: Path, bundle: bool) -> None:
        found.setdefault(path.resolve(), (path, bundle))

    for path in paths:
        try:
            if _is_work_dir(path):
                add(path, False)
            elif path.is_file():
                add(path, True)
            elif path.is_dir():
                before = len(found)
                errors: list[OSError] = []
                for folder, dirs, files in os.walk(path, onerror=errors.append):
                    here = Path(folder)
                    if _is_work_dir(here):
                        add(here, False)
                        dirs[:] = []  # logs/ and the like hold no further work dir
                        continue
                    dirs.sort()
                    for name in sorted(files):
                        if name.lower().endswith(".zip"):
                            add(here / name, True)
                problems += [f"{e.filename}: cannot be read ({e.strerror or e})" for e in errors]
                if len(found) == before and not errors:
                    problems.append(f"{path}: holds no work dir and no bundle (.zip)")
            else:
                problems.append(f"{path}: does not exist")
        except OSError as err:
            problems.append(f"{path}: cannot be read ({err.strerror or err})")
    return list(found.values())


# -- one source's index -------------------------------------------------------------------------


def text_of(raw: str, texts: dict[str, str | None]) -> str | None:
    """The target text of a record's target JSON (None: TVM cannot read it), asked once."""
    if raw not in texts:
        try:
            texts[raw] = targets.target_text(json.loads(raw))  # a dict: its keys sorted
        except ValueError:
            texts[raw] = None
    return texts[raw]


def nonblank_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


def _read_sidecar_facts(work_dir: Path) -> tuple[Any, dict[int, str]]:
    """(the TVM version of the last environment line, task name per record line)."""
    version, tasks = None, {}
    path = work_dir / SIDECAR_FILE
    with open(path, encoding="utf-8", errors="replace") if path.is_file() else \
            contextlib.nullcontext([]) as f:
        for text in f:
            try:
                entry = json.loads(text)
                kind = entry.get("kind")
                if kind == "environment":
                    version = entry["versions"]["tvm"]
                elif kind == "trial" and isinstance(entry.get("task"), str):
                    tasks.setdefault(entry.get("line"), entry["task"])
            except (AttributeError, KeyError, TypeError, ValueError):  # not an msviz line
                continue
    return version, tasks


def _log_names(work_dir: Path, workloads: list, mods: dict[int, Any]) -> dict[int, str]:
    """Task name per workload from MetaSchedule's logs (tied by the workload they print)."""
    logs = work_dir / "logs"
    if not logs.is_dir() or not mods:
        return {}
    files = log_files.read_task_log_files(logs)
    by_id = {t.id: t.name for t in log_files.read_task_table(logs)}
    ties = log_ties.tie_logs_by_script(files, set(mods), workloads, mods.__getitem__)
    out = {w: by_id.get(task_id, files[task_id].name) for task_id, w in ties.items()}
    if not out and len(mods) == 1 and len(files) == 1:
        out = {next(iter(mods)): next(iter(files.values())).name}
    return out


def index_work_dir(work_dir: Path, texts: dict[str, str | None]) -> dict[str, Any]:
    """Index one work dir (see :meth:`Library._index`): plain JSON-able data."""
    version, sidecar_tasks = _read_sidecar_facts(work_dir)
    with warnings.catch_warnings():  # said once per source, in the library's own words
        warnings.simplefilter("ignore")
        workloads = db_files.read_workloads(work_dir / db_files.WORKLOAD_FILE)
        cols = db_files.read_record_columns(work_dir / db_files.RECORD_FILE, len(workloads))
    total = nonblank_lines(work_dir / db_files.RECORD_FILE)
    groups: dict[tuple[int, str], list] = {}
    unkeyed = 0  # records whose workload or target cannot be read
    for line, w, secs, raw in zip(cols.line, cols.workload, cols.run_secs, cols.target,
                                  strict=True):
        text = text_of(raw, texts) if workloads[w] is not None else None
        if text is None:
            unkeyed += 1
            continue
        group = groups.setdefault((w, text), [w, text, None, 0])
        group[3] += 1
        if valid_run_secs(secs) and line not in cols.unscheduled:
            us = mean_run_secs(secs) * 1e6
            group[2] = us if group[2] is None else min(group[2], us)
    if total and not groups:
        why = ("none of its records' workloads or targets can be read" if unkeyed else
               f"none of its {total} record line(s) can be read (torn or corrupt)")
        return {"tvm": version, "unreadable": why}
    bad = total - len(cols.line)
    notes = [f"skipped {bad} of {total} record line(s) (torn or corrupt)"] if bad else []
    if unkeyed:
        notes.append(f"skipped {unkeyed} record(s) whose workload or target cannot be read")
    keys: dict[int, list] = {}
    mods: dict[int, Any] = {}
    for w in sorted({w for w, _ in groups}):
        entry = workloads[w]
        try:
            mod = compat.Workload.from_json([entry.shash, entry.payload]).mod
            keys[w] = [entry.shash, *module_keys(mod)[1:]]
            mods[w] = mod
        except Exception:  # TVM's own errors: a payload this TVM cannot load
            keys[w] = [entry.shash, None, None, [], None]
    if unread := len(keys) - len(mods):
        notes.append(f"{unread} workload(s) cannot be read by this TVM (exact hits only)")
    line_workload = dict(zip(cols.line, cols.workload, strict=True))
    names = {line_workload[line]: name for line, name in sidecar_tasks.items()
             if line in line_workload}
    try:
        for w, name in _log_names(work_dir, workloads, mods).items():
            names.setdefault(w, name)
    except Exception:  # names are a courtesy: a log this TVM prints otherwise is no problem
        pass
    return {"tvm": version, "unreadable": None, "notes": notes,
            "workloads": {str(w): k for w, k in keys.items()},
            "tasks": {str(w): n for w, n in names.items()}, "groups": list(groups.values())}


def entries_of(work_dir: Path, index: dict[str, Any]) -> list[tuple[LibraryEntry, str | None]]:
    """The entries of an index (source name left empty) with their dtypes; an error where the
    index is malformed."""
    if index.get("unreadable"):
        return []
    out = []
    for w, text, best, trials in index["groups"]:
        shash, anchor, op, extents, dtype = index["workloads"][str(w)]
        task = index["tasks"].get(str(w))
        if not isinstance(w, int) or not all(isinstance(x, str) for x in (shash, text)) or \
                not isinstance(best, (float, type(None))) or not isinstance(trials, int):
            raise ValueError("malformed index")
        out.append((LibraryEntry("", work_dir, w, shash, anchor, op,
                                 tuple(int(x) for x in extents), text, task,
                                 math.inf if best is None else best, trials), dtype))
    return out


# -- the library --------------------------------------------------------------------------------
