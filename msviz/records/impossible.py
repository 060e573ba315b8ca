"""Records that cannot be true, flagged when a work dir is read and never counted as the best.

A work dir merged from elsewhere, or edited by hand, can hold a record no kernel measured: a run
time faster than any machine does the workload's FLOPs in, or a trace holding a decision its
sampling instruction can never return (tile factors that do not multiply to the loop's extent).
Stock MetaSchedule ranks such a record by its time as any other (``compile_tir`` would pick it);
msviz gives it the status ``"impossible"`` with the reason in its ``error`` column, leaves its
latency and GFLOPS unknown (so it is in neither :meth:`Run.best`, the task table's best, nor the
quality curve) and says so in one :class:`~msviz.errors.MsvizWarning` per read.

Two checks, the cheap one on every measured record, the costly one on the candidates only:

* **Faster than the machine's peak**: a mean run time of zero or less, or a throughput above
  :func:`peak_flops` of the record's target: :data:`PEAK_FLOPS_PER_CORE` (50 TFLOPS) a core
  for a CPU (the target's ``num-cores``; :data:`UNKNOWN_CORES` where it names none), several
  times what any CPU core reaches (AMX int8 on a 4 GHz core: about 8 TOPS), and
  :data:`PEAK_FLOPS_PER_DEVICE` (50 PFLOPS) for any other device (the fastest GPUs' sparse
  low-precision peaks are below 20). The bounds are generous on purpose: a FLOP count can
  count work a compiler removes, and a real record must never be flagged.
* **Decisions the trace cannot hold**: a ``SamplePerfectTile`` decision with a factor below 1
  or the wrong number of factors, or a ``SampleCategorical`` index outside its candidates
  (told from the line's JSON, before TVM sees it), or tile factors that do not multiply to the
  loop's extent (TVM's load of the trace replays it and keeps only tiles that do; a stock
  record's decisions are what its replay returned, so TVM keeps them all). The reasons are
  :func:`msviz.trace.sampling.out_of_range`'s, the validation ``with_decisions`` uses. Loading
  a trace costs milliseconds, so only the record that would be the best of each task is
  checked; when it is flagged, the next one is, until one holds.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from msviz import compat
from msviz.errors import MsvizError, MsvizWarning
from msviz.records.database import RecordColumns, merge_advice, read_record_json
from msviz.records.row import mean_run_secs, valid_run_secs
from msviz.trace.sampling import out_of_range

__all__ = ["IMPOSSIBLE", "PEAK_FLOPS_PER_CORE", "PEAK_FLOPS_PER_DEVICE", "UNKNOWN_CORES",
           "fail_impossible", "find_impossible", "impossible_decision", "peak_flops",
           "refuse_impossible", "too_fast"]

#: The status of a record that cannot be true.
IMPOSSIBLE = "impossible"
#: The most FLOP/s one CPU core is taken to do: above every CPU's peak (see the module's doc).
PEAK_FLOPS_PER_CORE = 50e12
#: The cores a CPU target is taken to have when it does not say (more than any CPU has).
UNKNOWN_CORES = 1024
#: The most FLOP/s any other device (a GPU, an accelerator) is taken to do.
PEAK_FLOPS_PER_DEVICE = 50e15
_CPU_KINDS = ("llvm", "c")


def peak_flops(target_json: str) -> float:
    """The most FLOP/s a record measured on ``target_json`` (the target's JSON text, as a
    record stores it) can show; ``inf`` where the text is not a target's JSON."""
    try:
        target = json.loads(target_json)
        kind = target.get("kind")
    except (ValueError, TypeError, AttributeError):
        return math.inf
    if kind not in _CPU_KINDS:
        return PEAK_FLOPS_PER_DEVICE
    cores = target.get("num-cores")
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        cores = UNKNOWN_CORES
    return PEAK_FLOPS_PER_CORE * cores


def too_fast(run_secs: Sequence[float], flop: float, target_json: str) -> str:
    """Why a measured record's time cannot be true (empty when it can).

    Parameters
    ----------
    run_secs : sequence of float
        Its times (a measurement: :func:`~msviz.records.row.valid_run_secs`).
    flop : float
        The workload's FLOP count (NaN: unknown, only the sign of the time is checked).
    target_json : str
        The record's target, as the record stores it.
    """
    mean = mean_run_secs(run_secs)
    if not mean > 0:
        return f"a mean run time of {mean:g} s: no kernel runs in no time or less"
    if not (flop > 0 and math.isfinite(flop)):
        return ""
    bound = peak_flops(target_json)
    if flop / mean <= bound:
        return ""
    if bound == PEAK_FLOPS_PER_DEVICE:
        most = f"{bound / 1e9:,.0f} GFLOPS, more than any device does"
    else:
        most = (f"{bound / 1e9:,.0f} GFLOPS, more than any CPU of {bound / PEAK_FLOPS_PER_CORE:.0f}"
                f" core(s) does ({PEAK_FLOPS_PER_CORE / 1e12:.0f} TFLOPS a core)")
    return (f"{flop / mean / 1e9:,.0f} GFLOPS ({flop:,.0f} FLOP in {mean * 1e6:.4g} us) is "
            f"above {most}")


def _decisions(trace_json: Any) -> list[tuple[int, str, list, Any]]:
    """(instruction index, kind, attrs, decision) of each decision of a trace's JSON
    (``[instructions, [[index, decision], ...]]``); ValueError where it is malformed."""
    insts, decisions = trace_json
    out = []
    for index, decision in decisions:
        kind, _, attrs, _ = insts[index]
        out.append((int(index), str(kind), attrs, decision))
    return out


def _as_factors(decision: Any) -> list[int] | None:
    if not isinstance(decision, list) or not all(
            isinstance(f, int) and not isinstance(f, bool) for f in decision):
        return None
    return decision


def impossible_decision(trace_json: Any, loaded: Callable[[], Any]) -> str:
    """Why a record's trace cannot hold one of its decisions (empty when it can, or when that
    cannot be told: only what is certain flags a record).

    The recorded decisions are checked as :func:`msviz.trace.sampling.out_of_range` checks a
    site's: first from the JSON alone (a tile's factor below 1 or a wrong number of factors,
    a categorical index outside its candidates: what TVM cannot replay, or divides by), then
    each tile's factors against the loop's extent, which the trace TVM loads tells: TVM's
    replay keeps a tile whose factors multiply to the extent and replaces any other.

    Parameters
    ----------
    trace_json : list
        The trace as the record line stores it.
    loaded : callable
        ``loaded()``: the stock ``TuningRecord`` of the line (TVM replays its trace).
    """
    try:
        decisions = _decisions(trace_json)
    except (ValueError, TypeError, IndexError, KeyError):
        return ""  # not what this flags (a corrupt line is said when it is read)
    tiles = {}
    for index, kind, attrs, decision in decisions:
        what = f"instruction #{index} {kind}"
        if kind == "SampleCategorical":
            cands = attrs[0] if isinstance(attrs, list) and attrs else None
            if isinstance(cands, list) and (
                    not isinstance(decision, int) or not 0 <= decision < len(cands)):
                return f"{what}: {out_of_range(kind, decision, {'candidates': cands})}"
        if kind != "SamplePerfectTile":
            continue
        factors = _as_factors(decision)
        n = attrs[0] if isinstance(attrs, list) and attrs else None
        if factors is None or min(factors, default=0) < 1 or len(factors) != n:
            why = out_of_range(kind, decision, {"n": n}) or f"{decision!r} for {n} factors"
            return f"{what}: {decision}: {why}"
        tiles[index] = factors
    if not tiles:
        return ""
    try:
        kept_decisions = loaded().trace.as_json()[1]
    except Exception:  # a trace TVM cannot load: not what this flags
        return ""
    replayed = {int(i): d for i, d in kept_decisions}
    for index, factors in tiles.items():
        kept = _as_factors(compat.to_jsonable(replayed.get(index)))
        if kept is None or min(kept, default=0) < 1 or kept == factors:
            continue  # a loop of unknown extent, or kept as recorded
        extent = math.prod(kept)
        if math.prod(factors) != extent:
            why = out_of_range("SamplePerfectTile", factors, {"n": len(factors), "extent": extent})
            return (f"instruction #{index} SamplePerfectTile: {factors}: {why} (TVM replays "
                    f"{kept})")
    return ""


def find_impossible(path: Path, records: RecordColumns, flops: dict[int, float],
                    tuning_record: Callable[[int], Any]) -> dict[int, str]:
    """The records of a tuning-record file that cannot be true: ``{record line: reason}``;
    warned once (naming the lines and the first reasons) where there are any.

    Parameters
    ----------
    path : Path
        The ``database_tuning_record.json`` file (for the warning).
    records : RecordColumns
        Its records, as read.
    flops : dict
        Each workload's FLOP count.
    tuning_record : callable
        ``tuning_record(row)``: the stock record of row ``row`` (TVM loads its trace), asked
        only for the record that would be a task's best.
    """
    found: dict[int, str] = {}
    candidates: dict[int, list[tuple[float, int]]] = {}
    unscheduled = records.unscheduled
    for row, (line, w, secs) in enumerate(zip(records.line, records.workload, records.run_secs)):
        if not valid_run_secs(secs) or line in unscheduled:
            continue
        why = too_fast(secs, flops.get(w, math.nan), records.target[row])
        if why:
            found[line] = why
        else:
            candidates.setdefault(w, []).append((mean_run_secs(secs), row))
    for mine in candidates.values():  # stock's order: the least mean, then file order
        while mine:
            best = min(mine)
            try:
                trace_json = read_record_json(path, records.offset[best[1]])[1][0]
            except (OSError, ValueError, TypeError, IndexError):  # said when it is opened
                break
            why = impossible_decision(trace_json, lambda row=best[1]: tuning_record(row))
            if not why:
                break
            found[records.line[best[1]]] = why
            mine.remove(best)
    if found:
        lines = sorted(found)
        shown = "; ".join(f"line {line}: {found[line]}" for line in lines[:5])
        warnings.warn(
            f"{path}: {len(lines)} record(s) cannot be true (status {IMPOSSIBLE!r}, never the "
            f"best, although MetaSchedule's compile_tir would rank them by their time): {shown}"
            + (f"; and {len(lines) - 5} more" if len(lines) > 5 else ""),
            MsvizWarning, stacklevel=3)
    return found


def fail_impossible(impossible: dict[int, str], lines: Sequence[int], status: list,
                    latency: list, errors: list) -> None:
    """Mark (in place) the trials whose record line is in ``impossible`` with the status
    :data:`IMPOSSIBLE`, no latency and the reason as their error."""
    if not impossible:
        return
    for i, line in enumerate(lines):
        if line in impossible:
            status[i], latency[i], errors[i] = IMPOSSIBLE, math.nan, impossible[line]


def refuse_impossible(work_dir: Path, impossible: dict[int, str], verb: str) -> None:
    """Refuse a work dir holding records that cannot be true (``impossible``: record line ->
    why, as :attr:`msviz.Run.impossible`) before the model is built with it: stock
    ``compile_relax`` would rank them by their time and build with them. ``verb``: what was
    asked."""
    if not impossible:
        return
    lines = sorted(impossible)
    shown = "; ".join(f"line {k}: {impossible[k]}" for k in lines[:3])
    raise MsvizError(
        f"{work_dir} holds {len(lines)} record(s) that cannot be true ({shown}"
        f"{' ...' if len(lines) > 3 else ''}): MetaSchedule's compile_relax would rank them by "
        f"their time and build the model with them. {merge_advice(work_dir, verb)}")
