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

import json
import math
import os
import shutil
import tempfile
import warnings
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from msviz import compat
from msviz.errors import BundleError, MsvizWarning
from msviz.records import bundle as bundle_files
from msviz.records import database as db_files
from msviz.records import targets
from msviz.records.library_cache import input_stats as _input_stats
from msviz.records.library_cache import load as _load_cache
from msviz.records.library_cache import save as _save_cache
from msviz.records.library_index import (
    INDEX_FORMAT,
    LibraryEntry,
    entries_of,
    find_sources,
    index_work_dir,
    module_keys,
    nonblank_lines,
    other_tvm,
    text_of,
    workload_keys,
)
from msviz.records.many_runs import run_names
from msviz.records.row import mean_run_secs, valid_run_secs
from msviz.records.task_match import distance as extents_distance

__all__ = ["Library", "LibraryEntry", "workload_keys"]


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
        why = ("Library takes a path or a list of paths (work dirs, bundles, folders of them)"
               ", each a str or Path")
        if isinstance(paths, (bytes, dict)) or not isinstance(paths, (str, os.PathLike,
                                                                     Iterable)):
            raise TypeError(f"{why}, not {type(paths).__name__} {paths!r}")
        given = ([paths] if isinstance(paths, (str, os.PathLike)) else list(paths))
        odd = [p for p in given if not isinstance(p, (str, os.PathLike))]
        if odd:
            raise TypeError(f"{why}: {odd[0]!r} ({type(odd[0]).__name__}) is not a path")
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
        for path, bundle in find_sources([Path(p) for p in given], self.problems):
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
            other = other_tvm(path, isinstance(versions, dict) and versions.get("tvm"))
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
                    found = entries_of(work_dir, index)
                except (AttributeError, KeyError, TypeError, ValueError):
                    index = None
            if index is None:
                index = index_work_dir(work_dir, self._texts)
                if self._cache:
                    _save_cache(path, key, index)
                found = entries_of(work_dir, index)
        except Exception as err:  # OSError, or whatever else a corrupt source makes TVM raise
            why = getattr(err, "strerror", None) or err
            self.problems.append(f"{path}: cannot be read ({why})")
            return None
        other = other_tvm(path, index.get("tvm"))
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
        (:func:`~msviz.records.task_match.distance` of the extents), then the fastest."""
        shash, anchor, op, extents, dtype = module_keys(mod)
        if op is None:
            return []
        text = None if target is None else self.target_text(target)

        def hit(e: LibraryEntry) -> bool:
            same = e.anchor == anchor or e.shash == shash
            return same and (text is None or e.target == text)

        found = [e for e in self._by["op"].get(op, ())
                 if len(e.extents) == len(extents) and not hit(e)
                 and dtype in (None, self._dtypes.get((e.source, e.workload)) or dtype)]

        return sorted(found, key=lambda e: (text is not None and e.target != text,
                                            extents_distance(tuple(e.extents), tuple(extents)),
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
            and text_of(raw, self._texts) == entry.target)
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
                count = nonblank_lines(work_dir / db_files.WORKLOAD_FILE)
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
