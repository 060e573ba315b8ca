"""A tuned model, kernel by kernel: each call of the compiled model timed in place and matched to
its MetaSchedule task, against the latency the task's best record had in tuning.

TVM 0.27's Relax VM has no profiler any more (``VirtualMachine(..., profile=True)`` and
``tvm.runtime.profiling`` were removed), so the calls are timed through the VM's instrument hook
(:func:`msviz.bench.draws.time_calls`): the model runs ``runs`` times after one untimed warm-up,
each call timed between its hooks, the hook's own cost (the median call of
``vm.builtin.null_value``, a builtin that does nothing) taken off every call (``hook_us``; not
corrected when the model makes no such call).

A process's speed can be ~1x or ~2x for its whole life on a shared machine, so the model is
profiled in ``draws`` fresh processes (:func:`msviz.bench.draws.run_draws`); a task's
``in_model_us`` is the least over the draws of its median call, ``in_model_max_us`` the most,
``spread`` the one over the other, and a task is ``flagged`` (slower in place than in tuning)
only when every draw says so, ``disputed`` when some draws do and some do not
(:func:`combine_draws`, pure; the frame is
:func:`msviz.records.model_profile.model_profile_frame`'s).

A call is a task's when its symbol is the task's name (the fused PrimFunc's name, as
``extract_tasks`` and ``compile_relax`` both name it), or is it with a numeric suffix (``_1``,
``1``) that deduplicating names may add, or with ``_prepacked`` (the name the expert graph's
build gives a task whose weights it prepacked). The other calls (VM builtins: allocation,
shape checks; PrimFuncs of no task) are summed per symbol in ``other``.

The same concept read and drawn: :mod:`msviz.records.model_profile`,
:mod:`msviz.views.model_profile`.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from msviz import compat
from msviz.bench.draws import (
    DEFAULT_DRAWS,
    NOOP_CALL,
    SLOW_FACTOR,
    check_draws,
    run_draws,
    time_calls,
)
from msviz.bench.model_check import best_record_us, fallback_tasks

__all__ = ["DEFAULT_DRAWS", "PROFILE_RUNS", "combine_draws", "match_call", "profile_draws",
           "profile_executable", "profile_model", "slow_draws", "time_calls"]

#: Model runs timed in each draw (after one untimed warm-up).
PROFILE_RUNS = 10
_SUFFIX = re.compile(r"_?\d+$")
_PREPACKED = "_prepacked"


def match_call(symbol: str, task_names: Iterable[str]) -> str | None:
    """The task a VM call belongs to: its symbol is the task's name, or that name with a
    numeric suffix, or with ``_prepacked`` (the expert graph's build of a task whose weights
    it prepacked); None for any other call."""
    names = set(task_names)
    if symbol.endswith(_PREPACKED):
        symbol = symbol[:-len(_PREPACKED)]
    if symbol in names:
        return symbol
    base = _SUFFIX.sub("", symbol)
    return base if base != symbol and base in names else None


def combine_draws(draws: Sequence[Mapping[str, Any]], task_names: Sequence[str],
                  tuned_us: Mapping[str, float | None], fallback: Iterable[str] = ()) -> dict:
    """A model profile from the call timings of several draws. Pure.

    Parameters
    ----------
    draws : sequence of dict
        Per draw (a fresh process), :func:`~msviz.bench.draws.time_calls`'s result as a dict:
        ``times`` (per symbol, µs of each call), ``hook_us``, ``runs``.
    task_names : sequence of str
        The tasks, in order.
    tuned_us : mapping of str to float or None
        Each task's tuned latency (its best record's; None: none).
    fallback : iterable of str
        The tasks with no successful record (the model ran their untuned kernel).

    Returns
    -------
    data : dict
        ``rows`` (per task, in order: ``task``, ``calls`` per model run, ``in_model_us`` (the
        least over the draws of the median of its calls), ``in_model_draws_us`` (each draw's
        median, None where a draw had no call of it), ``tuned_us``, ``ratio``
        (``in_model_us / tuned_us``), ``fallback``), ``other`` (per symbol of no task:
        ``call``, ``calls`` per run, ``us_per_run``: the least over the draws), ``hook_us``
        (the median of the draws'), ``runs`` (the fewest a draw timed), ``draws``,
        ``slow_draws`` (:func:`slow_draws`).
    """
    fallback = set(fallback)
    per_draw: list[dict[str, float]] = []  # per draw: task -> median call
    calls: dict[str, int] = {}  # task -> calls per run (the first draw that made any)
    other: dict[str, dict] = {}
    for draw in draws:
        runs = max(1, int(draw["runs"]))
        by_task: dict[str, list[float]] = defaultdict(list)
        for symbol, us in (draw.get("times") or {}).items():
            task = match_call(symbol, task_names)
            if task is not None:
                by_task[task].extend(us)
            elif symbol != NOOP_CALL:
                row = other.setdefault(symbol, {"call": symbol, "calls": len(us) / runs,
                                                "us_per_run": sum(us) / runs})
                row["us_per_run"] = min(row["us_per_run"], sum(us) / runs)
        per_draw.append({t: statistics.median(us) for t, us in by_task.items() if us})
        for task, us in by_task.items():
            calls.setdefault(task, round(len(us) / runs))
    rows = []
    for name in task_names:
        each = [d.get(name) for d in per_draw]
        seen = [x for x in each if x is not None]
        in_model = min(seen) if seen else None
        tuned = None if name in fallback else tuned_us.get(name)
        rows.append({"task": name, "calls": calls.get(name, 0), "in_model_us": in_model,
                     "in_model_draws_us": each, "tuned_us": tuned,
                     "ratio": in_model / tuned if in_model is not None and tuned else None,
                     "fallback": name in fallback})
    hooks = [float(d["hook_us"]) for d in draws if d.get("hook_us") is not None]
    return {"rows": rows, "other": sorted(other.values(), key=lambda r: -r["us_per_run"]),
            "hook_us": statistics.median(hooks) if hooks else None,
            "runs": min((int(d["runs"]) for d in draws), default=None), "draws": len(draws),
            "slow_draws": slow_draws(per_draw, calls)}


def slow_draws(per_draw: Sequence[Mapping[str, float]], calls: Mapping[str, int]) -> list[int]:
    """The draws whose kernels took, per model run (each task's median call x its calls),
    over :data:`~msviz.bench.draws.SLOW_FACTOR` times the fastest draw's: a process in the
    machine's slow mode, where every kernel runs slower together. Pure."""
    totals = [sum(us * calls.get(task, 1) for task, us in draw.items()) for draw in per_draw]
    least = min(totals, default=0.0)
    return [i for i, t in enumerate(totals) if least > 0 and t > SLOW_FACTOR * least]


def _tuned_and_fallback(tasks: Sequence[Any], database: Any) -> tuple[dict, list[str]]:
    fallback = fallback_tasks(database, tasks)
    return ({t.name: None if t.name in fallback else best_record_us(database, t.workload.mod)
             for t in tasks}, fallback)


def profile_executable(exe: Any, model: Any, tasks: Sequence[Any], database: Any, dev: Any, *,
                       runs: int = PROFILE_RUNS, seed: int = 0) -> dict:
    """Profile a model built by ``compile_relax`` (``exe``) in this process (one draw; see
    :func:`profile_model` for several fresh ones) and match its calls to ``tasks``: the data
    of :func:`combine_draws`."""
    _check_runs(runs)
    vm = compat.relax.VirtualMachine(exe, dev)
    inputs = [compat.tensor(x, dev) for x in model.random_inputs(seed)]
    times, hook_us, runs = time_calls(vm, model.func_name, inputs, dev, runs=runs)
    tuned, fallback = _tuned_and_fallback(tasks, database)
    return combine_draws([{"times": times, "hook_us": hook_us, "runs": runs}],
                         [t.name for t in tasks], tuned, fallback)


def profile_draws(calls: Sequence[Mapping[str, Any]], tasks: Sequence[Any], database: Any
                  ) -> dict:
    """:func:`combine_draws` of the draws' ``calls`` results (as :func:`msviz.bench.model_check.
    run_check` gives them), with ``error`` None; its failure kept as the data's ``error`` (the
    text; the other fields empty) so a check after tuning records it rather than fail."""
    try:
        tuned, fallback = _tuned_and_fallback(tasks, database)
        return {**combine_draws(calls, [t.name for t in tasks], tuned, fallback), "error": None}
    except Exception as err:
        lines = [x for x in str(err).strip().splitlines() if x.strip()]
        return {"rows": [], "other": [], "hook_us": None, "runs": None, "draws": len(calls),
                "error": f"{type(err).__name__}: {lines[-1] if lines else ''}"}


def profile_model(model: Any, tasks: Sequence[Any], work_dir: Any, target: Any, *,
                  runs: int = PROFILE_RUNS, seed: int = 0, draws: int = DEFAULT_DRAWS,
                  database: Any = None) -> dict:
    """Build ``model`` with the work dir's database (:meth:`Model.compile`, as
    :func:`msviz.bench.check_model` does; ``database``: the one to build with, None: the work
    dir's ``JSONDatabase``) and profile it in ``draws`` fresh processes
    (:func:`msviz.bench.draws.run_draws`, ``runs`` model runs each): the data of
    :func:`combine_draws`."""
    _check_runs(runs)
    check_draws(draws)
    if database is None:
        database = compat.JSONDatabase(work_dir=str(work_dir))
    exe = model.compile(database, target)
    results = run_draws({"tuned": exe}, model.random_inputs(seed), model.func_name,
                        compat.device_type(target),
                        [{"kind": "calls", "build": "tuned", "runs": runs}], draws=draws)
    tuned, fallback = _tuned_and_fallback(tasks, database)
    return combine_draws([r[0] for r in results], [t.name for t in tasks], tuned, fallback)


def _check_runs(runs: Any) -> None:
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an int >= 1, got {runs!r}")
