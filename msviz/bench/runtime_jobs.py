"""The child side of :func:`msviz.bench.runtimes.time_runtimes`: one fresh process (a draw)
loads the tuned TVM build and the ONNX file in each runtime a spec names and runs its jobs.

Like :mod:`msviz.bench.draw_jobs` (whose spec it extends with ``onnx``, ``runtimes`` and
``threads``) this file runs as a script and imports no msviz: TVM, numpy and the runtimes only.
A process that times holds one build or runtime only: their thread pools, each spinning on the
same cores after its work, slowed one another 2-3x in one process. Every build is timed by
the same Python loop (call, wait for the output): ONNX Runtime and
OpenVINO have no ``time_evaluator``, and a C++ loop for one side only would not be fair.

Jobs:

* ``{"kind": "time", "build": name, "number": n, "repeat": r}``: one untimed run, then
  ``repeat`` times ``number`` runs; gives ``us`` (the median repeat, µs a run).
* ``{"kind": "outputs", "reference": name}``: one run of every build; gives ``diffs`` (per
  build, the largest absolute difference of each output from the reference's; None where the
  shapes differ) and ``scales`` (the largest magnitude of each reference output).
* ``{"kind": "ort_profile", "runs": r}``: ONNX Runtime's profiler over ``r`` runs; gives
  ``events`` (its trace's ``Node`` events).
* ``{"kind": "ov_profile", "runs": r}``: OpenVINO's per-op counters after ``r`` runs; gives
  ``ops`` (``node``, ``op``, ``exec``, ``us``: executed ops only).
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["main", "run_jobs", "runner"]


def _ort_session(path: str, threads: int, profile_dir: str | None = None) -> Any:
    import onnxruntime as ort  # optional: the compare extra

    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if profile_dir is not None:
        opts.enable_profiling = True
        opts.profile_file_prefix = str(Path(profile_dir) / "ort")
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def _ov_request(path: str, threads: int, perf: bool = False) -> Any:
    import openvino as ov  # optional: the compare extra

    config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
              # fp32 as the others: on a CPU with bf16 units OpenVINO would run bf16
              "INFERENCE_PRECISION_HINT": "f32"}
    if perf:
        config["PERF_COUNT"] = "YES"
    return ov.Core().compile_model(path, "CPU", config).create_infer_request()


def runner(spec: Mapping[str, Any], inputs: Sequence[Any], name: str) -> Any:
    """A callable that runs build or runtime ``name`` once and returns its outputs (numpy)."""
    import numpy as np  # heavy

    threads = int(spec.get("threads", 1))
    if name in spec["builds"]:
        import tvm  # heavy
        from tvm import relax  # heavy

        dev = tvm.device(spec["device"], int(spec.get("device_id", 0)))
        vm = relax.VirtualMachine(tvm.runtime.load_module(spec["builds"][name]), dev)
        args = [tvm.runtime.tensor(x, dev) for x in inputs]
        func = vm[spec["func_name"]]

        def run_tvm() -> list:
            result = func(*args)
            items = [result] if hasattr(result, "numpy") else list(result)  # a tuple
            return [np.asarray(r.numpy()) for r in items]
        return run_tvm
    if name == "onnxruntime":
        sess = _ort_session(spec["onnx"], threads)
        feed = {i.name: x for i, x in zip(sess.get_inputs(), inputs)}
        return lambda: sess.run(None, feed)
    if name == "openvino":
        request = _ov_request(spec["onnx"], threads)

        def run_ov() -> list:
            result = request.infer(dict(enumerate(inputs)))
            return [np.asarray(v) for v in result.values()]
        return run_ov
    raise ValueError(f"unknown runtime {name!r}")


def _time(run: Any, number: int, repeat: int) -> float:
    run()
    times = []
    for _ in range(repeat):
        tic = time.perf_counter()
        for _ in range(number):
            run()
        times.append((time.perf_counter() - tic) / number)
    return statistics.median(times) * 1e6


def _outputs(runs: Mapping[str, Any], reference: str) -> dict:
    import numpy as np  # heavy

    got = {name: [np.asarray(x, dtype="float64") for x in run()] for name, run in runs.items()}
    ref = got[reference]
    diffs = {name: [float(np.abs(a - b).max()) if a.shape == b.shape else None
                    for a, b in zip(outs, ref)] + [None] * (len(ref) - len(outs))
             for name, outs in got.items()}
    return {"diffs": diffs, "scales": [float(np.abs(r).max()) if r.size else 0.0 for r in ref]}


def _ort_profile(spec: Mapping[str, Any], inputs: Sequence[Any], runs: int) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="msviz-ort-profile-") as tmp:
        sess = _ort_session(spec["onnx"], int(spec.get("threads", 1)), tmp)
        feed = {i.name: x for i, x in zip(sess.get_inputs(), inputs)}
        for _ in range(runs):
            sess.run(None, feed)
        trace = json.loads(Path(sess.end_profiling()).read_text())
    return [e for e in trace if e.get("cat") == "Node"]


def _ov_profile(spec: Mapping[str, Any], inputs: Sequence[Any], runs: int) -> list[dict]:
    request = _ov_request(spec["onnx"], int(spec.get("threads", 1)), perf=True)
    feed = dict(enumerate(inputs))
    for _ in range(runs):
        request.infer(feed)
    return [{"node": str(p.node_name), "op": str(p.node_type), "exec": str(p.exec_type),
             "us": p.real_time.total_seconds() * 1e6}
            for p in request.get_profiling_info() if "EXECUTED" in str(p.status)
            and "NOT_RUN" not in str(p.status)]


def run_jobs(spec: Mapping[str, Any]) -> list[dict]:
    """This process's draw: load what ``spec`` names and run its jobs in order."""
    import numpy as np  # heavy

    with np.load(spec["inputs"]) as saved:
        inputs = [saved[f"arg{i}"] for i in range(len(saved.files))]
    runs: dict[str, Any] = {}  # loaded on first use: a timing process holds one runtime only

    def get(name: str) -> Any:
        if name not in runs:
            runs[name] = runner(spec, inputs, name)
        return runs[name]
    results = []
    for job in spec["jobs"]:
        if job["kind"] == "time":
            us = _time(get(job["build"]), int(job["number"]), int(job["repeat"]))
            results.append({"us": us, "pid": os.getpid()})
        elif job["kind"] == "outputs":
            names = [*spec["builds"], *spec.get("runtimes", ())]
            results.append(_outputs({n: get(n) for n in names}, job["reference"]))
        elif job["kind"] == "ort_profile":
            results.append({"events": _ort_profile(spec, inputs, int(job["runs"]))})
        elif job["kind"] == "ov_profile":
            results.append({"ops": _ov_profile(spec, inputs, int(job["runs"]))})
        else:
            raise ValueError(f"unknown job kind {job['kind']!r}")
    return results


def main(argv: Sequence[str]) -> int:
    """``runtime_jobs.py SPEC OUT``: :func:`run_jobs`, through :func:`draw_jobs.main` (loaded
    from its file: this script imports no package)."""
    path = Path(__file__).with_name("draw_jobs.py")
    found = importlib.util.spec_from_file_location("msviz_draw_jobs", path)
    assert found is not None and found.loader is not None, path
    draw_jobs = importlib.util.module_from_spec(found)
    found.loader.exec_module(draw_jobs)
    return int(draw_jobs.main(argv, run_jobs))


if __name__ == "__main__":  # its own folder (msviz/bench) is not a package root
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        del sys.path[0]
    sys.exit(main(sys.argv[1:]))
