"""The tuning work of one task, run on the session's worker thread, one stage at a time.

:meth:`Tuner.stages` is a generator: it yields ``"stage"`` after each search stage and ``"batch"``
after each measured batch, which is where the session pauses, stops and applies commands. It
drives either msviz's port of the evolutionary search or MetaSchedule's own ``ReplayTrace``, and
does by hand what ``TaskScheduler``'s measure callbacks do (add to database, remove build
artifacts, update cost model), plus the sidecar and events.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import numpy as np

from msviz import compat
from msviz.engine.evolution import EvolutionarySearch, decisions_of
from msviz.engine.measure import Measurer, MeasureResult
from msviz.engine.presets import SearchKnobs
from msviz.engine.rules import RuleSet
from msviz.engine.workdir import (
    close_logger,
    count_lines,
    repair_torn_tail,
    task_logger,
    workload_index,
)
from msviz.records import database as db_files
from msviz.records.sidecar import SidecarWriter

__all__ = ["Tuner"]

_XGB_LOGGER = "tvm.s_tir.meta_schedule.cost_model.xgb_model"


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class Tuner:
    """Everything one task's tuning needs: context, spaces, search, database, sidecar, measurer.

    Parameters are the Session's (see :class:`msviz.Session`); ``emit(kind, task, **data)``
    appends an event. Call :meth:`setup` on the worker thread first.
    """

    def __init__(self, *, workload: Any, target: Any, work_dir: Path, knobs: SearchKnobs,
                 strategy: str, rules: RuleSet, seed: int, num_threads: int, max_trials: int,
                 trials_per_batch: int, measurer_options: dict, emit: Any,
                 task_index: int = 0) -> None:
        self.workload = workload
        self.task = workload.name
        self.target = target
        self.work_dir = Path(work_dir)
        self.knobs = knobs
        self.strategy = strategy
        self.rules = rules
        self.seed = seed
        self.num_threads = num_threads
        self.max_trials = max_trials
        self.trials_per_batch = trials_per_batch
        self.measurer_options = measurer_options
        self._emit = emit
        self.task_index = task_index
        self.batch = 0
        self.generation = 0
        self.trials_done = 0
        self.best_secs = math.inf
        self.ready = False
        self._line_by_hash: dict[int, int] = {}
        self._space_changed = False
        self.measurer: Measurer | None = None
        self.evo: EvolutionarySearch | None = None
        #: Seconds spent generating candidates / building+running / updating the cost model.
        self.timing = {"search": 0.0, "measure": 0.0, "cost_model": 0.0}

    def emit(self, kind: str, **data: Any) -> None:
        self._emit(kind, self.task, task_index=self.task_index, **data)

    # -- set up -----------------------------------------------------------------------------------

    def setup(self) -> None:
        """Open the work dir (repairing a torn tail), build the context, spaces and search."""
        wd = self.work_dir
        wd.mkdir(parents=True, exist_ok=True)
        for name in (db_files.WORKLOAD_FILE, db_files.RECORD_FILE):
            torn = repair_torn_tail(wd / name)
            if torn is not None:
                self.emit("warning", message=f"cut a torn last line off {name} "
                          f"(kept in msviz_torn_lines.txt): {torn[:80]!r}")
        self.logger = task_logger(wd, self.task_index, self.task, self._emit)
        self.database = compat.JSONDatabase(work_dir=str(wd))
        self.token = self.database.commit_workload(self.workload.mod)
        self.workload_index = workload_index(wd, compat.structural_hash(self.workload.mod))
        self.next_line = count_lines(wd / db_files.RECORD_FILE) + 1
        records = [r for r in db_files.read_records(wd / db_files.RECORD_FILE, 10**9)
                   if r.workload == self.workload_index]
        self.trials_done = len(records)
        ok = [sum(r.run_secs) / len(r.run_secs) for r in records
              if r.run_secs and max(r.run_secs) < compat.FAILED_RUN_SECS]
        self.best_secs = min(ok, default=math.inf)
        self.sidecar = SidecarWriter(wd)
        from tvm.s_tir.meta_schedule.cost_model import XGBModel

        self.cost_model = XGBModel(num_warmup_samples=self.knobs.cost_model_warmup,
                                   num_tuning_cores=self.num_threads)
        self.measurer = Measurer(self.target, **self.measurer_options)
        self._make_context(self.rules)
        if self.trials_done and self.knobs.skip_db_measured:
            self._learn_from_database()
        self.ready = True

    def _make_context(self, rules: RuleSet) -> None:
        strategy = None
        if self.strategy == "replay":
            strategy = compat.ms.search_strategy.ReplayTrace(max_fail_count=100)
        self.context = compat.ms.TuneContext(
            mod=self.workload.mod, target=self.target, space_generator=rules.space_generator(),
            search_strategy=strategy, task_name=self.task, rand_state=self.seed,
            num_threads=self.num_threads, logger=self.logger,
        )
        spaces = list(self.context.generate_design_space())
        self.emit("design_spaces", count=len(spaces), rules=str(rules), spaces=[
            {"index": i, "trace": "\n".join(s.trace.as_python(remove_postproc=True)),
             "decisions": decisions_of(s.trace)} for i, s in enumerate(spaces)])
        if self.strategy == "replay":
            self.context.pre_tuning(
                max_trials=max(1, self.max_trials - self.trials_done),
                num_trials_per_iter=self.trials_per_batch, design_spaces=spaces,
                database=self.database, cost_model=self.cost_model)
        elif self.evo is None:
            self.evo = EvolutionarySearch(
                self.context, spaces, self.database, self.token, self.cost_model, self.knobs,
                seed=self.seed, num_threads=self.num_threads, line_of=self._line_by_hash.get)
        else:
            self.evo.set_space(self.context, spaces)

    def _learn_from_database(self) -> None:
        """msviz preset: never re-pick a stored schedule, and train the model on stored records."""
        recs = list(self.database.get_all_tuning_records())
        cands, results = [], []
        for rec in recs:
            if not compat.structural_equal(rec.workload.mod, self.workload.mod):
                continue
            try:
                cand = rec.as_measure_candidate()
            except Exception:
                continue
            shash = int(compat.structural_hash(cand.sch.mod))
            self.evo.measured.add(shash) if self.evo is not None else None
            secs = [float(s) for s in rec.run_secs] if rec.run_secs else None
            if secs and max(secs) < compat.FAILED_RUN_SECS:
                cands.append(cand)
                results.append(compat.ms.runner.RunnerResult(secs, None))
        if cands:
            self.cost_model.update(self.context, cands, results)
        self.emit("cost_model_updated", batch=None, samples=int(getattr(
            self.cost_model, "data_size", len(cands))), source="database", trained_on=len(cands))

    def set_rules(self, rules: RuleSet) -> None:
        """Regenerate the design spaces from new rules; same database and cost model."""
        if self.strategy == "replay":
            self.context.post_tuning()
        self.rules = rules
        self._make_context(rules)
        self._space_changed = True
        self.emit("rules_set", rules=str(rules))

    def close(self) -> None:
        """Free threads, workers and files (the database files stay)."""
        if self.strategy == "replay" and self.ready:
            try:
                self.context.post_tuning()
            except Exception:  # pragma: no cover - already post-tuned
                pass
        if self.evo is not None:
            self.evo.close()
        if self.measurer is not None:
            self.measurer.close()
            self.measurer = None
        if self.ready:
            self.sidecar.close()
            close_logger(self.logger)
        self.ready = False

    # -- the loop ---------------------------------------------------------------------------------

    def stages(self) -> Generator[str, None, str]:
        """Tune until ``max_trials``; yields ``"stage"``/``"batch"``; returns why it ended."""
        while self.trials_done < self.max_trials:
            n = min(self.trials_per_batch, self.max_trials - self.trials_done)
            if self.strategy == "replay":
                tic = time.perf_counter()
                cands = self.context.generate_measure_candidates()
                self.timing["search"] += time.perf_counter() - tic
                if cands is None:
                    return "the replay search has no more candidates"
                items = [(c.sch, c.args_info, {"origin": "fresh", "pick": "random"})
                         for c in cands]
                self.emit("picked", generation=self.generation, requested=n,
                          by_score=0, by_random=len(items), candidates=[
                              {**info, "decisions": decisions_of(s.trace)}
                              for s, _, info in items])
                self.generation += 1
                yield "stage"
            else:
                gen = self.evo.generate(n, generation=self.generation)
                picks: list | None = None
                while True:
                    tic = time.perf_counter()
                    try:
                        stage = next(gen)
                    except StopIteration as done:
                        picks = done.value
                        break
                    finally:
                        self.timing["search"] += time.perf_counter() - tic
                    self.emit(stage.kind, **stage.data)
                    yield "stage"
                    if self._space_changed:
                        gen.close()
                        break
                if self._space_changed:
                    self._space_changed = False
                    continue
                self.generation += 1
                if picks is None:
                    return "the evolutionary search found no more candidates"
                if not picks:
                    continue
                items = [
                    (c.sch, compat.ArgInfo.from_entry_func(c.sch.mod, remove_preproc=True),
                     {**c.lineage(), "pick": c.pick, "predicted_score": c.score})
                    for c in picks
                ]
            self.measure_batch(items)
            yield "batch"
        return "reached max_trials"

    def measure_batch(self, items: list[tuple[Any, Any, dict]]) -> None:
        """Build, run, commit, update the cost model; one event per step."""
        measurer = self.measurer
        batch = self.batch
        tic = time.perf_counter()
        built = measurer.build([sch.mod for sch, _, _ in items])
        self.emit("built", batch=batch, results=[
            {"ok": b.error is None, "error": b.error} for b in built])
        results = measurer.run(built, [args for _, args, _ in items])
        measurer.cleanup(built)
        rows = [self.commit(sch, args, res, info, batch)
                for (sch, args, info), res in zip(items, results)]
        self.timing["measure"] += time.perf_counter() - tic
        self.emit("measured", batch=batch, trials=rows, best_us=self.best_secs * 1e6
                  if math.isfinite(self.best_secs) else None)
        runner_results = [compat.ms.runner.RunnerResult(
            list(r.run_secs) if r.run_secs else None, r.error) for r in results]
        cands = [compat.ms.search_strategy.MeasureCandidate(sch, args) for sch, args, _ in items]
        if self.strategy == "replay":
            self.context.notify_runner_results(cands, runner_results)
        tic = time.perf_counter()
        self.update_cost_model(cands, runner_results, results, items, batch)
        self.timing["cost_model"] += time.perf_counter() - tic
        self.batch += 1

    def commit(self, sch: Any, args: Any, res: MeasureResult, info: dict,
               batch: int | None) -> dict:
        """Add one trial to the stock database, then its sidecar line and log line."""
        secs = list(res.run_secs) if res.run_secs else [compat.FAILED_RUN_SECS]
        self.database.commit_tuning_record(
            compat.TuningRecord(sch.trace, self.token, secs, self.target, args))
        line = self.next_line
        self.next_line += 1
        task_trial = self.trials_done
        self.trials_done += 1
        shash = int(compat.structural_hash(sch.mod))
        self._line_by_hash.setdefault(shash, line)
        if res.ok:
            self.best_secs = min(self.best_secs, sum(secs) / len(secs))
        self.sidecar.trial(line, task=self.task, workload=self.workload_index,
                           task_trial=task_trial, batch=batch, generation=self.generation - 1,
                           error_kind=res.error_kind, error=res.error, run_secs=res.run_secs,
                           **info)
        self._log_trial(task_trial, res)
        latency = sum(secs) / len(secs) * 1e6 if res.ok else None
        return {"line": line, "task_trial": task_trial, "run_secs": res.run_secs,
                "latency_us": latency, "error_kind": res.error_kind, "error": res.error, **info}

    def _log_trial(self, task_trial: int, res: MeasureResult) -> None:
        head = f"[tuner.py:0] [Task #{self.task_index}: {self.task}] Trial #{task_trial + 1}: "
        if not res.ok:
            where = "building" if res.error_kind == "build" else "running"
            self.logger.info(head + f"Error in {where}:\n{res.error}")
            return
        mean = sum(res.run_secs) / len(res.run_secs)
        flop = self.workload.flop
        gflops = flop / mean / 1e9 if math.isfinite(flop) else float("nan")
        best = flop / self.best_secs / 1e9 if math.isfinite(flop) else float("nan")
        self.logger.info(head + f"GFLOPs: {gflops:.4f}. Time: {mean * 1e6:.4f} us. "
                         f"Best GFLOPs: {best:.4f}")

    def update_cost_model(self, cands: list, runner_results: list, results: list,
                          items: list, batch: int) -> None:
        """``UpdateCostModel``: train on what built and ran (or failed at run time)."""
        keep = [i for i, r in enumerate(results)
                if r.error_kind != "build" and (r.error or (r.run_secs and sum(r.run_secs) > 0))]
        capture = _Capture()
        xgb_logger = logging.getLogger(_XGB_LOGGER)
        # Its lines go to the task log and the event, never to a console handler that a stock
        # tune_tir may have installed (it would print into the notebook cell from this thread).
        propagate, xgb_logger.propagate = xgb_logger.propagate, False
        xgb_logger.addHandler(capture)
        try:
            self.cost_model.update(self.context, [cands[i] for i in keep],
                                   [runner_results[i] for i in keep])
        finally:
            xgb_logger.removeHandler(capture)
            xgb_logger.propagate = propagate
        for line in capture.lines:
            self.logger.debug(line)
        predicted = np.array([items[i][2].get("predicted_score", np.nan) for i in keep], float)
        measured = np.array([1.0 / (sum(results[i].run_secs) / len(results[i].run_secs))
                             if results[i].ok else 0.0 for i in keep], float)
        corr = None
        mask = np.isfinite(predicted)
        if mask.sum() >= 3 and np.std(predicted[mask]) > 0 and np.std(measured[mask]) > 0:
            rank_p = np.argsort(np.argsort(predicted[mask]))
            rank_m = np.argsort(np.argsort(measured[mask]))
            corr = float(np.corrcoef(rank_p, rank_m)[0, 1])
        self.emit("cost_model_updated", batch=batch, source="batch", trained_on=len(keep),
                  samples=int(getattr(self.cost_model, "data_size", 0)),
                  rank_corr_predicted_vs_measured=corr,
                  validation=[x for x in capture.lines if "validation" in x],
                  training_log=capture.lines[-3:])

    # -- re-measure -------------------------------------------------------------------------------

    def remeasure(self, what: Any, repeats: int) -> dict:
        """Build and run one schedule again; record it as a re-measurement of its trial."""
        sch, line = self._resolve(what)
        if self.measurer is None:
            self.measurer = Measurer(self.target, **self.measurer_options)
        cfg = self.measurer.evaluator_config
        config = {"number": int(cfg.number), "repeat": int(repeats),
                  "min_repeat_ms": int(cfg.min_repeat_ms),
                  "enable_cpu_cache_flush": bool(cfg.enable_cpu_cache_flush)}
        args = compat.ArgInfo.from_entry_func(sch.mod, remove_preproc=True)
        built = self.measurer.build([sch.mod])
        res = self.measurer.run(built, [args], evaluator_config=config)[0]
        self.measurer.cleanup(built)
        if line is None:
            # A schedule the database does not hold (e.g. an edited decision) becomes a trial
            # of its own, so it shows in the trials table next to what the search measured.
            row = self.commit(sch, args, res, {"origin": "edit", "pick": "user"}, batch=None)
            data = {"line": row["line"], "repeats": repeats, "run_secs": res.run_secs,
                    "error": res.error, "new_trial": True}
        else:
            self.sidecar.remeasure(line, list(res.run_secs) if res.run_secs else None,
                                   task=self.task, repeats=repeats, error=res.error,
                                   error_kind=res.error_kind)
            data = {"line": line, "repeats": repeats, "run_secs": res.run_secs,
                    "error": res.error, "new_trial": False}
        self.emit("remeasured", **data)
        return data

    def _resolve(self, what: Any) -> tuple[Any, int | None]:
        from msviz.records.run import Run

        if isinstance(what, (int, np.integer)) or hasattr(what, "run"):
            run = what.run if hasattr(what, "run") else Run(self.work_dir)
            index = what.index if hasattr(what, "run") else int(what)
            trial = run.trial(index)
            return trial.schedule, int(run.trials.iloc[trial.index]["line"])
        sch = what
        if isinstance(what, compat.Trace):
            sch = compat.Schedule(self.workload.mod, debug_mask=0)
            what.apply_to_schedule(sch, remove_postproc=False)
        if not isinstance(sch, compat.Schedule):
            raise TypeError("remeasure takes a trial index, a Trial, a Trace or a Schedule, "
                            f"not {type(what).__name__}")
        shash = int(compat.structural_hash(sch.mod))
        if shash not in self._line_by_hash:
            self._index_stored_lines()
        return sch, self._line_by_hash.get(shash)

    def _index_stored_lines(self) -> None:
        """Hash every stored record of this workload once (records from before a resume)."""
        from msviz.records.run import Run

        if getattr(self, "_stored_indexed", False):
            return
        self._stored_indexed = True
        run = Run(self.work_dir)
        for row in run.trials.itertuples():
            if row.workload != self.workload_index:
                continue
            try:
                mod = run.trial(int(row.Index)).mod
            except Exception:  # a record whose trace no longer replays: not a match
                continue
            self._line_by_hash.setdefault(int(compat.structural_hash(mod)), int(row.line))
