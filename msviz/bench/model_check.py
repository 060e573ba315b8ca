"""The end-to-end check of a tuned model: build it from the work dir, run it, compare, time it.

Stock MetaSchedule's way (``relax_integration.compile_relax`` with the work dir's
``JSONDatabase``) against the untuned build (``tvm.compile`` of the same Relax module), on the
same random inputs. Tasks with no successful record in the database fall back to an untuned
kernel; they are named. The outputs are compared in this process; the builds are timed in a few
fresh processes (:mod:`msviz.bench.draws`), each build's time the least of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from msviz import compat
from msviz.bench.draws import (
    DEFAULT_DRAWS,
    SLOW_FACTOR,
    TIMING_BUDGET_S,
    check_draws,
    run_draws,
    timing_runs,
)

__all__ = ["DEFAULT_DRAWS", "TIMING_BUDGET_S", "best_record_us", "check_model",
           "end_to_end_times", "fallback_tasks", "flatten_outputs", "run_check", "timing_runs"]


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


def end_to_end_times(draws: Sequence[Mapping[str, float]]) -> dict:
    """The end-to-end times of several draws (fresh processes) as the check's fields: per build
    (``untuned``, ``tuned``) the least (``<build>_us``), every draw's time
    (``<build>_draws_us``, in draw order) and their spread (``<build>_spread``: the slowest
    draw over the least), and ``draws``. Pure: ``draws`` is one ``{"untuned_us": ...,
    "tuned_us": ...}`` per draw. ``slow_draws``: the draws in which both builds ran over
    :data:`~msviz.bench.draws.SLOW_FACTOR` times their least (the machine's slow mode)."""
    data: dict[str, Any] = {"draws": len(draws)}
    slow: list[set[int]] = []
    for key in ("untuned", "tuned"):
        times = [float(d[f"{key}_us"]) for d in draws]
        least = min(times) if times else None
        data.update({f"{key}_us": least, f"{key}_draws_us": times,
                     f"{key}_spread": max(times) / least if least else None})
        slow.append({i for i, t in enumerate(times) if least and t > SLOW_FACTOR * least})
    # the slow mode is the machine's, so it slows both builds of a draw together
    data["slow_draws"] = sorted(slow[0] & slow[1])
    return data


def run_check(model: Any, tasks: list, work_dir: str | Path, target: Any, *, seed: int = 0,
              number: int = 10, repeat: int = 3, rtol: float = 1e-4, atol: float = 1e-4,
              draws: int = DEFAULT_DRAWS, profile_runs: int | None = None,
              with_tuned: Callable[[Any, Any, Any], None] | None = None,
              database: Any = None) -> tuple[dict, list[dict] | None, Any]:
    """:func:`check_model`, and with ``profile_runs`` each draw also times the tuned build's
    calls (a ``calls`` job of :mod:`msviz.bench.draws`, in the same fresh processes);
    ``database``: the database to build with (None: the work dir's ``JSONDatabase``).

    Returns
    -------
    data, calls, database : dict, list of dict or None, JSONDatabase or None
        The check's data; per draw, the calls job's result (None without ``profile_runs`` or
        when the check failed before); the work dir's database (None if it failed to open).
    """

    check_draws(draws)
    data: dict[str, Any] = {"untuned_us": None, "tuned_us": None, "match": None,
                            "max_abs_diff": None, "fallback": [], "error": None,
                            "draws": draws, "untuned_draws_us": [], "tuned_draws_us": [],
                            "slow_draws": [],
                            "untuned_spread": None, "tuned_spread": None}
    calls = None
    step = "opening the database"
    try:
        if database is None:
            database = compat.JSONDatabase(work_dir=str(work_dir))
        data["fallback"] = fallback_tasks(database, tasks)
        step = f"building the model ({model.graph} graph) with the database"
        tuned = model.compile(database, target)
        step = "the untuned build"
        with target:
            plain = compat.tvm_compile(model.mod, target=target)
        dev = compat.tvm_device(compat.device_type(target), 0)
        arrays = model.random_inputs(seed)
        inputs = [compat.tensor(x, dev) for x in arrays]
        outs = {}
        for key, exe in (("untuned", plain), ("tuned", tuned)):
            step = f"running the {key} build"
            vm = compat.relax.VirtualMachine(exe, dev)
            outs[key] = flatten_outputs(vm[model.func_name](*inputs))
        diffs = [float(np.max(np.abs(a.astype("float64") - b.astype("float64"))))
                 if a.size else 0.0 for a, b in zip(outs["tuned"], outs["untuned"])]
        data.update(max_abs_diff=max(diffs, default=0.0),
                    match=outputs_match(outs["tuned"], outs["untuned"], rtol=rtol, atol=atol))
        step = f"timing both builds in {draws} fresh process{'es' if draws > 1 else ''}"
        jobs = [{"kind": "time", "build": key, "number": number, "repeat": repeat}
                for key in ("untuned", "tuned")]
        if profile_runs is not None:
            jobs.append({"kind": "calls", "build": "tuned", "runs": profile_runs})
        results = run_draws({"untuned": plain, "tuned": tuned}, arrays, model.func_name,
                            compat.device_type(target), jobs, draws=draws)
        data.update(end_to_end_times([{"untuned_us": r[0]["us"], "tuned_us": r[1]["us"]}
                                      for r in results]))
        if profile_runs is not None:
            calls = [r[2] for r in results]
        if with_tuned is not None:
            step = "with the tuned build"
            with_tuned(tuned, database, dev)
        if data["max_abs_diff"] is not None and not math.isfinite(data["max_abs_diff"]):
            data["max_abs_diff"] = None
    except Exception as err:
        lines = [x for x in str(err).strip().splitlines() if x.strip()]
        data["error"] = f"{step}: {type(err).__name__}: {lines[-1] if lines else ''}"
    return data, calls, database


def check_model(model: Any, tasks: list, work_dir: str | Path, target: Any, *, seed: int = 0,
                number: int = 10, repeat: int = 3, rtol: float = 1e-4,
                atol: float = 1e-4, draws: int = DEFAULT_DRAWS,
                with_tuned: Callable[[Any, Any, Any], None] | None = None) -> dict:
    """Compile ``model`` with the work dir's database and without, run both, compare and time.

    The outputs are compared in this process; the builds are timed in ``draws`` fresh
    processes (:func:`msviz.bench.draws.run_draws`: a process's speed can be ~1x or ~2x for
    its whole life on a shared machine), and each build's time is the least of them.

    Returns
    -------
    data : dict
        The ``end_to_end`` event's data: ``untuned_us``, ``tuned_us`` (the least over the
        draws of the median over ``repeat`` timings of ``number`` runs each, fewer for a build
        whose first run says they would take over :data:`TIMING_BUDGET_S`), ``match``
        (:func:`outputs_match`), ``max_abs_diff``, ``fallback``, ``error`` (None if it all
        ran), ``draws``, ``untuned_draws_us`` / ``tuned_draws_us`` (every draw's time) and
        ``untuned_spread`` / ``tuned_spread`` (the slowest draw over the least); see
        :func:`end_to_end_times`.

    ``with_tuned(exe, database, dev)``, when given, is called with the tuned build once it is
    timed.
    """
    return run_check(model, tasks, work_dir, target, seed=seed, number=number, repeat=repeat,
                     rtol=rtol, atol=atol, draws=draws, with_tuned=with_tuned)[0]


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


def flatten_outputs(value: Any) -> list[np.ndarray]:
    """A VM result (a tensor, or a tuple of them, nested) as a flat list of NumPy arrays."""
    if hasattr(value, "numpy"):
        return [value.numpy()]
    out: list[np.ndarray] = []
    for item in value:
        out.extend(flatten_outputs(item))
    return out
