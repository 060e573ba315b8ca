"""The end-to-end check of a tuned model: build it from the work dir, run it, compare, time it.

Stock MetaSchedule's way (``relax_integration.compile_relax`` with the work dir's
``JSONDatabase``) against the untuned build (``tvm.compile`` of the same Relax module), on the
same random inputs. Tasks with no successful record in the database fall back to an untuned
kernel; they are named.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from msviz import compat

__all__ = ["best_record_us", "check_model", "fallback_tasks"]


def best_record_us(database: Any, mod: Any) -> float | None:
    """Mean run time (µs) of the record ``compile_relax`` picks for workload ``mod`` (the
    database's top one); None when it has no successful record."""
    if not database.has_workload(mod):
        return None
    top = database.get_top_k(database.commit_workload(mod), 1)
    secs = [float(s) for s in top[0].run_secs] if top else []
    if not secs or max(secs) >= compat.FAILED_RUN_SECS:
        return None
    return sum(secs) / len(secs) * 1e6


def fallback_tasks(database: Any, tasks: list) -> list[str]:
    """Names of the tasks whose workload has no successful record in ``database``."""
    return [task.name for task in tasks if best_record_us(database, task.workload.mod) is None]


#: Seconds the timing of one build may take: a slow build (an untuned BERT runs for seconds on 2
#: cores) is timed over fewer runs, down to one.
TIMING_BUDGET_S = 5.0


def timing_runs(first_s: float, number: int, repeat: int,
                budget_s: float = TIMING_BUDGET_S) -> tuple[int, int]:
    """``(number, repeat)`` whose runs fit ``budget_s`` at ``first_s`` seconds a run (the
    first run's time, an upper bound), never below one run; fast builds keep the given ones."""
    if first_s * number * repeat <= budget_s:
        return number, repeat
    runs = max(1, int(budget_s / max(first_s, 1e-9)))
    repeat = min(repeat, runs)
    return max(1, runs // repeat), repeat


def _time_us(vm: Any, func: str, args: list, dev: Any, *, number: int, repeat: int) -> float:
    timer = vm.time_evaluator(func, dev, number=number, repeat=repeat, min_repeat_ms=0)
    return float(np.median(timer(*args).results)) * 1e6


def check_model(model: Any, tasks: list, work_dir: str | Path, target: Any, *, seed: int = 0,
                number: int = 10, repeat: int = 3, rtol: float = 1e-4,
                atol: float = 1e-4, with_tuned: Callable[[Any, Any, Any], None] | None = None
                ) -> dict:
    """Compile ``model`` with the work dir's database and without, run both, compare and time.

    Returns
    -------
    data : dict
        The ``end_to_end`` event's data: ``untuned_us``, ``tuned_us`` (median over
        ``repeat`` timings of ``number`` runs each, fewer for a build whose first run says they
        would take over :data:`TIMING_BUDGET_S`), ``match`` (:func:`outputs_match`),
        ``max_abs_diff``, ``fallback``, ``error`` (None if it all ran).

    ``with_tuned(exe, database, dev)``, when given, is called with the tuned build once it is
    timed (the model profile reuses it rather than compile the model again).
    """
    import tvm
    from tvm import relax

    data: dict[str, Any] = {"untuned_us": None, "tuned_us": None, "match": None,
                            "max_abs_diff": None, "fallback": [], "error": None}
    step = "opening the database"
    try:
        database = compat.JSONDatabase(work_dir=str(work_dir))
        data["fallback"] = fallback_tasks(database, tasks)
        step = "compile_relax with the database"
        tuned = compat.ms.relax_integration.compile_relax(database, model.mod, target,
                                                          params=None)
        step = "the untuned build"
        with target:
            plain = tvm.compile(model.mod, target=target)
        dev = tvm.device(compat.device_type(target), 0)
        inputs = [tvm.runtime.tensor(x, dev) for x in model.random_inputs(seed)]
        outs, times = {}, {}
        for key, exe in (("untuned", plain), ("tuned", tuned)):
            step = f"running the {key} build"
            vm = relax.VirtualMachine(exe, dev)
            tic = time.perf_counter()
            outs[key] = _flatten(vm[model.func_name](*inputs))
            runs = timing_runs(time.perf_counter() - tic, number, repeat)
            times[key] = _time_us(vm, model.func_name, inputs, dev, number=runs[0],
                                  repeat=runs[1])
        diffs = [float(np.max(np.abs(a.astype("float64") - b.astype("float64"))))
                 if a.size else 0.0 for a, b in zip(outs["tuned"], outs["untuned"])]
        data.update(
            untuned_us=times["untuned"], tuned_us=times["tuned"],
            max_abs_diff=max(diffs, default=0.0),
            match=outputs_match(outs["tuned"], outs["untuned"], rtol=rtol, atol=atol))
        if with_tuned is not None:
            step = "profiling the tuned build"
            with_tuned(tuned, database, dev)
        if data["max_abs_diff"] is not None and not math.isfinite(data["max_abs_diff"]):
            data["max_abs_diff"] = None
    except Exception as err:
        lines = [x for x in str(err).strip().splitlines() if x.strip()]
        data["error"] = f"{step}: {type(err).__name__}: {lines[-1] if lines else ''}"
    return data


def outputs_match(outs: list[np.ndarray], refs: list[np.ndarray], *, rtol: float,
                  atol: float) -> bool:
    """``numpy.allclose`` of each output with its reference, ``atol`` relative to the
    reference's largest finite magnitude (at least 1). A deep model's outputs reach thousands
    (ResNet-50's logits: 7,000), where summing in another order moves an entry near 0 by 0.01,
    2e-6 of the scale; an absolute ``atol`` would call that a mismatch."""
    def scale(ref: np.ndarray) -> float:
        finite = np.abs(ref[np.isfinite(ref)])
        return max(1.0, float(finite.max())) if finite.size else 1.0

    return len(outs) == len(refs) and all(
        a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol * scale(b), equal_nan=True)
        for a, b in zip(outs, refs))


def _flatten(value: Any) -> list[np.ndarray]:
    if hasattr(value, "numpy"):
        return [value.numpy()]
    out: list[np.ndarray] = []
    for item in value:
        out.extend(_flatten(item))
    return out
