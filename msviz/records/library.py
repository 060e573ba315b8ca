"""A tuning library: a read-only index of many work dirs and bundles (a team's shared folder).

A :class:`Library` indexes each workload of each source once per target its records hold
(:class:`LibraryEntry`), and answers what it holds for a module on a target:

* an *exact* hit: the same structural hash (the key stock ``JSONDatabase`` writes into
  ``database_workload.json``) on the same target, with a successful record;
* an *anchor* match: another workload with the same anchor block (hashed as MetaSchedule's
  ``module_equality="anchor-block"`` hashes it) on the same target, with a successful record;
* *siblings*: the same operator (anchor block name), rank and dtype at another shape, or any
  workload of it on another target.
Nothing is ever written into a library path: each source's index is cached as JSON in msviz's
cache folder (:mod:`msviz.records.open_cache`'s), keyed by its files' size, times and inode and
by the TVM version. A source that cannot be read (missing, corrupt, a bundle msviz refuses, one
written by another TVM release) is named once in :attr:`Library.problems` and warned about once.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import tempfile
import warnings
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from msviz import compat
from msviz.errors import BundleError, MsvizWarning
from msviz.records import bundle as bundle_files
from msviz.records import database as db_files
from msviz.records import log_ties, targets
from msviz.records import logs as log_files
from msviz.records.library_cache import input_stats as _input_stats
from msviz.records.library_cache import load as _load_cache
from msviz.records.library_cache import save as _save_cache
from msviz.records.many_runs import run_names
from msviz.records.row import mean_run_secs, valid_run_secs
from msviz.records.sidecar import SIDECAR_FILE

__all__ = ["Library", "LibraryEntry", "workload_keys"]

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


def _keys(mod: Any) -> tuple[str, str | None, str | None, tuple[int, ...], str | None]:
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
    return _keys(mod)[:4]


def _other_tvm(path: Path, version: Any) -> str | None:
    """The problem of a source written by another TVM release (None: the same, or unknown);
    releases are compared as major.minor (``0.27.0.post1`` is 0.27: its traces replay)."""
    theirs, here = re.match(_RELEASE, str(version or "")), re.match(_RELEASE, compat.tvm_version())
    return None if theirs is None or here is None or theirs.groups() == here.groups() else (
        f"{path}: written with TVM {version}, this is {compat.tvm_version()}: skipped (its traces "
        "may not replay)")


def _is_work_dir(path: Path) -> bool:
    return all((path / n).is_file() for n in (db_files.WORKLOAD_FILE, db_files.RECORD_FILE))


def _find_sources(paths: list[Path], problems: list[str]) -> list[tuple[Path, bool]]:
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


def _text_of(raw: str, texts: dict[str, str | None]) -> str | None:
    """The target text of a record's target JSON (None: TVM cannot read it), asked once."""
    if raw not in texts:
        try:
            texts[raw] = targets.target_text(json.loads(raw))  # a dict: its keys sorted
        except ValueError:
            texts[raw] = None
    return texts[raw]


def _nonblank_lines(path: Path) -> int:
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


def _index_work_dir(work_dir: Path, texts: dict[str, str | None]) -> dict[str, Any]:
    """Index one work dir (see :meth:`Library._index`): plain JSON-able data."""
    version, sidecar_tasks = _read_sidecar_facts(work_dir)
    with warnings.catch_warnings():  # said once per source, in the library's own words
        warnings.simplefilter("ignore")
        workloads = db_files.read_workloads(work_dir / db_files.WORKLOAD_FILE)
        cols = db_files.read_record_columns(work_dir / db_files.RECORD_FILE, len(workloads))
    total = _nonblank_lines(work_dir / db_files.RECORD_FILE)
    groups: dict[tuple[int, str], list] = {}
    unkeyed = 0  # records whose workload or target cannot be read
    for line, w, secs, raw in zip(cols.line, cols.workload, cols.run_secs, cols.target,
                                  strict=True):
        text = _text_of(raw, texts) if workloads[w] is not None else None
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
            keys[w] = [entry.shash, *_keys(mod)[1:]]
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


def _entries(work_dir: Path, index: dict[str, Any]) -> list[tuple[LibraryEntry, str | None]]:
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


class Library:
    """A read-only index of tuning records: work dirs, bundles and folders of them.

    Parameters
    ----------
    paths : str | Path | iterable of them
        Work dirs (a folder holding ``database_workload.json`` and
        ``database_tuning_record.json``), msviz bundles (``.zip``), and folders searched
        recursively for both.
    cache : bool
        Keep each source's index in msviz's cache folder (``$MSVIZ_CACHE_DIR``...) and read it
        from there while the source's files are unchanged.

    Attributes
    ----------
    sources : list of str
        The indexed sources' names, in the order found.
    entries : list of LibraryEntry
        One per (source, workload, target).
    problems : list of str
        Each source that could not be read (or only in part), named once with why; each is
        also warned about once (:class:`~msviz.errors.MsvizWarning`).
    """

    def __init__(self, paths: str | os.PathLike | Iterable[str | os.PathLike], *,
                 cache: bool = True) -> None:
        given = ([paths] if isinstance(paths, (str, os.PathLike)) else list(paths))
        #: The paths as given (a session's config keeps them).
        self.paths: tuple[str, ...] = tuple(str(p) for p in given)
        self.problems: list[str] = []
        self._cache, self._tmp = cache, None
        self._texts: dict[str, str | None] = {}
        self._mods: dict[tuple[Path, int], Any] = {}
        self._cols: dict[Path, db_files.RecordColumns] = {}
        self._trials: dict[Path, dict[int, int]] = {}
        self._dtypes: dict[tuple[str, int], str | None] = {}
        indexed: list[tuple[Path, list[tuple[LibraryEntry, str | None]]]] = []
        for path, bundle in _find_sources([Path(p) for p in given], self.problems):
            work_dir = self._open_bundle(path) if bundle else path
            found = None if work_dir is None else self._index(path, work_dir, bundle)
            if found is not None:
                indexed.append((path, found))
        self.sources: list[str] = run_names([p.parent / p.stem if p.is_file() else p
                                             for p, _ in indexed])
        self.entries: list[LibraryEntry] = []
        self._targets: dict[str, set[str]] = {name: set() for name in self.sources}
        self._by: dict[str, dict[Any, list[LibraryEntry]]] = {"shash": {}, "anchor": {}, "op": {}}
        for name, (_, found) in zip(self.sources, indexed, strict=True):
            for entry, dtype in found:
                e = entry._replace(source=name)
                self.entries.append(e)
                self._targets[name].add(e.target)
                self._dtypes[(name, e.workload)] = dtype
                for field in ("shash", "anchor", "op"):
                    if getattr(e, field) is not None:
                        self._by[field].setdefault(getattr(e, field), []).append(e)
        for message in self.problems:
            warnings.warn(f"library: {message}", MsvizWarning, stacklevel=2)

    # -- reading the sources ---------------------------------------------------------------------

    def _open_bundle(self, path: Path) -> Path | None:
        """The extracted work dir of a bundle, or None (a problem named)."""
        try:
            env = bundle_files.read_manifest(path).get("environment")
            versions = env.get("versions") if isinstance(env, dict) else None
            other = _other_tvm(path, isinstance(versions, dict) and versions.get("tvm"))
            if other:
                self.problems.append(other)
                return None
            if self._tmp is None:
                self._tmp = Path(tempfile.mkdtemp(prefix="msviz-library-"))
                weakref.finalize(self, shutil.rmtree, self._tmp, ignore_errors=True)
            work_dir, _ = bundle_files.extract_bundle(path, tempfile.mkdtemp(dir=self._tmp))
        except BundleError as err:
            self.problems.append(f"{path}: not read ({err})")
            return None
        except OSError as err:
            self.problems.append(f"{path}: cannot be read ({err.strerror or err})")
            return None
        return work_dir

    def _index(self, path: Path, work_dir: Path, bundle: bool
               ) -> list[tuple[LibraryEntry, str | None]] | None:
        """A source's entries (unnamed) and their dtypes, from its cached index where that is
        valid; None when it cannot be read (a problem named)."""
        found = index = None
        try:
            key = json.dumps({"format": INDEX_FORMAT, "tvm": compat.tvm_version(),
                              "path": str(path.resolve()),
                              "files": _input_stats(work_dir, path if bundle else None)})
            if self._cache and (index := _load_cache(path, key)) is not None:
                try:  # a malformed cache is indexed afresh
                    found = _entries(work_dir, index)
                except (AttributeError, KeyError, TypeError, ValueError):
                    index = None
            if index is None:
                index = _index_work_dir(work_dir, self._texts)
                if self._cache:
                    _save_cache(path, key, index)
                found = _entries(work_dir, index)
        except Exception as err:  # OSError, or whatever else a corrupt source makes TVM raise
            why = getattr(err, "strerror", None) or err
            self.problems.append(f"{path}: cannot be read ({why})")
            return None
        other = _other_tvm(path, index.get("tvm"))
        if other or index.get("unreadable"):
            self.problems.append(other or f"{path}: skipped: {index['unreadable']}")
            return None
        if index["notes"]:
            self.problems.append(f"{path}: {'; '.join(map(str, index['notes']))}")
        return found

    # -- queries ---------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"<Library: {len(self.sources)} source(s), {len(self.entries)} workload(s)>"

    @staticmethod
    def target_text(target: Any) -> str:
        """The text :attr:`LibraryEntry.target` is compared with, of a Target, a record's
        target dict or JSON, or ``"llvm"`` (this CPU): TVM's text of the Target rebuilt from
        its attributes in sorted order (``str(Target)`` keeps the order they were given in)."""
        if not isinstance(target, dict):
            target = compat.to_jsonable(targets.record_target(target).export())
        return targets.target_text(target)

    def other_targets(self, target: Any) -> list[str]:
        """One message per source that holds no record of ``target`` (its workloads can only
        be siblings)."""
        text = self.target_text(target)
        return [f"{name}: holds no record of {text} (its records are of "
                f"{', '.join(sorted(self._targets[name])) or 'no target'}): its workloads "
                "count as siblings only" for name in self.sources
                if text not in self._targets[name]]

    def _rank(self, e: LibraryEntry) -> tuple[float, int, int]:
        """Fastest first; among equals, in the order of the sources."""
        return e.best_us, self.sources.index(e.source), e.workload

    def _fastest(self, entries: Iterable[LibraryEntry]) -> list[LibraryEntry]:
        return sorted(entries, key=self._rank)

    def _exacts(self, shash: str, text: str) -> list[LibraryEntry]:
        return self._fastest(e for e in self._by["shash"].get(shash, ())
                             if e.target == text and e.best_us < math.inf)

    def exact(self, mod: Any, target: Any) -> LibraryEntry | None:
        """The fastest entry of the same workload (structural hash) on the same target."""
        found = self._exacts(workload_keys(mod)[0], self.target_text(target))
        return found[0] if found else None

    def _anchors(self, shash: str, anchor: str | None, text: str) -> list[LibraryEntry]:
        return self._fastest(e for e in self._by["anchor"].get(anchor, ())
                             if e.target == text and e.shash != shash and e.best_us < math.inf)

    def anchor_matches(self, mod: Any, target: Any) -> list[LibraryEntry]:
        """Entries of another workload with the same anchor block on the same target, fastest
        first."""
        shash, anchor, _, _ = workload_keys(mod)
        return [] if anchor is None else self._anchors(shash, anchor, self.target_text(target))

    def siblings(self, mod: Any, target: Any = None) -> list[LibraryEntry]:
        """Entries of the same operator, rank and dtype that are no exact or anchor match of
        ``mod`` on ``target`` (another shape, or another target); with no target, every
        entry of another anchor block. Those of ``target`` first, then the nearest shape
        (sum of the extents' log differences), then the fastest."""
        shash, anchor, op, extents, dtype = _keys(mod)
        if op is None:
            return []
        text = None if target is None else self.target_text(target)

        def hit(e: LibraryEntry) -> bool:
            same = e.anchor == anchor or e.shash == shash
            return same and (text is None or e.target == text)

        found = [e for e in self._by["op"].get(op, ())
                 if len(e.extents) == len(extents) and not hit(e)
                 and dtype in (None, self._dtypes.get((e.source, e.workload)) or dtype)]

        def distance(e: LibraryEntry) -> float:
            return sum(abs(math.log(max(a, 1)) - math.log(max(b, 1)))
                       for a, b in zip(e.extents, extents, strict=True))

        return sorted(found, key=lambda e: (text is not None and e.target != text, distance(e),
                                            *self._rank(e)))

    def match(self, mod: Any, target: Any) -> tuple[str, list[LibraryEntry]]:
        """The best kind of match the library holds for ``mod`` on ``target`` (``"exact"``,
        ``"anchor"``, ``"sibling"`` or ``"none"``) and its entries, best first."""
        shash, anchor, _, _ = workload_keys(mod)
        text = self.target_text(target)
        if found := self._exacts(shash, text):
            return "exact", found
        if anchor is not None and (found := self._anchors(shash, anchor, text)):
            return "anchor", found
        if found := self.siblings(mod, target):
            return "sibling", found
        return "none", []

    # -- an entry's records and workload -------------------------------------------------------

    def best_records(self, entry: LibraryEntry, k: int = 16
                     ) -> list[tuple[db_files.RecordLine, Any]]:
        """The entry's ``k`` fastest successful records, fastest first (file order among
        equals), each with its record JSON as ``TuningRecord.from_json`` reads it
        (``[trace, run_secs, target, args_info]``; the trace JSON first), read lazily."""
        return [(rec, self.record_json(entry, rec)) for rec in self.ranked(entry)[:max(k, 0)]]

    def ranked(self, entry: LibraryEntry) -> list[db_files.RecordLine]:
        """The entry's successful records, fastest first (file order among equals); their
        JSON is read by :meth:`record_json`."""
        cols = self._columns(entry.work_dir)
        picked = sorted((mean_run_secs(secs), i) for i, (w, secs, line, raw) in enumerate(zip(
            cols.workload, cols.run_secs, cols.line, cols.target, strict=True))
            if w == entry.workload and valid_run_secs(secs) and line not in cols.unscheduled
            and _text_of(raw, self._texts) == entry.target)
        return [db_files.RecordLine(*(col[i] for col in cols[:5])) for _, i in picked]

    @staticmethod
    def record_json(entry: LibraryEntry, rec: db_files.RecordLine) -> Any:
        """A record's JSON (``[trace, run_secs, target, args_info]``)."""
        return db_files.read_record_json(entry.work_dir / db_files.RECORD_FILE, rec.offset)[1]

    def trial_of(self, entry: LibraryEntry, line: int) -> int:
        """The task trial number (0-based, in file order) of record ``line`` of its workload."""
        if entry.work_dir not in self._trials:  # each record's place in its workload, once
            seen: dict[int, int] = {}
            cols, trials = self._columns(entry.work_dir), {}
            for w, n in zip(cols.workload, cols.line, strict=True):
                trials[n], seen[w] = seen.get(w, 0), seen.get(w, 0) + 1
            self._trials[entry.work_dir] = trials
        return self._trials[entry.work_dir][line]

    def _columns(self, work_dir: Path) -> db_files.RecordColumns:
        """A work dir's record columns, read once per library."""
        if work_dir not in self._cols:
            with warnings.catch_warnings():  # the library named this source's problems already
                warnings.simplefilter("ignore")
                count = _nonblank_lines(work_dir / db_files.WORKLOAD_FILE)
                self._cols[work_dir] = db_files.read_record_columns(
                    work_dir / db_files.RECORD_FILE, count)
        return self._cols[work_dir]

    def workload_mod(self, entry: LibraryEntry) -> Any:
        """The entry's workload as an IRModule (parsed from its workload file once)."""
        key = (entry.work_dir, entry.workload)
        if key not in self._mods:
            with warnings.catch_warnings():  # the library named this source's problems already
                warnings.simplefilter("ignore")
                line = db_files.read_workloads(entry.work_dir / db_files.WORKLOAD_FILE)[
                    entry.workload]
            if line is None:
                raise ValueError(f"{entry.work_dir}: workload line {entry.workload + 1} of "
                                 f"{db_files.WORKLOAD_FILE} is corrupt")
            self._mods[key] = compat.Workload.from_json([line.shash, line.payload]).mod
        return self._mods[key]
