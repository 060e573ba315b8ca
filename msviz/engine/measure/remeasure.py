"""Re-measuring one schedule: build and run it again, recorded against its trial."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from msviz import compat
from msviz.engine.measure.callbacks import add_to_database
from msviz.engine.measure.service import MeasuringService
from msviz.records.run import Run

__all__ = ["index_stored_lines", "remeasure"]


def remeasure(tuner: Any, what: Any, repeats: int) -> dict:
    """Build and run one schedule again; record it as a re-measurement of its trial.

    Parameters
    ----------
    tuner : Tuner
        The task's tuner (set up).
    what : int | Trial | Trace | Schedule
        A trial index of the work dir, a Trial, or a schedule / trace of the workload.
    repeats : int
        Timed repeats.

    Returns
    -------
    data : dict
        ``line``, ``repeats``, ``run_secs``, ``error``, ``new_trial`` (the ``remeasured``
        event's data; a schedule the database does not hold becomes a trial of its own, and
        its ``check``: ``"ok"``, ``"wrong"``, ``"error"``, or None with ``check="none"``).
    """
    sch, line = _resolve(tuner, what)
    if tuner.measurer is None:
        tuner.measurer = MeasuringService(tuner.target, **tuner.measurer_options)
    measurer = tuner.measurer
    cfg = measurer.evaluator_config
    config = {"number": int(cfg.number), "repeat": int(repeats),
              "min_repeat_ms": int(cfg.min_repeat_ms),
              "enable_cpu_cache_flush": bool(cfg.enable_cpu_cache_flush)}
    args = compat.ArgInfo.from_entry_func(sch.mod, remove_preproc=True)
    built = measurer.build([sch.mod])
    res = measurer.run(built, [args], evaluator_config=config)[0]
    info: dict[str, Any] = {"origin": "edit", "pick": "user"}
    if line is None:
        # A new schedule (an edit) is checked whatever its speed, unless the session checks
        # nothing (check="none"): a wrong one becomes a wrong_result trial, never the best.
        res = tuner.checker.check_batch([(sch, args, info, None)], built, [res], math.inf)[0]
    measurer.cleanup(built)
    if line is None:
        # A schedule the database does not hold (e.g. an edited decision) becomes a trial
        # of its own, so it shows in the trials table next to what the search measured.
        row = add_to_database(tuner, sch, args, res, info, batch=None, generation=None)
        data = {"line": row["line"], "repeats": repeats, "run_secs": res.run_secs,
                "error": res.error, "new_trial": True, "check": info.get("check")}
    else:
        tuner.sidecar.remeasure(line, list(res.run_secs) if res.run_secs else None,
                                task=tuner.task, repeats=repeats, error=res.error,
                                error_kind=res.error_kind)
        data = {"line": line, "repeats": repeats, "run_secs": res.run_secs,
                "error": res.error, "new_trial": False, "check": None}
    tuner.emit("remeasured", **data)
    return data


def _resolve(tuner: Any, what: Any) -> tuple[Any, int | None]:
    if isinstance(what, (int, np.integer)) or hasattr(what, "run"):
        run = what.run if hasattr(what, "run") else Run(tuner.work_dir)
        index = what.index if hasattr(what, "run") else int(what)
        trial = run.trial(index)
        return trial.schedule, int(run.trials.iloc[trial.index]["line"])
    sch = what
    if isinstance(what, compat.Trace):
        sch = compat.Schedule(tuner.workload.mod, debug_mask=0)
        what.apply_to_schedule(sch, remove_postproc=False)
    if not isinstance(sch, compat.Schedule):
        raise TypeError("remeasure takes a trial index, a Trial, a Trace or a Schedule, "
                        f"not {type(what).__name__}")
    return sch, tuner.line_of_stored(int(compat.structural_hash(sch.mod)))


def index_stored_lines(tuner: Any) -> None:
    """Hash every stored record of the tuner's workload once (records from before a resume),
    into ``tuner.line_by_hash``."""
    run = Run(tuner.work_dir)
    for row in run.trials.itertuples():
        if row.workload != tuner.workload_index:
            continue
        try:
            mod = run.trial(int(row.Index)).mod
        except Exception:  # a record whose trace no longer replays: not a match
            continue
        tuner.line_by_hash.setdefault(int(compat.structural_hash(mod)), int(row.line))
