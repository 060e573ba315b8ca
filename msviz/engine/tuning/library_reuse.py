"""What a session takes from a tuning library (:class:`msviz.records.library.Library`): the
records of other runs, read-only.

Before the first trial, for each task of the session (one the work dir holds no record of):

* **exact hit** (same workload, same target): the library's fastest records of it are written
  into the run's database (``origin="library"``, ``carry="exact"``; not measured again, not
  counted as trials), so the task starts at the library's best and ``compile_relax`` on the work
  dir finds its kernel. ``reuse="skip"`` then gives the task no trials; ``reuse="improve"``
  (default) tunes it on, its population seeded by those records (MetaSchedule's database
  picks) and the cost model trained on them;
* **anchor-block match or sibling** (the same anchor block with another epilogue; the same
  operator at another shape, any target): the fastest traces of the nearest library workloads
  are carried to the task (:func:`msviz.trace.carry.carry_trace`: each decision that is no
  longer valid mapped to the nearest valid choice, then the target's postprocs) and measured in
  the task's first batch, with the search's picks filling the rest. A carry that does not
  replay is counted and never measured;
* the shared cost model is trained first on the library's records of this target (a bounded
  sample of each matched workload's records, replayed on their own workloads, labelled per
  workload as ``XGBModel`` groups them), and a matched task's warm-up batches are ranked by it
  instead of at random.

The coverage of the tasks (:func:`msviz.records.coverage.coverage`) is a ``library_coverage``
event and sidecar line; what was reused, a ``library_reuse`` event and sidecar line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msviz import compat
from msviz.engine.arguments import check_reuse, library_paths
from msviz.engine.measure import callbacks
from msviz.engine.measure.results import MeasureResult
from msviz.engine.tuning.carried import Carried, carried, ranked
from msviz.engine.tuning.stored import mean_secs, training_sample
from msviz.records.coverage import coverage as coverage_of
from msviz.records.coverage_types import Coverage, coverage_to_dict
from msviz.records.library import Library, LibraryEntry
from msviz.trace.carry import carry_trace

if TYPE_CHECKING:  # the tuner's type only: the tuner does not import this module
    from msviz.engine.tuning.tuner import Tuner

__all__ = ["CARRIED_AT_MOST", "EXACT_RECORDS", "PRETRAIN_AT_MOST", "LibraryReuse", "open_library"]

#: The library's fastest records of an exact hit written into the run's database.
EXACT_RECORDS = 16
#: Library workloads whose traces are carried to an anchor-block or sibling task, nearest first.
CARRY_SOURCES = 4
#: Fastest records carried from each of them (the cost model, trained on the library first,
#: ranks all the carries; the best-ranked fill the first batch).
CARRY_PER_SOURCE = 8
#: Carried schedules measured in a task's first batch, at most (and at most the batch).
CARRIED_AT_MOST = 16
#: Library records of one workload the cost model is pre-trained on (spread over their ranking).
PRETRAIN_PER_WORKLOAD = 32
#: Library records the cost model is pre-trained on, in all.
PRETRAIN_AT_MOST = 768


def open_library(library: Any) -> Library:
    """A :class:`Library` of a path, a list of paths, or itself."""
    if isinstance(library, Library):
        return library
    return Library(library_paths(library))


def _source_text(entry: LibraryEntry, trial: int | None = None) -> str:
    name = entry.task or f"workload {entry.workload}"
    return f"{entry.source}/{name}" + (f" trial {trial}" if trial is not None else "")


def _record_of(library: Library, entry: LibraryEntry, body: Any, mod: Any) -> Any:
    """The TuningRecord of a library record's JSON body on ``mod`` (its own workload's)."""
    compat.register_intrins_for(body)
    return compat.tuning_record_from_json(body, compat.ms.database.Workload(mod))


class LibraryReuse:
    """What one session takes from a library (see the module's docstring).

    Parameters
    ----------
    library : Library
        The library (read-only).
    target : Target
        The session's target: only records of it are exact hits, anchor matches or training.
    reuse : {"improve", "skip"}
        What an exact hit does.
    warn : callable
        ``warn(message)``: a ``warning`` event.
    """

    def __init__(self, library: Library, target: Any, reuse: str, warn: Any) -> None:
        self.library = library
        self.target = target
        self.target_text = Library.target_text(target)
        self.reuse = check_reuse(reuse)
        self.warn = warn
        #: Per task index: what was reused (the ``library_reuse`` event's rows).
        self.tasks: dict[int, dict] = {}
        self.pretrained = 0
        self._matches: dict[int, tuple[str, list[LibraryEntry]]] = {}

    def _match(self, tuner: Tuner) -> tuple[str, list[LibraryEntry]]:
        """What the library holds for a tuner's task (looked up once per task)."""
        if tuner.task_index not in self._matches:
            self._matches[tuner.task_index] = self.library.match(tuner.workload.mod, self.target)
        return self._matches[tuner.task_index]

    # -- coverage -----------------------------------------------------------------------------

    def coverage(self, tasks: list, *, model: str, untuned_us: dict[str, float | None]
                 ) -> Coverage:
        """The tasks' coverage (untuned times by task name, None where unknown)."""
        by_index = {t.index: untuned_us.get(t.name) for t in tasks}
        known = {i: v for i, v in by_index.items() if v is not None}
        return coverage_of(tasks, self.library, self.target, model=model,
                           untuned_us=known if len(known) == len(tasks) else None)

    @staticmethod
    def coverage_data(cov: Coverage) -> dict:
        return {"coverage": coverage_to_dict(cov)}

    # -- per task -----------------------------------------------------------------------------

    def prepare(self, tuner: Tuner, batch: int) -> dict:
        """Reuse what the library holds for one tuner's task (set up, holding no record of
        its own yet): an exact hit's records committed, or schedules carried for its first
        batch (``tuner.carried``). Returns the task's ``library_reuse`` row."""
        kind, entries = self._match(tuner)
        row = {"index": tuner.task_index, "name": tuner.task, "match": kind, "committed": 0,
               "tried": 0, "replayed": 0, "failed": {}, "source": None, "reuse": self.reuse}
        if tuner.next_task_trial or kind == "none" or tuner.search is None:
            row["match"] = kind if not tuner.next_task_trial else "resumed"
            self.tasks[tuner.task_index] = row
            return row
        carried: list[Carried] = []
        if kind == "exact":
            self._commit_exact(tuner, entries[0], row)
        else:
            carried = self._carry(tuner, entries, kind, min(batch, CARRIED_AT_MOST), row)
        tuner.carry_in(carried, ranked_by_library=True)
        self.tasks[tuner.task_index] = row
        return row

    def _commit_exact(self, tuner: Tuner, entry: LibraryEntry, row: dict) -> None:
        mod = tuner.workload.mod
        row["source"] = _source_text(entry)
        best = self.library.best_records(entry, EXACT_RECORDS)
        for rec, body in best:
            try:
                record = _record_of(self.library, entry, body, mod)
                cand = record.as_measure_candidate()
            except Exception as err:  # TVM's errors: a trace of another TVM that won't replay
                row["failed"][type(err).__name__] = row["failed"].get(type(err).__name__, 0) + 1
                continue
            hit = carried(cand.sch, "exact",
                          _source_text(entry, self.library.trial_of(entry, rec.line)))
            info = {k: v for k, v in hit.info().items() if k != "shash"}
            res = MeasureResult(tuple(float(s) for s in rec.run_secs), None, None)
            callbacks.add_to_database(tuner, cand.sch, cand.args_info, res, info, batch=None,
                                      generation=None)
            tuner.committed(hit.shash)
            row["committed"] += 1
        if row["committed"] and self.reuse == "skip":
            tuner.skip(f"reused the library's best ({row['source']}, "
                       f"{tuner.best_secs * 1e6:.1f} us; reuse='skip')")

    def _carry(self, tuner: Tuner, entries: list[LibraryEntry], kind: str, at_most: int,
               row: dict) -> list[Carried]:
        mod = tuner.workload.mod
        postprocs = [(type(p).__name__, p)
                     for p in list(tuner.context.space_generator.postprocs or [])]
        seen: set[int] = set(tuner.search.measured)
        found: list[Carried] = []
        for entry in entries[:CARRY_SOURCES]:
            if row["source"] is None:
                row["source"] = _source_text(entry)
            try:
                entry_mod = self.library.workload_mod(entry)
            except Exception as err:  # the library's workload of another TVM: not readable
                row["failed"]["workload"] = row["failed"].get("workload", 0) + 1
                self.warn(f"library: {_source_text(entry)}: its workload does not read ({err})")
                continue
            for rec, body in self.library.best_records(entry, CARRY_PER_SOURCE):
                row["tried"] += 1
                try:
                    trace = _record_of(self.library, entry, body, entry_mod).trace
                except Exception:  # TVM's errors: a trace that no longer reads
                    row["failed"]["read"] = row["failed"].get("read", 0) + 1
                    continue
                carry = carry_trace(trace, mod, postprocs)
                if carry.schedule is None:
                    key = (carry.error or "replay").split(":")[0][:60]
                    row["failed"][key] = row["failed"].get(key, 0) + 1
                    continue
                row["replayed"] += 1
                one = carried(carry.schedule, kind,
                              _source_text(entry, self.library.trial_of(entry, rec.line)),
                              carry.adjusted)
                if one.shash in seen:
                    continue
                seen.add(one.shash)
                found.append(one)
        found = ranked(tuner, found)[:at_most]
        row["measured"] = len(found)
        return found

    # -- the cost model -------------------------------------------------------------------------

    def pretrain(self, shared: Any, tuners: list) -> int:
        """Train the shared cost model on the library's records of the matched workloads on
        this target (at most :data:`PRETRAIN_PER_WORKLOAD` each, :data:`PRETRAIN_AT_MOST` in
        all); returns the samples trained on."""
        entries: dict[tuple[str, int], LibraryEntry] = {}
        for tuner in tuners:
            kind, found = self._match(tuner)
            for entry in found[:CARRY_SOURCES] if kind != "none" else []:
                if entry.target == self.target_text:
                    entries.setdefault((entry.source, entry.workload), entry)
        left = PRETRAIN_AT_MOST
        trained = 0
        for entry in entries.values():
            if left <= 0:
                break
            records = self.library.ranked(entry)
            picks = training_sample([mean_secs(r.run_secs) for r in records],
                                    at_most=min(PRETRAIN_PER_WORKLOAD, left))
            try:
                mod = self.library.workload_mod(entry)
            except Exception:  # the library's workload of another TVM: not readable
                continue
            cands, results = [], []
            for i in picks:
                rec = records[i]
                try:
                    body = self.library.record_json(entry, rec)
                    cands.append(_record_of(self.library, entry, body, mod)
                                 .as_measure_candidate())
                except Exception:  # TVM's errors: a trace that no longer replays
                    continue
                results.append(compat.ms.runner.RunnerResult(
                    [float(s) for s in rec.run_secs], None))
            if not cands:
                continue
            context = compat.ms.TuneContext(mod=mod, target=self.target,
                                            num_threads=shared.num_threads)
            callbacks.train(shared.cost_model, context, cands, results, shared.num_threads)
            trained += len(cands)
            left -= len(cands)
        self.pretrained = trained
        return trained

    def reuse_data(self) -> dict:
        """The ``library_reuse`` event's (and sidecar line's) data."""
        rows = [self.tasks[i] for i in sorted(self.tasks)]
        return {"tasks": rows, "pretrained": self.pretrained, "reuse": self.reuse,
                "committed": sum(r["committed"] for r in rows),
                "tried": sum(r["tried"] for r in rows),
                "replayed": sum(r["replayed"] for r in rows),
                "measured": sum(r.get("measured", 0) for r in rows)}
