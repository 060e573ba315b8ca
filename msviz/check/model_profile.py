"""A tuned model, kernel by kernel: each call of the compiled model timed in place and matched to
its MetaSchedule task, against the latency the task's best record had in tuning.

TVM 0.27's Relax VM has no profiler any more (``VirtualMachine(..., profile=True)`` and
``tvm.runtime.profiling`` were removed), so the calls are timed through the VM's instrument hook
(``VirtualMachine.set_instrument``: a function called before and after every ``Call``
instruction): the model runs ``runs`` times after one untimed warm-up, each call is timed from
the end of its "before" hook to the start of its "after" hook (the device synchronized on both
sides off the CPU). The hook costs about a microsecond a call on its own; the median time of the
calls of ``vm.builtin.null_value`` (a builtin that does nothing, which the VM calls to release
tensors) in the same runs is that cost, and it is taken off every call (``hook_us``; not
corrected when the model makes no such call).

A call is a task's when its symbol is the task's name (the fused PrimFunc's name, as
``extract_tasks`` and ``compile_relax`` both name it), or is it with a numeric suffix (``_1``,
``1``) that deduplicating names may add. The other calls (VM builtins: allocation, shape checks;
PrimFuncs of no task) are summed per symbol in ``other``.
"""

from __future__ import annotations

import re
import statistics
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from msviz import compat
from msviz.check.model import best_record_us, fallback_tasks, timing_runs

__all__ = ["DEFAULT_THRESHOLD", "MODEL_PROFILE_COLUMNS", "OTHER_COLUMNS", "PROFILE_RUNS",
           "match_call", "model_profile_frame", "profile_built", "profile_executable",
           "profile_model"]

#: Model runs timed (after one untimed warm-up).
PROFILE_RUNS = 10
#: A task is flagged when its in-model time per call is over this many times its tuned latency.
DEFAULT_THRESHOLD = 1.5
#: The columns of a model profile frame, in order.
MODEL_PROFILE_COLUMNS = ["task", "calls", "in_model_us", "tuned_us", "ratio", "fallback",
                         "flagged"]
#: The columns of the frame of calls that are no task's (``frame.attrs["other"]``).
OTHER_COLUMNS = ["call", "calls", "us_per_run"]
#: The VM builtin whose calls measure the hook's own cost (it does nothing).
_NOOP_CALL = "vm.builtin.null_value"
_SUFFIX = re.compile(r"_?\d+$")


def match_call(symbol: str, task_names: Iterable[str]) -> str | None:
    """The task a VM call belongs to: its symbol is the task's name, or that name with a
    numeric suffix; None for any other call."""
    names = set(task_names)
    if symbol in names:
        return symbol
    base = _SUFFIX.sub("", symbol)
    return base if base != symbol and base in names else None


def time_calls(vm: Any, func_name: str, inputs: Sequence[Any], dev: Any, *, runs: int
               ) -> tuple[dict[str, list[float]], float | None, int]:
    """Per symbol, the microseconds of each of its calls over ``runs`` runs of ``func_name``
    (after a warm-up run; fewer runs when the warm-up says they would take over
    :data:`~msviz.check.model.TIMING_BUDGET_S`), the hook's own cost taken off; that cost
    (None: not measured); the runs timed."""
    import tvm  # heavy

    sync = dev.dlpack_device_type() != tvm.cpu().dlpack_device_type()
    started: list[int] = []  # a stack: a call of a VM function holds the calls it makes
    times: dict[str, list[float]] = defaultdict(list)

    def hook(_func: Any, symbol: str, before: bool, _ret: Any, *_args: Any) -> int:
        if sync:
            dev.sync()
        now = time.perf_counter_ns()
        if before:
            started.append(time.perf_counter_ns())
        elif started:
            times[str(symbol)].append((now - started.pop()) / 1e3)
        return 0

    tic = time.perf_counter()
    vm[func_name](*inputs)
    runs = timing_runs(time.perf_counter() - tic, runs, 1)[0]
    vm.set_instrument(hook)
    try:
        for _ in range(runs):
            vm[func_name](*inputs)
    finally:
        vm.set_instrument(None)
    noop = times.get(_NOOP_CALL)
    hook_us = statistics.median(noop) if noop else None
    if hook_us is not None:
        times = defaultdict(list, {s: [max(0.0, t - hook_us) for t in ts]
                                   for s, ts in times.items()})
    return dict(times), hook_us, runs


def profile_executable(exe: Any, model: Any, tasks: Sequence[Any], database: Any, dev: Any, *,
                       runs: int = PROFILE_RUNS, seed: int = 0) -> dict:
    """Profile a model built by ``compile_relax`` (``exe``) and match its calls to ``tasks``.

    Returns
    -------
    data : dict
        ``rows`` (per task, in task order: ``task``, ``calls`` per model run, ``in_model_us``
        (median over its calls of all runs), ``tuned_us`` (mean run time of the task's best
        record in ``database``; None without one), ``ratio``, ``fallback``), ``other`` (per
        symbol of no task: ``call``, ``calls`` per run, ``us_per_run``), ``hook_us``,
        ``runs``.
    """
    import tvm  # heavy
    from tvm import relax  # heavy

    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an int >= 1, got {runs!r}")
    vm = relax.VirtualMachine(exe, dev)
    inputs = [tvm.runtime.tensor(x, dev) for x in model.random_inputs(seed)]
    times, hook_us, runs = time_calls(vm, model.func_name, inputs, dev, runs=runs)
    names = [t.name for t in tasks]
    by_task: dict[str, list[float]] = defaultdict(list)
    other = []
    for symbol, us in times.items():
        task = match_call(symbol, names)
        if task is not None:
            by_task[task].extend(us)
        elif symbol != _NOOP_CALL:
            other.append({"call": symbol, "calls": len(us) / runs, "us_per_run": sum(us) / runs})
    fallback = set(fallback_tasks(database, tasks))
    rows = []
    for task in tasks:
        us = by_task.get(task.name, [])
        in_model = statistics.median(us) if us else None
        tuned = None if task.name in fallback else best_record_us(database, task.workload.mod)
        rows.append({"task": task.name, "calls": round(len(us) / runs), "in_model_us": in_model,
                     "tuned_us": tuned,
                     "ratio": in_model / tuned if in_model is not None and tuned else None,
                     "fallback": task.name in fallback})
    other.sort(key=lambda r: -r["us_per_run"])
    return {"rows": rows, "other": other, "hook_us": hook_us, "runs": runs}


def profile_model(model: Any, tasks: Sequence[Any], work_dir: Any, target: Any, *,
                  runs: int = PROFILE_RUNS, seed: int = 0) -> dict:
    """Build ``model`` with the work dir's database (``compile_relax``, as
    :func:`msviz.check.check_model` does) and profile it (:func:`profile_executable`)."""
    import tvm  # heavy

    database = compat.JSONDatabase(work_dir=str(work_dir))
    exe = compat.ms.relax_integration.compile_relax(database, model.mod, target, params=None)
    dev = tvm.device(compat.device_type(target), 0)
    return profile_executable(exe, model, tasks, database, dev, runs=runs, seed=seed)


def model_profile_frame(data: dict, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """A model profile (:func:`profile_executable`'s data) as a typed frame of
    :data:`MODEL_PROFILE_COLUMNS`; ``flagged``: ``ratio > threshold``. ``attrs`` holds
    ``other`` (a frame of :data:`OTHER_COLUMNS`), ``threshold``, ``hook_us`` and ``runs``."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not (
            threshold > 0):
        raise ValueError(f"threshold must be a number > 0 (in-model / tuned time), "
                         f"got {threshold!r}")
    rows = data.get("rows") or []
    frame = pd.DataFrame({
        "task": pd.Series([r["task"] for r in rows], dtype="string"),
        "calls": pd.Series([r["calls"] for r in rows], dtype="int64"),
        "in_model_us": pd.Series([r.get("in_model_us") for r in rows], dtype="float64"),
        "tuned_us": pd.Series([r.get("tuned_us") for r in rows], dtype="float64"),
        "ratio": pd.Series([r.get("ratio") for r in rows], dtype="float64"),
        "fallback": pd.Series([bool(r.get("fallback")) for r in rows], dtype="bool"),
    }, columns=MODEL_PROFILE_COLUMNS[:-1])
    frame["flagged"] = (frame["ratio"] > threshold).astype("bool")
    frame.attrs.update(
        other=pd.DataFrame(data.get("other") or [], columns=OTHER_COLUMNS).astype(
            {"call": "string", "calls": "float64", "us_per_run": "float64"}),
        threshold=float(threshold), hook_us=data.get("hook_us"), runs=data.get("runs"))
    return frame


def profile_built(model: Any, tasks: Sequence[Any], exe: Any, database: Any, dev: Any, *,
                  runs: int = PROFILE_RUNS, seed: int = 0) -> dict:
    """:func:`profile_executable`, its failure kept as the data's ``error`` (the text; the
    other fields empty) so a check after tuning records it rather than fail."""
    try:
        return {**profile_executable(exe, model, tasks, database, dev, runs=runs, seed=seed),
                "error": None}
    except Exception as err:
        lines = [x for x in str(err).strip().splitlines() if x.strip()]
        return {"rows": [], "other": [], "hook_us": None, "runs": runs,
                "error": f"{type(err).__name__}: {lines[-1] if lines else ''}"}
