"""A trial's row: the one place that turns what was measured into table values.

Mean latency (from ``run_secs``), status (from the error kind, MetaSchedule's ``1e10`` failure
marker or the log), GFLOPS (from FLOP and latency) and the typed trials DataFrame are computed
here, for the work-dir reader (:mod:`msviz.records.run`), the sidecar merge, a session's live
table (:mod:`msviz.records.live`) and the views' inputs. Nothing else computes them. What counts
as a measurement and how it ranks are stock MetaSchedule's database's (``TuningRecord::IsValid``,
``SortTuningRecordByMeanRunSecs``), so the best trial is the record ``compile_tir`` picks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from msviz import compat

__all__ = [
    "ALL_COLUMNS",
    "SIDECAR_COLUMNS",
    "STATUSES",
    "TRIAL_COLUMNS",
    "UNSCHEDULED_ERROR",
    "adjusted_text",
    "fail_unscheduled",
    "gflops",
    "iso_timestamp",
    "log_time",
    "mean_latency_us",
    "mean_run_secs",
    "median_latency_us",
    "status",
    "stored_run_secs",
    "trials_frame",
    "valid_run_secs",
]

#: The columns of ``Run.trials`` read from the stock database and logs, in order.
TRIAL_COLUMNS = [
    "task",
    "trial",
    "task_trial",
    "status",
    "latency_us",
    "gflops",
    "run_secs",
    "error",
    "workload",
    "line",
    "logged_at",
]

#: Columns the msviz sidecar adds (NaN/None where a trial has no sidecar entry). A trial
#: carried from a tuning library has ``origin`` ``"library"``, ``carried_from`` (its source:
#: ``"<run>/<task> trial <n>"``), ``carry`` (``"exact"``, ``"anchor"`` or ``"sibling"``) and
#: ``adjusted`` (the trace positions whose decisions were changed, as text: ``"#3, #7"``;
#: ``""`` for none; see :func:`adjusted_text`). One carried from a sibling task of the same run
#: (:mod:`msviz.engine.tuning.sibling_carry`) has ``origin`` ``"carried"``, ``carry``
#: ``"sibling"`` and ``carried_from`` ``"#<task index> <task> best <rank>"``.
SIDECAR_COLUMNS = [
    "timestamp",
    "batch",
    "generation",
    "iteration",
    "origin",
    "pick",
    "predicted_score",
    "design_space",
    "mutator",
    "parent",
    "ancestor_line",
    "check",
    "check_detail",
    "device",
    "carried_from",
    "carry",
    "adjusted",
    "remeasured_secs",
]

#: Every column of ``Run.trials`` / ``Session.trials``, in order.
ALL_COLUMNS = TRIAL_COLUMNS + SIDECAR_COLUMNS

#: What ``status`` can be. ``infra_error``: the measuring infrastructure failed (watchdog,
#: no device, a lost batch), not the candidate; ``device_lost``: the RPC server measuring it
#: died or left the fleet; ``failed``: a record stock's database never picks (no run time but
#: ``1e10``, or none; or a trace without a schedule instruction) and no error text says why;
#: ``wrong_result``: it ran, but its output differs from the untuned workload's (result check;
#: the database holds ``1e10``, the sidecar the measured times); ``impossible``: a record that
#: cannot be true (faster than the machine's peak, or a decision its trace cannot hold:
#: :mod:`msviz.records.impossible`), never the best.
STATUSES = (
    "ok",
    "build_error",
    "build_timeout",
    "run_error",
    "run_timeout",
    "infra_error",
    "device_lost",
    "failed",
    "wrong_result",
    "impossible",
)

_INT_COLUMNS = ("batch", "generation", "iteration", "design_space", "parent", "ancestor_line")


#: The error text of a measured record whose trace holds no schedule instruction.
UNSCHEDULED_ERROR = ("its trace holds no schedule instruction (nothing before EnterPostproc): "
                     "MetaSchedule's database never picks it (TuningRecord.IsValid is false)")


def fail_unscheduled(unscheduled: Any, lines: Sequence[int], status: list, latency: list,
                     errors: list) -> None:
    """Mark (in place) the measured trials whose record line is in ``unscheduled`` failed, with
    :data:`UNSCHEDULED_ERROR`: stock never picks them."""
    if not unscheduled:
        return
    for i, line in enumerate(lines):
        if line in unscheduled and status[i] == "ok":
            status[i], latency[i] = "failed", math.nan
            errors[i] = errors[i] or UNSCHEDULED_ERROR


def valid_run_secs(run_secs: Sequence[float] | None) -> bool:
    """Whether ``run_secs`` make a record a measurement, as ``TuningRecordNode::IsValid``
    counts: some time that is not exactly the ``1e10`` failure mark (``[3e-05, 1e10]`` is one,
    ``[]``, ``None`` and ``[1e10, 1e10]`` are not)."""
    if not run_secs:
        return False
    return run_secs.count(compat.FAILED_RUN_SECS) < len(run_secs)


def mean_run_secs(run_secs: Sequence[float] | None) -> float:
    """The mean of ``run_secs`` (s) as the stock database ranks records by it
    (``SortTuningRecordByMeanRunSecs``): summed in order, ``1e10`` when there is none."""
    if not run_secs:
        return compat.FAILED_RUN_SECS
    if len(run_secs) == 1:
        return float(run_secs[0])
    total = 0.0
    for v in run_secs:  # not sum(): Python >= 3.12 sums floats with compensation, C++ does not
        total += v
    return total / len(run_secs)


def mean_latency_us(run_secs: Sequence[float] | None) -> float:
    """Mean of ``run_secs`` in microseconds, as the stock database ranks it (a ``1e10`` among
    real times counts); NaN where they are no measurement (:func:`valid_run_secs`)."""
    if not valid_run_secs(run_secs):
        return math.nan
    return mean_run_secs(run_secs) * 1e6


def median_latency_us(run_secs: Sequence[float] | None) -> float:
    """Median of ``run_secs`` in microseconds (``GetRunMsMedian``: the mean of the middle two
    for an even count), as MetaSchedule's task scheduler and its log lines time a trial; NaN
    for a failed or missing measurement (:func:`valid_run_secs`)."""
    if not valid_run_secs(run_secs):
        return math.nan
    v = sorted(run_secs)  # type: ignore[type-var]
    n = len(v)
    return (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) * 0.5) * 1e6


def gflops(flop: float, latency_us: float) -> float:
    """Throughput in GFLOPS (``flop`` floating-point operations in ``latency_us`` µs)."""
    if not latency_us > 0 or not math.isfinite(flop):
        return math.nan
    return flop / latency_us / 1e3


def status(run_secs: Sequence[float] | None, error_kind: str | None, error: str | None) -> str:
    """One of :data:`STATUSES`.

    Parameters
    ----------
    run_secs : sequence of float, optional
        What the stock database holds (``[1e10]`` for a failure); ``"ok"`` where they are a
        measurement as stock counts one (:func:`valid_run_secs`), whatever the error says.
    error_kind : {"build", "run", "infra", "wrong", "device_lost"}, optional
        Where it failed (sidecar, event or log); ``"run"`` is assumed for error text without one.
    error : str, optional
        The error text; a ``Timeout`` in it makes ``*_timeout``.
    """
    if valid_run_secs(run_secs):
        return "ok"
    kind = error_kind or ("run" if error else None)
    if kind is None:
        return "failed"
    if kind == "infra":
        return "infra_error"
    if kind == "wrong":
        return "wrong_result"
    if kind == "device_lost":
        return "device_lost"
    timeout = error is not None and "Timeout" in error
    return f"{kind}_{'timeout' if timeout else 'error'}"


def stored_run_secs(run_secs: Sequence[float] | None) -> tuple[float, ...]:
    """``run_secs`` as the stock database stores them (``(1e10,)`` for a failure)."""
    return tuple(float(s) for s in run_secs) if run_secs else (compat.FAILED_RUN_SECS,)


def adjusted_text(positions: Any) -> str | None:
    """The ``adjusted`` column's text of a sidecar's list of trace positions: ``[3, 7]`` ->
    ``"#3, #7"``, ``[]`` -> ``""``; None stays None (not carried), text is kept as it is."""
    if positions is None or isinstance(positions, str):
        return positions
    return ", ".join(f"#{p}" for p in positions)


def iso_timestamp(value: Any) -> str | None:
    """A sidecar timestamp as the sidecar writes it: ISO 8601 UTC, in milliseconds.

    ``value`` is ``time.time()`` seconds or an ISO string (returned as is); None stays None.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    stamp = datetime.fromtimestamp(float(value), timezone.utc)
    return stamp.isoformat(timespec="milliseconds")


def log_time(value: Any) -> str | None:
    """A timestamp (``time.time()`` seconds or ISO text) as MetaSchedule's log lines show it:
    local time, whole seconds."""
    if value is None:
        return None
    if isinstance(value, str):
        stamp = datetime.fromisoformat(value).astimezone()
    else:
        stamp = datetime.fromtimestamp(float(value))
    return stamp.strftime("%Y-%m-%d %H:%M:%S")


def trials_frame(data: dict[str, list], index: Any = None) -> pd.DataFrame:
    """The typed trials DataFrame from column lists (missing columns are left out).

    Every trials frame (a work dir read, a live session's table, one of its chunks) is built
    here, so the dtypes match: numbers float, sidecar integers ``Int64``, timestamps UTC.
    """
    length = len(next(iter(data.values()))) if data else 0
    out: dict[str, Any] = {}
    for column in ALL_COLUMNS:
        if column not in data:
            continue
        values = data[column]
        if column in ("latency_us", "gflops", "predicted_score"):
            series = pd.Series([math.nan if v is None else v for v in values], dtype=float,
                               index=index)
        elif column in ("trial", "task_trial", "workload", "line"):
            series = pd.Series(values, dtype="int64", index=index)
        elif column in _INT_COLUMNS:
            # no sidecar: all missing, built at once
            if isinstance(values, list) and values.count(None) == len(values):
                series = pd.Series(pd.arrays.IntegerArray(
                    np.zeros(len(values), "int64"), np.ones(len(values), bool)), index=index)
            else:
                series = pd.Series(values, dtype="Int64", index=index)
        elif column == "logged_at":
            series = pd.Series(pd.to_datetime(values, format="%Y-%m-%d %H:%M:%S"),
                               index=index).astype("datetime64[ns]")
        elif column == "timestamp":
            series = pd.Series(pd.to_datetime(values, utc=True, format="ISO8601"),
                               index=index).astype("datetime64[ns, UTC]")
        elif column in ("task", "status"):
            series = pd.Series(values, dtype=str, index=index)
        elif column == "adjusted":  # the sidecar's list of positions, as text
            series = pd.Series([adjusted_text(v) for v in values], dtype=object, index=index)
        else:  # error text, run_secs tuples, origin/pick/mutator names, re-measurements
            series = pd.Series(values, dtype=object, index=index)
        out[column] = series
    frame = pd.DataFrame(out, index=index)
    if not out:
        frame = pd.DataFrame(index=range(length))
    return frame
