"""The measuring service's comparison of a tuned model against other runtimes
(``msviz.vs_runtimes``): the model built with the work dir's database, timed against ONNX
Runtime and OpenVINO in fresh processes (:func:`msviz.bench.runtimes.time_runtimes`), its
tasks' in-model times (the model profile, recorded or taken now) set beside the ONNX nodes
they cover (:func:`msviz.records.runtimes.task_rows`), under
:data:`~msviz.engine.measure.service.MEASURING_LOCK`: the other runtimes share the cores too.

The same concept at its other layers: :mod:`msviz.bench.runtimes`,
:mod:`msviz.records.runtimes`, :mod:`msviz.views.runtimes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msviz import compat
from msviz.bench.model_profile import PROFILE_RUNS, profile_model
from msviz.bench.peak import best_fp32_peak, measure_fp32_peak, physical_cores
from msviz.bench.runtimes import task_specs, time_runtimes
from msviz.engine.measure.requests import tuned_database
from msviz.engine.measure.service import MEASURING_LOCK
from msviz.records.runtimes import parse_ort_profile, task_rows

__all__ = ["compare_runtimes"]


def compare_runtimes(work_dir: Any, model: Any, tasks: Sequence[Any], target: Any,
                     onnx_path: str | Path, runtimes: Sequence[str], *,
                     profile: dict | None, rounds: int, draws: int, seed: int = 0) -> dict:
    """The data of a ``runtimes`` sidecar entry (see :func:`msviz.workflows.vs_runtimes.
    vs_runtimes`): ``profile`` is the work dir's recorded model profile (None, a failed one,
    or one that timed no task: the model is profiled now, in ``draws`` fresh processes)."""
    threads = physical_cores()
    database = tuned_database(work_dir, target)
    with MEASURING_LOCK:
        # the peak before and after each long timing: the largest is outside the slow mode
        peaks = [measure_fp32_peak(threads)]
        exe = model.compile(database, target)
        raw = time_runtimes(exe, model, onnx_path, runtimes, threads=threads,
                            device=compat.device_type(target), rounds=rounds, draws=draws,
                            seed=seed)
        peaks.append(measure_fp32_peak(threads))
        if profile is None or profile.get("error") or not any(
                r.get("in_model_us") is not None for r in profile.get("rows") or ()):
            profile = profile_model(model, tasks, work_dir, target, runs=PROFILE_RUNS,
                                    draws=draws, database=database)
            peaks.append(measure_fp32_peak(threads))
        peak = best_fp32_peak(peaks)
    specs = task_specs(model, tasks, target)
    in_model = {r["task"]: r.get("in_model_us") for r in profile["rows"]}
    nodes = parse_ort_profile(raw.pop("ort_events"))
    # each side's per-task times scaled to its whole-model time in this comparison (its
    # least round): the profiles ran in other runs, maybe in the machine's slow mode
    ort = next((w for w in raw["whole"] if w["runtime"] == "onnxruntime"), None)
    per_task = task_rows(
        specs, nodes, in_model, peak["gflops"],
        tvm_whole_us=min((w["tvm_us"] for w in raw["whole"]), default=None),
        ort_whole_us=None if ort is None else ort["runtime_us"]) if nodes else {
        "tasks": [], "other": [], "other_us": 0.0, "nodes": 0, "matched": 0,
        "tvm_scale": None, "ort_scale": None}
    return {**raw, **{f"ort_{k}" if k in ("nodes", "matched") else k: v
                      for k, v in per_task.items()},
            "peak": peak, "cpu": peak["cpu"], "model": model.name, "onnx": str(onnx_path),
            "runtimes": list(runtimes), "target": str(target),
            "versions": _versions(runtimes)}


def _versions(runtimes: Sequence[str]) -> dict[str, str]:
    out = {}
    for name in runtimes:
        try:
            out[name] = str(__import__(name).__version__)
        except (ImportError, AttributeError):
            out[name] = "?"
    return out
