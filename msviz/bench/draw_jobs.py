"""The child side of :func:`msviz.bench.draws.run_draws`: one fresh process ("a draw") loads
the builds and inputs a spec names and runs its jobs (see :mod:`msviz.bench.draws`).

This file runs as a script (``draw_jobs.py SPEC OUT``) and imports TVM and numpy only, not msviz:
a fresh process costs about a second of imports, msviz would double it. So it imports ``tvm``
itself (the Relax VM, its instrument hook) rather than through :mod:`msviz.compat`; it lives
beside its one user, :mod:`msviz.bench.draws` (tests/test_layers.py lets a child script that
imports no msviz import ``tvm``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["NOOP_CALL", "TIMING_BUDGET_S", "main", "run_jobs", "time_calls", "time_run_us",
           "timing_runs"]

#: Seconds the timing of one build may take in a draw: a slow build (an untuned BERT runs for
#: seconds on 2 cores) is timed over fewer runs, down to one.
TIMING_BUDGET_S = 5.0
#: The VM builtin whose calls measure the hook's own cost (it does nothing).
NOOP_CALL = "vm.builtin.null_value"


def timing_runs(first_s: float, number: int, repeat: int,
                budget_s: float = TIMING_BUDGET_S) -> tuple[int, int]:
    """``(number, repeat)`` whose runs fit ``budget_s`` at ``first_s`` seconds a run (the
    first run's time, an upper bound), never below one run; fast builds keep the given ones."""
    if first_s * number * repeat <= budget_s:
        return number, repeat
    runs = max(1, int(budget_s / max(first_s, 1e-9)))
    repeat = min(repeat, runs)
    return max(1, runs // repeat), repeat


def time_calls(vm: Any, func_name: str, inputs: Sequence[Any], dev: Any, *, runs: int
               ) -> tuple[dict[str, list[float]], float | None, int]:
    """Per symbol, the microseconds of each of its calls over ``runs`` runs of ``func_name``
    (after a warm-up run; fewer runs when the warm-up says they would take over
    :data:`TIMING_BUDGET_S`), the hook's own cost taken off; that cost (None: not measured);
    the runs timed.

    The hook (``VirtualMachine.set_instrument``) is called before and after every ``Call``
    instruction; a call is timed from the end of its "before" hook to the start of its "after"
    hook (the device synchronized on both sides off the CPU). The median time of the calls of
    :data:`NOOP_CALL` (a builtin that does nothing) is the hook's own cost."""
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
    noop = times.get(NOOP_CALL)
    hook_us = statistics.median(noop) if noop else None
    if hook_us is not None:
        times = defaultdict(list, {s: [max(0.0, t - hook_us) for t in ts]
                                   for s, ts in times.items()})
    return dict(times), hook_us, runs


def time_run_us(vm: Any, func_name: str, inputs: Sequence[Any], dev: Any, *, number: int,
                repeat: int, min_repeat_ms: int = 0, budget: bool = True
                ) -> tuple[float, int, int]:
    """One untimed run, then the median of ``repeat`` ``time_evaluator`` timings of ``number``
    runs each (fewer to fit :data:`TIMING_BUDGET_S` with ``budget``): ``(µs a run, number,
    repeat)``."""
    tic = time.perf_counter()
    vm[func_name](*inputs)
    if budget:
        number, repeat = timing_runs(time.perf_counter() - tic, number, repeat)
    timer = vm.time_evaluator(func_name, dev, number=number, repeat=repeat,
                              min_repeat_ms=min_repeat_ms)
    return statistics.median(timer(*inputs).results) * 1e6, number, repeat


def run_jobs(spec: Mapping[str, Any]) -> list[dict]:
    """This process's draw: load the builds and inputs that ``spec`` names and run its jobs in
    order (see the module's docstring)."""
    import numpy as np  # heavy
    import tvm  # heavy
    from tvm import relax  # heavy

    dev = tvm.device(spec["device"], int(spec.get("device_id", 0)))
    with np.load(spec["inputs"]) as saved:
        inputs = [tvm.runtime.tensor(saved[f"arg{i}"], dev) for i in range(len(saved.files))]
    vms: dict[str, Any] = {}
    results = []
    for job in spec["jobs"]:
        name = job["build"]
        if name not in vms:
            vms[name] = relax.VirtualMachine(tvm.runtime.load_module(spec["builds"][name]), dev)
        if job["kind"] == "time":
            us, number, repeat = time_run_us(vms[name], spec["func_name"], inputs, dev,
                                             number=int(job["number"]),
                                             repeat=int(job["repeat"]),
                                             min_repeat_ms=int(job.get("min_repeat_ms", 0)),
                                             budget=bool(job.get("budget", True)))
            results.append({"us": us, "number": number, "repeat": repeat, "pid": os.getpid()})
        elif job["kind"] == "calls":
            times, hook_us, runs = time_calls(vms[name], spec["func_name"], inputs, dev,
                                              runs=int(job["runs"]))
            results.append({"times": times, "hook_us": hook_us, "runs": runs,
                            "pid": os.getpid()})
        else:
            raise ValueError(f"unknown job kind {job['kind']!r}")
    return results


def main(argv: Sequence[str], run: Any = None) -> int:
    """``draw_jobs.py SPEC OUT``: run the spec's jobs (``run``, default :func:`run_jobs`; another
    child script passes its own), write the results."""
    spec_path, out_path = argv
    results = (run or run_jobs)(json.loads(Path(spec_path).read_text()))
    Path(out_path).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    # run as a script: its own folder (msviz/bench) is not a package root
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        del sys.path[0]
    sys.exit(main(sys.argv[1:]))
