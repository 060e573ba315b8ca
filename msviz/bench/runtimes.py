"""A tuned model against other runtimes: the TVM build, ONNX Runtime and OpenVINO on the same
inputs, timed in alternating rounds in fresh processes, their outputs compared, and ONNX
Runtime's profiler (OpenVINO's per-op counters) run for the per-operator comparison.

Each draw times every build in turn, each in its own fresh process
(:func:`msviz.bench.draws.run_draws` running :mod:`msviz.bench.runtime_jobs`: in one process the
runtimes' thread pools, spinning on the same cores after their work, slowed one another 2-3x),
the order reversed every other draw, so that a runtime's rounds are timed next to TVM's, in the
machine's mode of that moment; round k of a runtime in draw d is paired with TVM's round k of
draw d, and the pairs are one :class:`~msviz.bench.paired.PairedComparison` (B = TVM: its ratio
is the *gap*, TVM's time over the runtime's). Every runtime gets the physical cores as its
threads (ONNX Runtime's intra-op threads, OpenVINO's ``INFERENCE_NUM_THREADS``), all graph
optimizations, fp32.

:func:`task_specs` says what :func:`msviz.records.runtimes.match_nodes` needs of each task (its
shapes, its calls, where the model first calls it).

The same concept at its other layers: :mod:`msviz.engine.measure.runtimes`,
:mod:`msviz.records.runtimes`, :mod:`msviz.views.runtimes`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msviz.bench import runtime_jobs
from msviz.bench.draws import DEFAULT_DRAWS, check_draws, run_draws
from msviz.bench.paired import check_count, paired_summary
from msviz.bench.schedule import _arg_specs

__all__ = ["PROFILE_RUNS", "ROUNDS", "TOLERANCE", "task_specs", "time_runtimes"]

#: Rounds per draw by default (each: one timing of every build).
ROUNDS = 4
#: Runs the profilers record.
PROFILE_RUNS = 20
#: Outputs match when the largest difference is within this share of the reference's largest
#: magnitude (float32, other summation orders and algorithms).
TOLERANCE = 1e-3
_CALL = re.compile(r"R\.call_tir\(cls\.([A-Za-z_][A-Za-z0-9_]*)")


def task_specs(model: Any, tasks: Sequence[Any], target: Any) -> list[dict]:
    """Per task: ``task``, ``inputs`` (shapes), ``output`` (shape), ``calls`` (its weight),
    ``flop`` (per call) and ``order`` (the position of the model's first call of it in its
    lowered entry function; None when not found)."""
    text = model.lower(target)[model.func_name].script()
    order: dict[str, int] = {}
    for i, name in enumerate(_CALL.findall(text)):
        order.setdefault(name, i)
    out = []
    for task in tasks:
        specs = _arg_specs(task.workload.mod)
        found = order.get(task.name)
        if found is None:  # a deduplicated name: the task's with a numeric suffix
            found = min((i for n, i in order.items()
                         if re.fullmatch(re.escape(task.name) + r"_?\d+", n)), default=None)
        out.append({"task": task.name, "inputs": [list(s[1]) for s in specs[:-1]],
                    "output": list(specs[-1][1]), "calls": int(task.weight),
                    "flop": float(task.flop), "order": found})
    return out


def time_runtimes(exe: Any, model: Any, onnx_path: str | Path, runtimes: Sequence[str], *,
                  threads: int, device: str = "cpu", rounds: int = ROUNDS,
                  draws: int = DEFAULT_DRAWS, number: int = 10, repeat: int = 3,
                  profile_runs: int = PROFILE_RUNS, seed: int = 0) -> dict:
    """Time the TVM build ``exe`` and ``runtimes`` on ``onnx_path`` in paired rounds, compare
    their outputs with ONNX Runtime's (else the first runtime's), profile ONNX Runtime (and
    OpenVINO) per node.

    Returns
    -------
    data : dict
        ``whole`` (per runtime: ``runtime``, ``runtime_us`` and ``tvm_us`` (the least round),
        ``runtime_rounds_us``, ``tvm_rounds_us``, ``draw`` (per round), ``gap`` (the paired
        median of TVM's time over the runtime's), ``gap_low``, ``gap_high``, ``draw_gaps``,
        ``verdict``, ``spread`` (the runtime's slowest round over its fastest)), ``outputs``
        (per build: ``max_abs_diff`` per output against the reference, ``match``),
        ``reference``, ``scales``, ``ort_events`` (ONNX Runtime's profiler's ``Node`` events;
        [] without it), ``openvino_ops``, ``rounds``, ``draws``, ``threads``.
    """
    check_draws(draws)
    check_count("rounds", rounds)
    names = ["tvm", *runtimes]
    plans: list[list[dict]] = []  # one process each: a build's rounds (and its profile)
    for d in range(draws):
        for name in names if d % 2 == 0 else names[::-1]:
            plan = [{"kind": "time", "build": name, "number": number, "repeat": repeat}
                    for _ in range(rounds)]
            if d == 0 and name == "onnxruntime":
                plan.append({"kind": "ort_profile", "runs": profile_runs})
            if d == 0 and name == "openvino":
                plan.append({"kind": "ov_profile", "runs": profile_runs})
            plans.append(plan)
    reference = "onnxruntime" if "onnxruntime" in runtimes else runtimes[0]
    plans.append([{"kind": "outputs", "reference": reference}])
    extra = {"onnx": str(onnx_path), "runtimes": list(runtimes), "threads": int(threads)}
    results = run_draws({"tvm": exe}, model.random_inputs(seed), model.func_name, device,
                        plans, script=runtime_jobs.__file__, extra=extra, per_draw=True)
    times: dict[str, list[float]] = {n: [] for n in names}
    last: dict[str, dict] = {}
    for plan, out in zip(plans, results):
        for job, res in zip(plan, out):
            if job["kind"] == "time":
                times[job["build"]].append(float(res["us"]))
            else:
                last[job["kind"]] = res
    draw_of = [d for d in range(draws) for _ in range(rounds)]
    whole = []
    for runtime in runtimes:
        paired = paired_summary((runtime, "tvm"), list(zip(draw_of, times[runtime],
                                                            times["tvm"])))
        whole.append({"runtime": runtime, "runtime_us": min(times[runtime]),
                      "tvm_us": min(times["tvm"]), "runtime_rounds_us": times[runtime],
                      "tvm_rounds_us": times["tvm"], "draw": draw_of, "gap": paired.median,
                      "gap_low": paired.low, "gap_high": paired.high,
                      "draw_gaps": paired.draw_medians, "verdict": paired.verdict,
                      "spread": max(times[runtime]) / min(times[runtime])})
    checked = last["outputs"]
    outputs = {}
    for name, diffs in checked["diffs"].items():
        ok = len(diffs) == len(checked["scales"]) and all(
            d is not None and d <= TOLERANCE * max(s, 1.0)
            for d, s in zip(diffs, checked["scales"]))
        outputs[name] = {"max_abs_diff": diffs, "match": ok}
    return {"whole": whole, "outputs": outputs, "reference": reference,
            "scales": checked["scales"], "tolerance": TOLERANCE,
            "ort_events": last.get("ort_profile", {}).get("events", []),
            "openvino_ops": last.get("ov_profile", {}).get("ops", []),
            "rounds": rounds, "draws": draws, "threads": int(threads)}
