"""The tuning work of one task, run on the session's worker thread, one stage at a time.

:meth:`Tuner.run_batch` is a generator: it yields ``"stage"`` after each search stage and
``"batch"`` after the measured batch, which is where the session pauses, stops and applies
commands (the task loop, :mod:`msviz.engine.task_scheduler.task_loop`, drives it). The
search is one driver per strategy (:mod:`msviz.engine.search.evolution`,
:mod:`msviz.engine.search.replay_trace`), made by :func:`msviz.engine.search.create`; the
measure-callback steps live in :mod:`msviz.engine.measure.callbacks`, re-measurement in
:mod:`msviz.engine.measure.remeasure`.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msviz import compat
from msviz.engine.measure import callbacks
from msviz.engine.measure.check import ResultChecker
from msviz.engine.measure.remeasure import index_stored_lines, remeasure
from msviz.engine.measure.results import UNMEASURED_KINDS
from msviz.engine.measure.service import MeasuringService
from msviz.engine.profile import Profile
from msviz.engine.search import factory as search_strategies
from msviz.engine.search.candidates import decisions_of
from msviz.engine.search.evolution import EvolutionarySearch
from msviz.engine.search.generation import Generation
from msviz.engine.search.quarantine import Quarantine
from msviz.engine.search.replay_trace import ReplayTrace
from msviz.engine.tuning.carried import Carried
from msviz.engine.tuning.stored import (
    best_history_ms,
    learn_from_database,
)
from msviz.engine.tuning.workdir import (
    close_logger,
    task_logger,
    workload_index,
)
from msviz.errors import MsvizError
from msviz.records import row
from msviz.records.sidecar import QUARANTINE_KIND
from msviz.space_generator.intrinsics import unused as unused_intrins
from msviz.space_generator.rules import RuleSet

if TYPE_CHECKING:  # types only: msviz.engine.config imports the scheduler; shared, the tuner
    from msviz.engine.config import SessionConfig
    from msviz.engine.tuning.shared import SharedParts

__all__ = ["INFRA_BATCHES_BEFORE_FAILING", "InfrastructureError", "Tuner"]

#: Batches in a row lost entirely to infrastructure failures before the session fails.
INFRA_BATCHES_BEFORE_FAILING = 3


class InfrastructureError(MsvizError, RuntimeError):
    """Measuring keeps failing for reasons outside the schedules (runner, device, watchdog)."""


class Tuner:
    """Everything one task's tuning needs: context, spaces, search, database, sidecar, measurer.

    Parameters
    ----------
    config : SessionConfig
        The session's settings (target, knobs, strategy, threads, check, builder and runner).
    workload, work_dir, rules, seed, task_index
        The task's workload, the session's work dir, the task's rules now, seed
        (:func:`task_seed`) and index.
    emit : callable
        ``emit(kind, task, **data)`` appends an event.
    shared : SharedParts, optional
        The parts every task shares (its own, opened by :meth:`setup`, if None).
    profile : Profile, optional
        The session's profile (None: nothing is timed). Call :meth:`setup` on the worker
        thread first.
    """

    def __init__(self, config: SessionConfig, *, workload: Any, work_dir: Path, rules: RuleSet,
                 seed: int, emit: Any, task_index: int = 0, shared: SharedParts | None = None,
                 profile: Profile | None = None) -> None:
        self.config = config
        self.workload = workload
        #: The session's profile (None: nothing is timed).
        self.profile = profile
        self.checker = ResultChecker(workload.mod, config.target, seed=seed, mode=config.check)
        self.task = workload.name
        self.target = config.target
        self.work_dir = Path(work_dir)
        self.knobs = config.knobs
        self.rules = rules
        self.seed = seed
        self.num_threads = config.num_threads
        self.measurer_options = config.measurer_options()
        self._emit = emit
        self.task_index = task_index
        self.batch = 0
        self.generation = 0
        #: Trials that count toward ``max_trials`` (infrastructure failures do not).
        self.trials_done = 0
        self.next_task_trial = 0
        self.best_secs = math.inf  # by the mean of run_secs, as the database ranks records
        #: Best median latency (ms; 1e9 while none ran): how the task scheduler and the stock
        #: log lines time trials (``GetRunMsMedian``).
        self.best_median_ms = 1e9
        self.ready = False
        self.line_by_hash: dict[int, int] = {}
        self._lines_lock = threading.Lock()
        self._stored_indexed = False
        self._space_changed = False
        self._infra_batches = 0
        self._own_shared = shared is None
        self.shared = shared if shared is not None else SharedParts(config,
                                                                    work_dir=self.work_dir)
        #: Best latency (ms) of all trials so far after each batch (the task scheduler's
        #: ``best_latency_history_``; 1e9 while none ran); continues on resume.
        self.best_history_ms: list[float] = []
        #: Why the search ended (None while it goes on).
        self.end_reason: str | None = None
        self.search: EvolutionarySearch | ReplayTrace | None = None
        #: What raised in this task's search (skipped, counted; see ``quarantine`` events).
        self.quarantine = Quarantine(self.task)
        #: Schedules carried from a tuning library, measured first (:meth:`carry_in`).
        self.carried: list[Carried] = []
        #: Why the task gets no trials (an exact library hit with ``reuse="skip"``), or None.
        self.skip_reason: str | None = None
        self.sibling_source: Any = None  #: SiblingCarry.carries, or None

    # the parts every task shares
    database = property(lambda self: self.shared.database)
    cost_model = property(lambda self: self.shared.cost_model)
    sidecar = property(lambda self: self.shared.sidecar)

    @property
    def measurer(self) -> MeasuringService | None:
        return self.shared.measurer

    @measurer.setter
    def measurer(self, value: MeasuringService | None) -> None:
        self.shared.measurer = value

    @property
    def next_line(self) -> int:
        return self.shared.next_line

    @next_line.setter
    def next_line(self, value: int) -> None:
        self.shared.next_line = value

    @property
    def evo(self) -> EvolutionarySearch | None:
        """The evolutionary search (None for the replay strategy)."""
        return self.search if isinstance(self.search, EvolutionarySearch) else None

    def emit(self, kind: str, **data: Any) -> None:
        with self.timeit("msviz/Events"):
            self._emit(kind, self.task, task_index=self.task_index, **data)

    def timeit(self, stage: str) -> Any:
        """Time a stage in the session's profile (nothing without one)."""
        return self.profile.timeit(stage) if self.profile is not None \
            else contextlib.nullcontext()

    # -- set up -----------------------------------------------------------------------------------

    def setup(self) -> None:
        """Open the work dir (repairing a torn tail), build the context, spaces and search."""
        wd = self.work_dir
        if self._own_shared:
            self.shared.open(lambda message: self.emit("warning", message=message))
        self.logger = task_logger(wd, self.task_index, self.task, self._emit)
        self.token = self.database.commit_workload(self.workload.mod)
        self.workload_index = workload_index(wd, compat.structural_hash(self.workload.mod))
        self._continue_from_work_dir()
        self._make_context(self.rules)
        if self.next_task_trial and self.knobs.skip_db_measured:
            self._learn_from_database()
        self.ready = True

    def _continue_from_work_dir(self) -> None:
        """Counters and lineage continue from what the work dir holds (``resume=True``)."""
        records = self.shared.stored.of(self.workload_index)
        side = self.shared.stored.trials
        self._infra_lines = {r.line for r in records
                             if side.get(r.line, {}).get("error_kind") in UNMEASURED_KINDS}
        self.next_task_trial = len(records)
        edits = {r.line for r in records if side.get(r.line, {}).get("origin") == "edit"
                 or side.get(r.line, {}).get("carry") == "exact"}  # not measured here
        self.trials_done = len(records) - len(self._infra_lines | edits)
        ok = [row.mean_latency_us(r.run_secs) / 1e6 for r in records]
        self.best_secs = min((x for x in ok if not math.isnan(x)), default=math.inf)
        medians = [row.median_latency_us(r.run_secs) / 1e3 for r in records]
        self.best_median_ms = min((x for x in medians if not math.isnan(x)), default=1e9)
        mine = [side[r.line] for r in records if r.line in side]
        batches = [e["batch"] for e in mine if isinstance(e.get("batch"), int)]
        gens = [e["generation"] for e in mine if isinstance(e.get("generation"), int)]
        self.batch = max(batches, default=-1) + 1
        self.generation = max(gens, default=-1) + 1
        for entry in mine:
            if entry.get("shash") is not None:
                self.line_by_hash.setdefault(int(entry["shash"]), int(entry["line"]))
        self.best_history_ms = best_history_ms(records, side)

    def line_of(self, shash: int) -> int | None:
        """The record line of a stored schedule (by structural hash), or None.

        Filled from the sidecar's ``shash`` of each trial when the tuner opens the work dir, so
        the lineage of stored records survives a resume."""
        return self.line_by_hash.get(shash)

    def line_of_stored(self, shash: int) -> int | None:
        """:meth:`line_of`, hashing every stored record once on a miss (records that
        predate the sidecar's hashes); for re-measurement."""
        with self._lines_lock:
            if shash not in self.line_by_hash and not self._stored_indexed:
                self._stored_indexed = True
                index_stored_lines(self)
        return self.line_by_hash.get(shash)

    def _make_context(self, rules: RuleSet) -> None:
        context = compat.ms.TuneContext(
            mod=self.workload.mod, target=self.target,
            space_generator=rules.space_generator(self.target),
            search_strategy=None, task_name=self.task, rand_state=self.seed,
            num_threads=self.num_threads, logger=self.logger,
        )
        try:
            spaces = list(context.generate_design_space())
        except Exception as err:
            if self.search is not None:  # new rules (set_rules): the caller hears of it
                raise
            # a schedule rule raised while setting the task up: skip this task (a model's
            # other tasks go on; make_tuners fails a session none of whose tasks has spaces)
            self.context = context  # still good for re-measuring
            self.quarantine.add("design_space", "generate_design_space", err)
            self.report_quarantine()
            return
        self.context = context
        for message in rules.skipped + unused_intrins(  # tensor intrinsics that cannot work
                [i for i in rules.intrinsics() if not any(repr(i) in m for m in rules.skipped)],
                spaces, self.workload):
            self.emit("warning", message=message)
        self.emit("design_spaces", count=len(spaces), rules=str(rules), spaces=[
            {"index": i, "trace": "\n".join(s.trace.as_python(remove_postproc=True)),
             "decisions": decisions_of(s.trace)} for i, s in enumerate(spaces)])
        if self.search is not None:
            self.search.set_space(self.context, spaces)
        else:
            self.search = search_strategies.create(
                self.config.strategy, self.context, spaces, seed=self.seed,
                num_threads=self.num_threads, quarantine=self.quarantine,
                database=self.database, workload=self.token, cost_model=self.cost_model,
                knobs=self.knobs, line_of=self.line_of, timeit=self.timeit)

    def report_quarantine(self) -> None:
        """A ``quarantine`` event and a sidecar line for each entry that changed."""
        for entry in self.quarantine.take_changed():
            if self.shared.ready:
                self.sidecar.write(QUARANTINE_KIND, **entry)
            self.emit(QUARANTINE_KIND, **{k: v for k, v in entry.items() if k != "task"})

    def _learn_from_database(self) -> None:
        """msviz preset: never re-pick a stored schedule, and train the model on a bounded sample
        of the stored records (:func:`msviz.engine.tuning.stored.learn_from_database`)."""
        learn_from_database(self)

    def set_rules(self, rules: RuleSet) -> None:
        """Regenerate the design spaces from new rules; same database and cost model.

        A generation under way is abandoned; the next one starts from its initial population,
        built with the new rules.
        """
        self.rules = rules
        self._make_context(rules)
        self._space_changed = True
        self.emit("rules_set", rules=str(rules))

    def close(self) -> None:
        """Free threads, workers and files (the database files stay)."""
        if self.search is not None:
            self.search.close()
        if self._own_shared:
            self.shared.close()
        if self.ready:
            close_logger(self.logger)
        self.ready = False

    # -- the loop ---------------------------------------------------------------------------------

    def run_batch(self, n: int) -> Generator[str, None, str | None]:
        """One batch of at most ``n`` trials: search, then measure (yields ``"stage"`` after
        each search stage, ``"batch"`` after measuring).

        Returns ``"measured"``, ``"empty"`` (the search picked nothing new this time), or None
        when the search has ended (``None`` from ``GenerateMeasureCandidates``; the reason is
        :attr:`end_reason`).
        """
        if self.skip_reason is not None:
            self.end_reason = self.skip_reason
            return None
        if self.sibling_source is not None and not self.carried:
            with self.timeit("msviz/SiblingCarry"):
                self.carried = self.sibling_source(self)[:max(n // 2, 1)]
        carried, self.carried = self.carried[:n], []
        if carried:
            self.search.measured.update(c.shash for c in carried)
        n -= len(carried)
        while True:
            self._space_changed = False
            if carried and n <= 0:  # the batch is the library's schedules alone
                self.measure_carried(carried)
                yield "batch"
                return "measured"
            if self.search is None:  # no design space could be generated (quarantined)
                self.end_reason = ("its design spaces could not be generated (see "
                                   "session.quarantine)")
                return None
            generation = Generation(self.search.generate(n, generation=self.generation),
                                    timeit=self.timeit)
            for stage in generation:
                self.report_quarantine()
                self.emit(stage.kind, **stage.data)
                yield "stage"
                if self._space_changed:  # new rules: start a generation from them
                    generation.close()
                    break
            picks = generation.picks
            if self._space_changed:
                self._space_changed = False
                self.generation += 1
                continue
            self.generation += 1
            if picks is None and carried:  # the search ended: the library's schedules still run
                picks = []
            if picks is None:
                self.end_reason = self.search.stop_reason or "the search found no more candidates"
                return None
            if not picks and not carried:
                self._record_best()
                return "empty"
            items = self._carried_items(carried) + [
                (c.sch, compat.ArgInfo.from_entry_func(c.sch.mod, remove_preproc=True),
                 {**c.lineage(), "pick": c.pick, "predicted_score": c.score,
                  "shash": str(c.shash)}, c.shash)
                for c in picks
            ]
            self.measure_batch(items, generation=self.generation - 1)
            self._record_best()
            yield "batch"
            return "measured"

    def carry_in(self, carried: list[Carried], *, ranked_by_library: bool = False) -> None:
        """Schedules carried to this task, measured first in its next batch (a library's);
        ``ranked_by_library``: the cost model ranking the warm-up learned the library first."""
        self.carried = list(carried)
        if ranked_by_library and self.evo is not None:
            self.evo.library_ranked = True

    def committed(self, shash: int) -> None:
        """A record committed to the database without measuring (a library's exact hit): the
        search never picks its schedule again."""
        if self.search is not None:
            self.search.measured.add(int(shash))

    def skip(self, reason: str) -> None:
        """Give this task no trials (``reason`` becomes its end reason)."""
        self.skip_reason = reason

    @staticmethod
    def _carried_items(carried: list[Carried]) -> list[tuple[Any, Any, dict, int]]:
        return [(c.schedule, compat.ArgInfo.from_entry_func(c.schedule.mod, remove_preproc=True),
                 c.info(), c.shash) for c in carried]

    def measure_carried(self, carried: list[Carried], *, learn: bool = True) -> list[dict]:
        """A batch of carried schedules alone (a library's, another shape's); returns the
        ``measured`` event's rows. With ``learn=False`` the cost model is not updated (a
        session that only measures)."""
        self.emit("picked", generation=self.generation, requested=len(carried), by_score=0,
                  by_random=0, by_library=len(carried), failures={}, candidates=[
                      {**c.info(), "decisions": decisions_of(c.schedule.trace)}
                      for c in carried])
        rows = self.measure_batch(self._carried_items(carried), generation=self.generation,
                                  learn=learn)
        self.generation += 1
        self._record_best()
        return rows

    def _record_best(self) -> None:
        """``GradientBased::JoinRunningTask``: append the best latency of all trials so far."""
        if self.next_task_trial > 0:
            self.best_history_ms.append(self.best_median_ms)

    def measure_batch(self, items: list[tuple[Any, Any, dict, int]], *,
                      generation: int | None, learn: bool = True) -> list[dict]:
        """Build, run, commit, update the cost model; one event per step; then close the
        batch's row of the profile (a ``profile`` event). Returns the trials' rows."""
        measurer, timeit = self.measurer, self.timeit
        batch = self.batch
        with timeit("SendToBuilder"):
            built = measurer.build([item[0].mod for item in items])
        self.emit("built", batch=batch, results=[
            {"ok": b.error is None, "error": b.error} for b in built])
        with timeit("SendToRunner"):
            results = measurer.run(built, [item[1] for item in items])
        # after the batch's timings, before the artifacts go: wrong results become failures
        with timeit("msviz/CheckResults"):
            results = self.checker.check_batch(items, built, results, self.best_secs)
        with timeit("MeasureCallback/RemoveBuildArtifact"):
            measurer.cleanup(built)
        with timeit("MeasureCallback/AddToDatabase"):
            rows = [callbacks.add_to_database(self, sch, args, res, info, batch=batch,
                                              generation=generation)
                    for (sch, args, info, _), res in zip(items, results)]
        self.emit("measured", batch=batch, trials=rows, best_us=self.best_secs * 1e6
                  if math.isfinite(self.best_secs) else None)
        infra = [item[3] for item, r in zip(items, results)
                 if r.error_kind in UNMEASURED_KINDS]  # infra failures, lost devices
        self.search.forget(infra)  # may be picked again: the schedule was never measured
        if learn:
            with timeit("MeasureCallback/UpdateCostModel"):
                updated = callbacks.update_cost_model(self, items, results, batch)
            if self.evo is not None:
                self.evo.trained_on(updated["trained_on"])
            self.emit("cost_model_updated", **updated)
        self.batch += 1
        if self.profile is not None:
            row = self.profile.close(self.task, batch)
            self.sidecar.write("profile", **row)  # msviz.open(work_dir).profile has it too
            self.emit("profile", **self.profile.event_data(row))
        self._check_infrastructure(results)
        return rows

    def _check_infrastructure(self, results: list) -> None:
        if results and all(r.error_kind in UNMEASURED_KINDS for r in results):
            self._infra_batches += 1
        else:
            self._infra_batches = 0
        if self._infra_batches >= INFRA_BATCHES_BEFORE_FAILING:
            raise InfrastructureError(
                f"the last {self._infra_batches} batches could not be measured at all, for "
                f"reasons outside the schedules (infrastructure): {results[0].error}")

    def remeasure(self, what: Any, repeats: int) -> dict:
        """Build and run one schedule again (see
        :func:`msviz.engine.measure.remeasure.remeasure`)."""
        return remeasure(self, what, repeats)
