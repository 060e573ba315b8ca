"""One measured candidate of a run: its numbers now, its trace, schedule and IRModule on demand;
its why-not (:mod:`msviz.whynot`) and its result check (handed to the Run's actions: the engine's
measuring room)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from msviz import compat
from msviz.records.environment import rules_from_json, rules_to_json
from msviz.space_generator.rules import RuleSet

__all__ = ["Trial"]


@dataclass
class Trial:
    """One measured candidate of a run: its numbers now, its trace and IRModule on demand.

    Parameters
    ----------
    run : Run
        The run this trial belongs to.
    index : int
        Its row in ``run.trials`` (0-based file order).
    """

    run: Any = field(repr=False)
    index: int

    @property
    def _row(self) -> pd.Series:
        return self.run.trials.iloc[self.index]

    @property
    def task(self) -> str:
        return str(self._row["task"])

    @property
    def status(self) -> str:
        return str(self._row["status"])

    @property
    def latency_us(self) -> float:
        return float(self._row["latency_us"])

    @property
    def gflops(self) -> float:
        return float(self._row["gflops"])

    @property
    def run_secs(self) -> tuple[float, ...] | None:
        return self._row["run_secs"]

    @property
    def error(self) -> str | None:
        return self._row["error"]

    @functools.cached_property
    def record(self) -> Any:
        """The stock ``TuningRecord`` (trace, workload, run_secs, target, args_info)."""
        return self.run._tuning_record(self.index)

    @property
    def trace(self) -> Any:
        """The full trace (postproc instructions included), as MetaSchedule stored it."""
        return self.record.trace

    @functools.cached_property
    def schedule(self) -> Any:
        """The schedule replayed from the trace, as ``Database.query_schedule`` does."""
        sch = compat.Schedule(self.record.workload.mod, debug_mask=0, error_render_level="detail")
        compat.register_intrins_for(self.trace)
        self.trace.apply_to_schedule(sch, remove_postproc=False)
        return sch

    @property
    def mod(self) -> Any:
        """The IRModule after applying the trace."""
        return self.schedule.mod

    def own_postprocs(self) -> list | None:
        """The postprocessors this trial was made with, where they are not its target's
        defaults (what :func:`msviz.trace.with_decisions` applies to replay it as stored).

        An msviz session keeps its rules in the sidecar's environment lines (a task's own under
        ``task_rules``; the line in effect at this record's line, :meth:`Run.environment_at`,
        as rules set while tuning write a new one; a live session's table gets them from its
        ``environment`` events); they may hold other postprocessors than the target's defaults
        (the rule set of another CPU, such as ``RuleSet.default("llvm")`` on an AVX2 host, or
        none at all). A trace without ``EnterPostproc`` was measured as it was given (a schedule
        re-measured by hand): no postprocessor.

        Returns
        -------
        postprocs : list of Postproc | None
            None where they are the target's defaults, or not known (a work dir without the
            sidecar: ``tune_tir`` uses the target's defaults unless given its own).
        """
        if not any(inst.kind.name == "EnterPostproc" for inst in self.trace.insts):
            return []
        at = getattr(self.run, "environment_at", None)
        env = (at(int(self._row["line"])) if at is not None else
               getattr(self.run, "environment", None)) or {}
        rules = env.get("rules")
        task = getattr(self.run, "_task_ids", {}).get(int(self._row["workload"]))
        rules = (env.get("task_rules") or {}).get(str(task), rules)
        if not rules or rules.get("postprocs") is None:
            return None
        stored = json.loads(json.dumps(rules["postprocs"]))
        try:
            default = rules_to_json(RuleSet.default(self.record.target))["postprocs"]
        except Exception:  # a target without MetaSchedule defaults: take the stored ones
            default = None
        if stored == json.loads(json.dumps(default)):
            return None  # the target's own objects (rules stored by name keep no parameters)
        return rules_from_json({"postprocs": stored}).build()[1]

    def why_not(self, **want: Any) -> Any:
        """``msviz.why_not(trial, **want)``: force a transformation from this trial's trace."""
        from msviz.whynot.answer import why_not  # heavy: MetaSchedule's rules and intrinsics

        return why_not(self, **want)

    def check(self, inputs: Any = None, rtol: float | None = None, atol: float | None = None,
              *, seed: int = 0) -> Any:
        """Build this trial's schedule and the untuned workload, run both, compare outputs.

        Works on any work dir (stock ``tune_tir`` ones too): the schedule is replayed from the
        stored trace, the reference is the stored workload built by TVM for the record's
        target (see :mod:`msviz.bench.schedule`). It runs in the engine's measuring room, one
        measurement at a time with any tuning in this process
        (:func:`msviz.engine.measure.requests.check_trial`).

        Parameters
        ----------
        inputs : list or dict, optional
            Arrays for the arguments in order, or by argument name (seeded random otherwise).
        rtol, atol : float, optional
            Float tolerance (defaults by dtype); integers must be equal.
        seed : int
            Seed of the random inputs.

        Returns
        -------
        result : msviz.bench.CheckResult
            ``ok``, ``max_abs_diff``, ``detail`` (and ``outcome``: ok, wrong or error).
        """
        return self.run.actions.check(self, inputs=inputs, rtol=rtol, atol=atol, seed=seed)

    def __repr__(self) -> str:
        return (f"Trial(index={self.index}, task={self.task!r}, status={self.status!r}, "
                f"latency_us={self.latency_us:.3f})")
