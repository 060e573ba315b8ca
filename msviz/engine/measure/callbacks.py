"""MetaSchedule's measure-callback steps, done by hand after each batch.

``TaskScheduler`` runs ``AddToDatabase``, ``RemoveBuildArtifact`` and ``UpdateCostModel`` after
a batch; msviz does the same here (:meth:`MeasuringService.cleanup` removes the build
artifacts), and
adds what the stock database drops: a sidecar line per trial and the stock log line.

A measurement that failed for infrastructure reasons (``error_kind == "infra"``: a watchdog
timeout, no CUDA device, a runner that lost the batch, an RPC session error) is stored like any
failure (``run_secs=[1e10]`` in the database, its error in the sidecar), so it is shown, but it
never trains the cost model.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
import pandas as pd

from msviz import compat
from msviz.engine.measure.results import UNMEASURED_KINDS, MeasureResult
from msviz.records import row

__all__ = ["add_to_database", "train", "training_threads", "update_cost_model"]

#: Error kinds of candidates that never reach the cost model.
UNTRAINED_KINDS = ("build", *UNMEASURED_KINDS)

#: Below this many samples the XGBoost cost model trains on one thread. Each boosting round
#: then costs little, and OpenMP's threads meet at several barriers a round: on cores that
#: other work also uses (a notebook beside a browser, CI's host) a barrier waits for a thread
#: the OS has put off, and a 4-sample update took 16 s for 100 rounds instead of 0.2 s (two
#: tiny GMM-0 sessions while both cores were busy). On idle cores one thread trains 8-512
#: samples of C2D-0 in 0.10-0.85 s against two threads' 0.11-0.69 s, and 2048 in 2.0 s
#: against 1.2 s, so larger sets keep the session's threads. The booster is the same either
#: way (equal predictions at every size tried): ``benchmarks/cost_model_threads.py``.
ONE_THREAD_BELOW = 512


def training_threads(samples: int, cores: int) -> int:
    """Threads the cost model trains with once it holds ``samples`` samples."""
    return 1 if samples < ONE_THREAD_BELOW else max(1, int(cores))


def train(model: Any, context: Any, cands: list, results: list, cores: int) -> None:
    """``model.update(context, cands, results)``; a stock ``XGBModel`` trains (and its booster
    then predicts) on :func:`training_threads` threads: its config's ``nthread``, which it
    reads at each training. Other cost models are asked as they are."""
    config = getattr(model, "config", None)
    if isinstance(model, compat.ms.cost_model.XGBModel) and hasattr(config, "_replace"):
        threads = training_threads(int(getattr(model, "data_size", 0)) + len(cands), cores)
        if config.nthread != threads:
            model.config = config._replace(nthread=threads)
    model.update(context, cands, results)


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def add_to_database(tuner: Any, sch: Any, args: Any, res: MeasureResult, info: dict, *,
                    batch: int | None, generation: int | None) -> dict:
    """``AddToDatabase`` for one trial, then its sidecar line and stock log line.

    Returns
    -------
    row : dict
        The ``measured`` event's row of the trial: ``line``, ``task``, ``workload``,
        ``task_trial``, ``batch``, ``generation``, ``timestamp`` (``time.time()``, the instant
        written to the sidecar), ``run_secs``, ``latency_us``, ``error_kind``, ``error`` and the
        lineage / pick / predicted-score fields of ``info``.
    """
    secs = list(res.run_secs) if res.run_secs else [compat.FAILED_RUN_SECS]
    tuner.database.commit_tuning_record(
        compat.TuningRecord(sch.trace, tuner.token, secs, tuner.target, args))
    stamp = time.time()
    line = tuner.next_line
    tuner.next_line += 1
    task_trial = tuner.next_task_trial
    tuner.next_task_trial += 1
    if res.error_kind not in UNMEASURED_KINDS and info.get("origin") != "edit" and \
            info.get("carry") != "exact":
        # infra failures, lost devices, the user's edits and a library's records (not measured
        # here) do not count
        tuner.trials_done += 1
    shash = int(compat.structural_hash(sch.mod))
    tuner.line_by_hash.setdefault(shash, line)
    latency = row.mean_latency_us(secs)
    if res.ok:
        tuner.best_secs = min(tuner.best_secs, latency / 1e6)
        tuner.best_median_ms = min(tuner.best_median_ms,
                                   row.median_latency_us(secs) / 1e3)
    iso = row.iso_timestamp(stamp)
    device = {"device": res.device} if res.device else {}  # the RPC server that measured it
    tuner.sidecar.trial(line, task=tuner.task, workload=tuner.workload_index,
                       task_trial=task_trial, batch=batch, generation=generation,
                       error_kind=res.error_kind, error=res.error, run_secs=res.run_secs,
                       timestamp=iso, **device, **info)
    _log_trial(tuner, task_trial, res)
    return {"line": line, "task": tuner.task, "workload": tuner.workload_index,
            "task_trial": task_trial, "batch": batch, "generation": generation,
            "timestamp": stamp, "run_secs": list(res.run_secs) if res.run_secs else None,
            "latency_us": latency if res.ok else None, "error_kind": res.error_kind,
            "error": res.error, **device, **info}


def _log_trial(tuner: Any, task_trial: int, res: MeasureResult) -> None:
    head = f"[tuner.py:0] [Task #{tuner.task_index}: {tuner.task}] Trial #{task_trial + 1}: "
    if not res.ok:
        where = "building" if res.error_kind == "build" else "running"
        tuner.logger.info(head + f"Error in {where}:\n{res.error}")
        return
    latency = row.median_latency_us(res.run_secs)  # as the C++ logs it (GetRunMsMedian)
    flop = tuner.workload.flop
    best = row.gflops(flop, tuner.best_median_ms * 1e3)
    tuner.logger.info(head + f"GFLOPs: {row.gflops(flop, latency):.4f}. "
                      f"Time: {latency:.4f} us. Best GFLOPs: {best:.4f}")


def rank_correlation(predicted: np.ndarray, measured: np.ndarray) -> float | None:
    """Spearman's rank correlation (ties get their mean rank, as in the Plots tab) of the
    trials with a finite prediction and a measured throughput; None when undefined."""
    mask = np.isfinite(predicted) & np.isfinite(measured)
    pred, meas = pd.Series(predicted[mask]), pd.Series(measured[mask])
    if mask.sum() < 2 or pred.nunique() < 2 or meas.nunique() < 2:
        return None
    return float(pred.corr(meas, method="spearman"))


def update_cost_model(tuner: Any, items: list, results: list[MeasureResult],
                      batch: int) -> dict:
    """``UpdateCostModel``: train on what built and ran (or failed at run time).

    Build failures and infrastructure failures are left out (the stock callback leaves out
    build failures; an infrastructure failure says nothing about the schedule).

    Returns
    -------
    data : dict
        The ``cost_model_updated`` event's data.
    """
    keep = [i for i, r in enumerate(results) if r.error_kind not in UNTRAINED_KINDS
            and (r.error or (r.run_secs and sum(r.run_secs) > 0))]
    cands = [compat.ms.search_strategy.MeasureCandidate(items[i][0], items[i][1]) for i in keep]
    runner_results = [compat.ms.runner.RunnerResult(
        list(results[i].run_secs) if results[i].run_secs else None, results[i].error)
        for i in keep]
    capture = _Capture()
    xgb_logger = logging.getLogger(compat.ms.cost_model.xgb_model.__name__)
    # Its lines go to the task log and the event, never to a console handler that a stock
    # tune_tir may have installed (it would print into the notebook cell from this thread).
    propagate, xgb_logger.propagate = xgb_logger.propagate, False
    xgb_logger.addHandler(capture)
    try:
        if cands:
            train(tuner.cost_model, tuner.context, cands, runner_results, tuner.num_threads)
    finally:
        xgb_logger.removeHandler(capture)
        xgb_logger.propagate = propagate
    for text in capture.lines:
        tuner.logger.debug(text)
    predicted = np.array([items[i][2].get("predicted_score") for i in keep], float)
    # throughput of the trials that ran (failures have none: they are not in the ranking)
    measured = np.array([1e6 / row.mean_latency_us(results[i].run_secs) if results[i].ok
                         else np.nan for i in keep], float)
    return {"batch": batch, "source": "batch", "trained_on": len(keep),
            "samples": int(getattr(tuner.cost_model, "data_size", 0)),
            "rank_corr_predicted_vs_measured": rank_correlation(predicted, measured),
            "validation": [x for x in capture.lines if "validation" in x],
            "training_log": capture.lines[-3:]}
