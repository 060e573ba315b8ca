"""Against what users would otherwise run: msviz's tuned models, stock MetaSchedule's, ONNX
Runtime, OpenVINO and PyTorch on the CPU.

Models: catalogue ``resnet50`` and ``mobilenetv2`` at 224x224 and ``bert-base`` at sequence 128
(:func:`msviz.models.build` with ``input_shape``), and ``onnx-cnn``: ResNet-50's layers at
160x160 exported to ONNX the way PyTorch exports a CNN (each Conv followed by a
BatchNormalization node), read back by ``msviz.models.load`` as a user's file is. The same
weights and input (``Model.random_inputs(0)``) run by:

* **ort**: ONNX Runtime's CPU provider on the ONNX file, all graph optimizations, intra-op
  threads = ``--threads`` (the physical cores);
* **openvino**: OpenVINO's CPU plugin on the same file (``pip install openvino``), latency hint,
  fp32 inference precision (it picks bf16 on a CPU that has it);
* **torch-eager** and **torch-compile**: PyTorch on the CPU (if installed; catalogue models);
* **tvm-untuned**: ``tvm.compile`` of the Relax module, run by the Relax VM;
* **msviz-<budget>** (``--time 15m,30m,60m``): one ``msviz.Session(model, max_seconds=<the
  largest>)`` on msviz's expert graph (batch norms folded, epilogues fused, weights prepacked),
  built (``Model.compile``) with the records of each budget's first minutes;
* **stock-<budget>** (``--stock``): stock ``relax.pipeline.static_shape_tuning_pipeline`` with the
  CPU weight prepack on stock's graph, in a child stopped at the largest budget, built through
  the same pipeline (``total_trials=0``) with the records it had at each budget.

Each runtime is timed in ``--processes`` fresh processes, alternating runtimes (model timings
on these small shared VMs are bimodal per process): each process warms up (``--warmup-s``, at
least 3 runs), then times ``--rounds`` rounds of runs from Python and keeps the median round;
the least over processes and the spread (largest / least) are printed, with the ratios to
ONNX Runtime's and OpenVINO's least and the share of this machine's fp32 peak. Every output is
checked against ONNX Runtime's: the largest difference over the output's largest magnitude must
stay under ``--rtol``.

::

    python benchmarks/vs_runtimes.py                       # untuned TVM against the runtimes
    python benchmarks/vs_runtimes.py --models resnet50 --time 15m,60m --stock
    python benchmarks/vs_runtimes.py --models mobilenetv2,bert-base,onnx-cnn --time 20m --stock
    python benchmarks/vs_runtimes.py --models resnet50 --time 15m,60m --stock --files F --reuse
                                     # msviz's rows from F/resnet50/msviz-work, tuned before
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from msviz.models.graph import Graph

#: The models and the input sizes they are compared at.
SIZES = {"resnet50": (1, 3, 224, 224), "mobilenetv2": (1, 3, 224, 224),
         "bert-base": (128, 768), "onnx-cnn": (1, 3, 160, 160)}
#: Runtimes besides the tuned builds (``msviz-<budget>``, ``stock-<budget>``).
RUNTIMES = ("ort", "openvino", "torch-eager", "torch-compile", "tvm-untuned")


class TorchGraph(Graph):
    """:class:`Graph`'s weights on PyTorch ops: the first run draws them as the Relax build does
    (same order, same seed) and keeps them; later runs (:meth:`forward`) replay them."""

    def __init__(self, seed: int = 0, fold_bn: bool = False) -> None:
        import torch
        import torch.nn.functional as F

        self.torch, self.F = torch, F
        self.fold_bn = fold_bn
        self.rng = np.random.default_rng(seed)
        self.weights: list[Any] = []
        self.next: int | None = None  # None: drawing; else the index of the next weight
        nn = SimpleNamespace(softmax=lambda x, axis=-1: torch.softmax(x, axis),
                             relu=torch.relu, gelu=F.gelu)
        self.op = SimpleNamespace(
            add=torch.add, multiply=torch.mul, matmul=torch.matmul, nn=nn,
            permute_dims=lambda x, axes: x.permute(*axes),
            reshape=lambda x, shape: x.reshape(shape),
            clip=lambda x, lo, hi: torch.clamp(x, lo, hi))

    def const(self, shape: tuple[int, ...], scale: float = 0.1, offset: float = 0.0) -> Any:
        if self.next is not None:
            self.next += 1
            return self.weights[self.next - 1]
        data = (offset + scale * self.rng.standard_normal(shape)).astype("float32")
        self.weights.append(self.torch.from_numpy(data))
        return self.weights[-1]

    def scalar(self, value: float) -> Any:
        return float(np.float32(value))

    def emit(self, expr: Any) -> Any:
        return expr

    def shape(self, x: Any) -> tuple[int, ...]:
        return tuple(x.shape)

    def layer_norm(self, x: Any, weights: tuple[Any, Any]) -> Any:
        return self.F.layer_norm(x, (x.shape[-1],), *weights, eps=1e-5)

    def conv_bn(self, x: Any, c_in: int, c_out: int, k: int, stride: int = 1,
                groups: int = 1) -> Any:
        fan_in = c_in // groups * k * k
        weight = self.const((c_out, c_in // groups, k, k), scale=(2 / fan_in) ** 0.5)
        y = self.F.conv2d(x, weight, stride=stride, padding=k // 2, groups=groups)
        if self.fold_bn:
            return y + self.const((1, c_out, 1, 1))
        gamma, beta = self.const((c_out,), 0.1, 1.0), self.const((c_out,))
        mean, var = self.const((c_out,)), self.const((c_out,), 0.0, 1.0)
        return self.F.batch_norm(y, mean, var, gamma, beta, training=False, eps=1e-5)

    def relu(self, x: Any) -> Any:
        return self.torch.relu(x)

    def relu6(self, x: Any) -> Any:
        return self.torch.clamp(x, 0.0, 6.0)

    def max_pool(self, x: Any, k: int = 3, stride: int = 2) -> Any:
        return self.F.max_pool2d(x, k, stride, padding=k // 2)

    def pool_flatten(self, x: Any, channels: int) -> Any:
        return x.mean(dim=(2, 3)).reshape(1, channels)

    def forward(self, body: Any, x: Any) -> Any:
        """``body`` on ``x`` with the weights drawn on the first call."""
        self.next = None if not self.weights else 0
        return body(self, x)


# -- one runtime in this (fresh) process ------------------------------------------------------


def _runner(runtime: str, name: str, files: Path, threads: int) -> Any:
    """A callable ``run(x) -> numpy output`` for ``runtime``, built and warmed up."""
    from msviz import models

    if runtime == "ort":
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(str(files / "model.onnx"), opts,
                                    providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        return lambda x: sess.run(None, {names[0]: x})[0]
    if runtime == "openvino":
        import openvino as ov

        compiled = ov.Core().compile_model(str(files / "model.onnx"), "CPU", {
            "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": "f32"})  # else bf16 where the CPU has it
        request = compiled.create_infer_request()
        return lambda x: np.array(request.infer([x])[compiled.outputs[0]])
    if runtime.startswith("torch"):
        import torch

        torch.set_num_threads(threads)
        found = models.MODELS[name]
        g = TorchGraph(0, found.fold_bn)

        def eager(x: Any) -> Any:
            return g.forward(found.body, x)

        with torch.inference_mode():  # draws the weights, so that compiled runs only replay
            eager(torch.from_numpy(np.load(files / "x.npy")))
        fn = torch.compile(eager) if runtime == "torch-compile" else eager

        def run(x: np.ndarray) -> np.ndarray:
            with torch.inference_mode():
                return fn(torch.from_numpy(x)).numpy()
        return run
    import tvm
    from tvm import relax

    vm = relax.VirtualMachine(tvm.runtime.load_module(str(files / f"{runtime}.so")), tvm.cpu())
    return lambda x: vm["main"](tvm.runtime.tensor(x)).numpy()


def time_runtime(runtime: str, name: str, files: Path, threads: int, rounds: int,
                 round_s: float, warmup_s: float) -> dict[str, Any]:
    """Build, warm up and time one runtime in this process; writes its output to FILES.

    The warm-up runs for ``warmup_s`` seconds and at least 3 runs after the first: PyTorch's
    eager convolutions (oneDNN) were seen to take 20x their later time for their first few
    runs here.
    """
    x = np.load(files / "x.npy")
    tic = time.perf_counter()
    run = _runner(runtime, name, files, threads)
    out = run(x)  # the first run: torch.compile compiles here
    setup_s = time.perf_counter() - tic
    start, warm = time.perf_counter(), 0
    while warm < 3 or time.perf_counter() - start < warmup_s:
        tic = time.perf_counter()
        run(x)
        last = time.perf_counter() - tic
        warm += 1
    number = max(1, int(round_s / max(last, 1e-6)))
    times = []
    for _ in range(rounds):
        tic = time.perf_counter()
        for _ in range(number):
            run(x)
        times.append((time.perf_counter() - tic) / number)
    np.save(files / f"out-{runtime}.npy", np.asarray(out, dtype="float32"))
    return {"ms": float(np.median(times)) * 1e3, "setup_s": setup_s, "runs": number * rounds,
            "warmup_runs": warm}


# -- builds and tuning (children) -------------------------------------------------------------


def model_of(name: str, files: Path) -> Any:
    """Model ``name`` as msviz tunes it, its ONNX file written to FILES/model.onnx. The catalogue
    models are built in Relax (the ONNX file has the same weights); ``onnx-cnn`` is read from
    its ONNX file, as a user's exported CNN is (ResNet-50's layers, each convolution followed by
    a BatchNormalization node)."""
    from msviz import models
    from msviz.models.onnx_export import export_onnx

    path = files / "model.onnx"
    if name == "onnx-cnn":
        if not path.is_file():
            export_onnx("resnet50", path, input_shape=SIZES[name], batch_norm=True)
        return models.load(str(path), name="onnx-cnn")
    if not path.is_file():
        export_onnx(name, path, input_shape=SIZES[name])
    return models.build(name, input_shape=SIZES[name])


def budget_label(seconds: float) -> str:
    return f"{seconds / 60:g}m"


def tuned_seconds(work_dir: Path, name: str) -> float:
    """Seconds from a work dir's first environment line to its last trial row (its sidecar);
    raises when the sidecar has no environment line or names another model than ``name``."""
    from datetime import datetime

    lines = [json.loads(ln) for ln in (work_dir / "msviz_sidecar.jsonl").read_text().splitlines()
             if ln.strip()]
    envs = [e for e in lines if e.get("kind") == "environment"]
    if not envs:
        raise RuntimeError(f"--reuse: {work_dir}'s sidecar has no environment line: not an "
                           "msviz tuning to build")
    held = (envs[0].get("model") or {}).get("name")
    if held != name:
        raise RuntimeError(f"--reuse: {work_dir} holds a tuning of {held!r}, not {name!r}")
    stamps = [datetime.fromisoformat(e["timestamp"]) for e in lines
              if e.get("kind") == "trial" and "timestamp" in e]
    start = datetime.fromisoformat(envs[0]["timestamp"])
    return (max(stamps) - start).total_seconds() if stamps else 0.0


def records_until(work_dir: Path, into: Path, seconds: float) -> int:
    """Copy WORK_DIR's database into INTO with the records measured in its first SECONDS of
    tuning (by the sidecar's trial rows); returns how many."""
    import shutil
    from datetime import datetime

    lines = [json.loads(ln) for ln in (work_dir / "msviz_sidecar.jsonl").read_text().splitlines()
             if ln.strip()]
    start = next(datetime.fromisoformat(e["timestamp"]) for e in lines
                 if e.get("kind") == "environment")
    keep = {e["line"] for e in lines if e.get("kind") == "trial" and e.get("line") is not None
            and (datetime.fromisoformat(e["timestamp"]) - start).total_seconds() <= seconds}
    into.mkdir(parents=True, exist_ok=True)
    shutil.copy(work_dir / "database_workload.json", into / "database_workload.json")
    shutil.copy(work_dir / "msviz_sidecar.jsonl", into / "msviz_sidecar.jsonl")
    records = (work_dir / "database_tuning_record.json").read_text().splitlines()
    (into / "database_tuning_record.json").write_text(
        "".join(ln + "\n" for i, ln in enumerate(records) if i in keep))
    return len(keep)


def prepare(name: str, files: Path, threads: int, budgets: list[float],
            reuse: bool = False) -> dict[str, Any]:
    """The ONNX file, the input and the TVM builds of model ``name``, written to ``files``:
    untuned, and msviz's tuning for the largest budget (seconds) built with the records of each
    budget's first seconds (``msviz-<budget>.so``); returns the tuning walls and builds. With
    ``reuse``, a tuning already in FILES/msviz-work is built instead of tuning again."""
    import tvm

    import msviz
    from msviz import compat
    from msviz.bench.model_check import fallback_tasks

    model = model_of(name, files)
    np.save(files / "x.npy", model.random_inputs(0)[0])
    target = compat.make_target("llvm", num_cores=threads)
    tasks = model.extract_tasks(target)
    info: dict[str, Any] = {"description": model.description, "tasks": len(tasks),
                            "gflop": sum(t.weight * t.flop for t in tasks) / 1e9,
                            "graph": model.graph_report(target).summary(), "builds": {}}
    tic = time.perf_counter()
    with target:
        tvm.compile(model.mod, target=target).export_library(str(files / "tvm-untuned.so"))
    info["untuned_build_s"] = time.perf_counter() - tic
    if budgets:
        work_dir = files / "msviz-work"
        if reuse and (work_dir / "msviz_sidecar.jsonl").is_file():
            info["tuning_wall_s"] = tuned_seconds(work_dir, name)
            info["reused"] = str(work_dir)
            if info["tuning_wall_s"] < 0.95 * max(budgets):
                raise RuntimeError(
                    f"--reuse: {work_dir} holds {info['tuning_wall_s']:.0f} s of tuning, "
                    f"less than the largest budget ({budget_label(max(budgets))})")
        else:
            session = msviz.Session(model, target=target, work_dir=work_dir,
                                    max_seconds=max(budgets), num_threads=threads,
                                    end_to_end_check=False)
            tic = time.perf_counter()
            session.start()
            state = session.wait()
            info["tuning_wall_s"] = time.perf_counter() - tic
            if state != "finished":
                raise RuntimeError(f"msviz session {state}: {session.end_reason}")
        for seconds in sorted(budgets):
            label = f"msviz-{budget_label(seconds)}"
            at = files / label
            trials = records_until(work_dir, at, seconds)
            database = compat.JSONDatabase(work_dir=str(at))
            tic = time.perf_counter()
            model.compile(database, target).export_library(str(files / f"{label}.so"))
            info["builds"][label] = {"trials": trials, "build_s": time.perf_counter() - tic,
                                     "fallback": len(fallback_tasks(database, tasks))}
    return info


def stock_tune(name: str, files: Path, threads: int, trials: int) -> None:
    """Stock MetaSchedule on stock's graph: ``static_shape_tuning_pipeline`` with the CPU weight
    prepack, into FILES/stock-work (the parent stops it at the wall budget)."""
    from tvm import relax

    from msviz import compat

    model = model_of(name, files).on_graph("stock")
    target = compat.make_target("llvm", num_cores=threads)
    relax.pipeline.static_shape_tuning_pipeline(
        total_trials=trials, target=target, work_dir=str(files / "stock-work"),
        cpu_weight_prepack=True,
        max_trials_per_task=max(64, trials // max(1, len(model.extract_tasks(target)))))(model.mod)


def stock_build(name: str, files: Path, threads: int, label: str, lines: int) -> dict[str, Any]:
    """Build ``model`` with the first LINES records of stock's run, through TVM's own
    ``static_shape_tuning_pipeline(total_trials=0)``, to FILES/<label>.so."""
    import shutil

    import tvm
    from tvm import relax

    from msviz import compat

    model = model_of(name, files).on_graph("stock")
    target = compat.make_target("llvm", num_cores=threads)
    at = files / label
    at.mkdir(parents=True, exist_ok=True)
    if not (files / "stock-work" / "database_workload.json").is_file():
        raise RuntimeError(f"stock wrote no record before {label}")
    shutil.copy(files / "stock-work" / "database_workload.json", at / "database_workload.json")
    records = (files / "stock-work" / "database_tuning_record.json").read_text().splitlines()
    (at / "database_tuning_record.json").write_text("".join(ln + "\n" for ln in records[:lines]))
    tic = time.perf_counter()
    mod = relax.pipeline.static_shape_tuning_pipeline(
        total_trials=0, target=target, work_dir=str(at), cpu_weight_prepack=True)(model.mod)
    tvm.compile(mod, target=target).export_library(str(files / f"{label}.so"))
    return {"trials": min(lines, len(records)), "build_s": time.perf_counter() - tic}


def run_stock(name: str, common: list[str], files: Path, budgets: list[float]) -> dict:
    """Stock's tuning in a child stopped at the largest budget, the record count read at each
    budget, then one build per budget."""
    import signal

    records = files / "stock-work" / "database_tuning_record.json"
    proc = subprocess.Popen([sys.executable, __file__, "--stock-tune", name, *common],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    start, counts = time.perf_counter(), {}
    for seconds in sorted(budgets):
        while time.perf_counter() - start < seconds and proc.poll() is None:
            time.sleep(1.0)
        counts[seconds] = (len(records.read_text().splitlines()) if records.is_file() else 0)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    out = {}
    for seconds, lines in counts.items():
        label = f"stock-{budget_label(seconds)}"
        out[label] = _child(["--stock-build", name, label, str(lines), *common])
    return out


def peak_gflops(threads: int) -> float | None:
    """This machine's fp32 peak on THREADS cores (msviz.bench.peak: FMA chains in registers on
    every core), or None (no compiler: the table goes without the share of the peak)."""
    from msviz.bench.peak import fp32_peak

    found = fp32_peak(threads)
    return None if found["gflops"] is None else float(found["gflops"])


def _child(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()][-1:]
        return {"error": tail[0] if tail else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- the report -------------------------------------------------------------------------------


def machine() -> list[str]:
    """The CPU and the versions of what runs the models."""
    lines = []
    try:
        cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        fields = dict(ln.split(":", 1) for ln in cpu.splitlines() if ":" in ln)
        lines.append(f"CPU: {fields.get('Model name', '?').strip()}, "
                     f"{fields.get('CPU(s)', '?').strip()} CPUs, "
                     f"{fields.get('Core(s) per socket', '?').strip()} cores per socket, "
                     f"{fields.get('Thread(s) per core', '?').strip()} thread(s) per core; "
                     f"{platform.platform()}")
    except OSError:
        lines.append(f"CPU: {platform.processor() or '?'} (no lscpu)")
    import tvm

    llvm = tvm.target.codegen.llvm_version_major() if hasattr(tvm.target, "codegen") else "?"
    lines.append(f"numpy {np.__version__}; TVM {tvm.__version__} (LLVM {llvm})")
    try:
        import onnxruntime as ort

        lines.append(f"onnxruntime {ort.__version__} (MLAS, its own kernels)")
    except ImportError:
        lines.append("onnxruntime: not installed (pip install msviz[compare])")
    try:
        import torch

        cfg = torch.__config__.show()
        blas = next((ln.split("BLAS_INFO=")[1].split(",")[0] for ln in cfg.splitlines()
                     if "BLAS_INFO=" in ln), "?")
        dnn = next((ln.strip(" -") for ln in cfg.splitlines() if "MKL-DNN" in ln
                    or "oneDNN" in ln), "no oneDNN")
        lines.append(f"torch {torch.__version__} (BLAS {blas}; {dnn})")
    except ImportError:
        lines.append("torch: not installed")
    return lines


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def parse_budgets(text: str) -> list[float]:
    """``15m,30m,60m`` (or seconds: ``90``, ``90s``) as seconds."""
    out = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        unit = {"m": 60.0, "s": 1.0, "h": 3600.0}.get(part[-1], None)
        value = float(part[:-1]) * unit if unit else float(part)
        if not (value > 0 and math.isfinite(value)):  # nan fails both
            raise ValueError(f"a budget must be a positive, finite time: {part!r}")
        out.append(value)
    return sorted(set(out))


def check_options(args: argparse.Namespace, names: list[str], runtimes: list[str],
                  budgets: list[float]) -> str:
    """What is wrong with the options (empty when nothing is), before anything is built: a
    count below its least (``--processes 0`` or ``--rounds 0`` would time nothing and print
    dashes or NaN), a time or tolerance that is not a positive finite number, nothing to
    time, a name given twice, ``--files`` naming a file."""
    least = {"--threads": (args.threads, 1), "--processes": (args.processes, 2),
             "--rounds": (args.rounds, 1)}
    for flag, (value, low) in least.items():
        if value < low:
            return f"{flag} must be at least {low}, got {value}"
    for flag, value, zero_ok in (("--round-s", args.round_s, False),
                                 ("--warmup-s", args.warmup_s, True),
                                 ("--rtol", args.rtol, False)):
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
            return (f"{flag} must be a {'non-negative' if zero_ok else 'positive'} finite "
                    f"number, got {value}")
    if not names:
        return f"--models names no model: name some of {', '.join(SIZES)}"
    if not runtimes and not budgets:
        return "nothing to time: --runtimes names none and --time no msviz budget"
    twice = sorted({x for x in names + runtimes if (names + runtimes).count(x) > 1})
    if twice:
        return f"{', '.join(twice)} named more than once in --models/--runtimes"
    if args.files is not None and Path(args.files).exists() and not Path(args.files).is_dir():
        return f"--files {args.files} is a file, not a directory to keep the builds in"
    if getattr(args, "reuse", False) and (args.files is None or not budgets):
        return "--reuse builds a tuning kept under --files: give --files and --time"
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(SIZES),
                        help=f"comma-separated, of {', '.join(SIZES)}")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES),
                        help="comma-separated, of " + ", ".join(RUNTIMES))
    parser.add_argument("--time", default="",
                        help="msviz tuning budgets, e.g. 15m,30m,60m: one run of the largest, "
                        "built with the records of each budget's first minutes")
    parser.add_argument("--stock", action="store_true",
                        help="also stock MetaSchedule (static_shape_tuning_pipeline with the "
                        "CPU weight prepack) on stock's graph, stopped at the same walls")
    parser.add_argument("--reuse", action="store_true",
                        help="build msviz's rows from the tuning already in "
                        "FILES/<model>/msviz-work (same machine) instead of tuning again")
    parser.add_argument("--threads", type=int, default=2, help="the physical cores")
    parser.add_argument("--processes", type=int, default=2,
                        help="fresh processes timing each runtime (>= 2)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per process")
    parser.add_argument("--round-s", type=float, default=0.5, help="seconds a round lasts")
    parser.add_argument("--warmup-s", type=float, default=3.0,
                        help="seconds of untimed runs first (and at least 3 runs)")
    parser.add_argument("--rtol", type=float, default=1e-4,
                        help="largest output difference / the output's largest magnitude")
    parser.add_argument("--files", default=None, help="keep the builds here (default: temp)")
    parser.add_argument("--budgets", help=argparse.SUPPRESS)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    parser.add_argument("--stock-tune", help=argparse.SUPPRESS)
    parser.add_argument("--stock-build", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--time-one", nargs=2, metavar=("RUNTIME", "MODEL"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.prepare:  # child: builds and tuning of one model
        budgets = parse_budgets(args.budgets or "")
        print(json.dumps(prepare(args.prepare, Path(args.files), args.threads, budgets,
                                 args.reuse)))
        return 0
    if args.stock_tune:  # child: stock's tuning, stopped by the parent
        stock_tune(args.stock_tune, Path(args.files), args.threads, 1_000_000)
        return 0
    if args.stock_build:  # child: one build of stock's records
        name, label, lines = args.stock_build
        print(json.dumps(stock_build(name, Path(args.files), args.threads, label, int(lines))))
        return 0
    if args.time_one:  # child: one runtime's timing
        print(json.dumps(time_runtime(args.time_one[0], args.time_one[1], Path(args.files),
                                      args.threads, args.rounds, args.round_s,
                                      args.warmup_s)))
        return 0

    names = [n.strip() for n in args.models.split(",") if n.strip()]
    runtimes = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    unknown = [n for n in names if n not in SIZES] + [r for r in runtimes if r not in RUNTIMES]
    if unknown:
        parser.error(f"unknown model or runtime {unknown}")
    try:
        budgets = parse_budgets(args.time)
    except ValueError as err:
        parser.error(f"--time: {err}")
    problem = check_options(args, names, runtimes, budgets)
    if problem:
        parser.error(problem)
    for module, prefix in (("onnxruntime", "ort"), ("openvino", "openvino"),
                           ("torch", "torch")):
        try:
            __import__(module)
        except ImportError:
            print(f"{module} is not installed: no {prefix} timings")
            runtimes = [r for r in runtimes if not r.startswith(prefix)]
    root = Path(args.files or tempfile.mkdtemp(prefix="msviz-vs-runtimes-"))
    peak = peak_gflops(args.threads)
    print("\n".join(machine()))
    print(f"fp32 peak of {args.threads} cores (FMA chains): "
          + (f"{peak:.0f} GFLOPS" if peak else "not measured (no gcc)"))
    print(f"threads {args.threads}; {args.processes} fresh processes per runtime, alternating, "
          f"each {args.warmup_s} s (>= 3 runs) of warm-up then the median of {args.rounds} "
          f"rounds of ~{args.round_s} s; tolerance {args.rtol:g} of the output's scale "
          f"against ONNX Runtime's (tvm-untuned's without it); msviz budgets "
          f"{', '.join(budget_label(b) for b in budgets) or 'none'}"
          f"{' (and stock at the same walls)' if args.stock and budgets else ''}; "
          f"files in {root}", flush=True)
    for name in names:
        report_model(name, root / name, runtimes, budgets, peak, args)
    return 0


def report_model(name: str, files: Path, runtimes: list[str], budgets: list[float],
                 peak: float | None, args: argparse.Namespace) -> None:
    """Prepare, time and print one model's table."""
    files.mkdir(parents=True, exist_ok=True)
    common = ["--files", str(files), "--threads", str(args.threads)]
    prep = _child(["--prepare", name, "--budgets", ",".join(map(str, budgets)), *common,
                   *(["--reuse"] if args.reuse else [])])
    if "error" in prep:
        print(f"\n{name}: preparing failed: {prep['error']}")
        return
    builds = dict(prep["builds"])
    if args.stock and budgets:
        builds.update(run_stock(name, common, files, budgets))
    print(f"\n{name}: {prep['description']}; {prep['gflop']:.2f} GFLOP, {prep['tasks']} tasks; "
          f"graph: {prep['graph']}")
    print(f"  untuned TVM build {prep['untuned_build_s']:.1f} s" + (
        f"; msviz tuning wall {prep['tuning_wall_s']:.0f} s" if "tuning_wall_s" in prep else "")
          + (f" (reused: {prep['reused']})" if "reused" in prep else ""))
    for label, b in builds.items():
        print(f"  {label}: " + (f"error {b['error']}" if "error" in b else
                               f"{b['trials']} trials, build {b['build_s']:.0f} s"
                               + (f", {b['fallback']} task{'s' * (b['fallback'] != 1)} untuned"
                                  if "fallback" in b else "")))
    timed = runtimes + [label for label, b in builds.items() if "error" not in b]
    results: dict[str, list[dict[str, Any]]] = {r: [] for r in timed}
    for _ in range(args.processes):  # interleaved, so a slow spell hits every runtime
        for runtime in timed:
            results[runtime].append(_child(["--time-one", runtime, name, *common,
                                            "--rounds", str(args.rounds),
                                            "--round-s", str(args.round_s),
                                            "--warmup-s", str(args.warmup_s)]))
    ref_name = "ort" if (files / "out-ort.npy").is_file() else "tvm-untuned"
    ref = np.load(files / f"out-{ref_name}.npy").astype("float64") \
        if (files / f"out-{ref_name}.npy").is_file() else None
    least = {r: min((t["ms"] for t in res if "ms" in t), default=None)
             for r, res in results.items()}
    ort_ms, ov_ms = least.get("ort"), least.get("openvino")
    print(f"  {'runtime':<15}{'least ms':>10}{'spread':>8}{'vs ort':>8}{'vs ov':>7}"
          f"{'% peak':>8}{'rel diff':>10}  ok   per process (ms)")
    for runtime, res in results.items():
        ok = [t for t in res if "ms" in t]
        errors = [t["error"] for t in res if "error" in t]
        diff = None
        out_path = files / f"out-{runtime}.npy"
        if ref is not None and out_path.is_file():
            out = np.load(out_path).astype("float64")
            diff = (float(np.abs(out - ref).max() / np.abs(ref).max())
                    if out.shape == ref.shape else float("inf"))
        lo = least[runtime]
        spread = max(t["ms"] for t in ok) / lo if ok and lo else None
        share = prep["gflop"] / (lo / 1e3) / peak * 100 if lo and peak else None
        print(f"  {runtime:<15}{_fmt(lo, '.1f'):>10}{_fmt(spread):>8}"
              f"{_fmt(lo / ort_ms if lo and ort_ms else None):>8}"
              f"{_fmt(lo / ov_ms if lo and ov_ms else None):>7}"
              f"{_fmt(share, '.0f'):>8}{_fmt(diff, '.1e'):>10}  "
              f"{'-' if diff is None else ('yes' if diff <= args.rtol else 'NO'):<4} "
              f"{', '.join(format(t['ms'], '.1f') for t in ok)}"
              + (f"  errors: {errors}" if errors else ""), flush=True)


if __name__ == "__main__":
    sys.exit(main())
