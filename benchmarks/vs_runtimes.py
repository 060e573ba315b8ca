"""Against what users would pick instead: msviz's TVM builds, ONNX Runtime and PyTorch on the CPU.

Catalogue ``resnet50`` and ``mobilenetv2`` at 224x224 and ``bert-base`` at sequence 128
(:func:`msviz.models.build` with ``input_shape``), the SAME weights (seed 0) and the same input
(``Model.random_inputs(0)``) run by:

* **ort**: ONNX Runtime's CPU provider on :func:`msviz.models.onnx_export.export_onnx`'s file,
  all graph optimizations, intra-op threads = ``--threads`` (the physical cores);
* **torch-eager** and **torch-compile**: PyTorch on the CPU (if installed), the network built by
  :class:`TorchGraph` (the catalogue recipe on torch ops, the same weight draws), under
  ``torch.inference_mode``; ``torch.compile`` with its default (inductor) backend;
* **tvm-untuned**: ``tvm.compile`` of the Relax module (MetaSchedule's untuned default
  schedules), run by the Relax VM;
* **tvm-tuned** (``--trials N`` > 0): an ``msviz.Session(model, max_trials=N)`` tunes first
  (its wall is printed), then ``compile_relax`` with its work dir.

Each runtime is timed in ``--processes`` fresh processes (model timings on these small shared
VMs can be bimodal per process): each process warms up (``--warmup-s``, at least 3 runs),
then times ``--rounds`` rounds of runs from Python (the same loop for every runtime: call, wait
for the output) and keeps the median round; the least over processes and the spread (largest /
least) are printed, with the ratio to ONNX Runtime's least. Every output is checked against
the untuned TVM build's: the largest difference over the output's largest magnitude must stay
under ``--rtol`` (default 1e-4: float32 through up to 50 layers, other summation orders).

::

    python benchmarks/vs_runtimes.py                       # the three models, untuned TVM
    python benchmarks/vs_runtimes.py --models mobilenetv2 --trials 64
"""

from __future__ import annotations

import argparse
import json
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
         "bert-base": (128, 768)}
RUNTIMES = ("ort", "torch-eager", "torch-compile", "tvm-untuned", "tvm-tuned")


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
        return lambda x: sess.run(["y"], {"x": x})[0]
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


def prepare(name: str, files: Path, threads: int, trials: int) -> dict[str, Any]:
    """The ONNX file, the input and the TVM builds of model ``name`` (tuned after ``trials``
    when > 0), written to ``files``; returns the tuning wall and build times."""
    import tvm

    import msviz
    from msviz import compat, models
    from msviz.bench.model_check import fallback_tasks
    from msviz.models.onnx_export import export_onnx

    model = models.build(name, input_shape=SIZES[name])
    export_onnx(name, files / "model.onnx", input_shape=SIZES[name])
    np.save(files / "x.npy", model.random_inputs(0)[0])
    target = compat.make_target("llvm", num_cores=threads)
    info: dict[str, Any] = {"description": model.description}
    tic = time.perf_counter()
    with target:
        tvm.compile(model.mod, target=target).export_library(str(files / "tvm-untuned.so"))
    info["untuned_build_s"] = time.perf_counter() - tic
    if trials > 0:
        work_dir = files / "work"
        session = msviz.Session(model, target=target, work_dir=work_dir, max_trials=trials,
                                num_threads=threads, end_to_end_check=False)
        tic = time.perf_counter()
        session.start()
        state = session.wait()
        info["tuning_wall_s"] = time.perf_counter() - tic
        if state != "finished":
            raise RuntimeError(f"msviz session {state}: {session.end_reason}")
        database = compat.JSONDatabase(work_dir=str(work_dir))
        info["tasks"] = len(model.extract_tasks(target))
        info["fallback"] = fallback_tasks(database, model.extract_tasks(target))
        tic = time.perf_counter()
        exe = compat.ms.relax_integration.compile_relax(database, model.mod, target,
                                                        params=None)
        exe.export_library(str(files / "tvm-tuned.so"))
        info["tuned_build_s"] = time.perf_counter() - tic
    return info


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(SIZES),
                        help=f"comma-separated, of {', '.join(SIZES)}")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES),
                        help="comma-separated, of " + ", ".join(RUNTIMES))
    parser.add_argument("--trials", type=int, default=0,
                        help="msviz tuning budget (trials over all tasks); 0 skips tuning")
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
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    parser.add_argument("--time", nargs=2, metavar=("RUNTIME", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.prepare:  # child: builds and tuning of one model
        files = Path(args.files)
        print(json.dumps(prepare(args.prepare, files, args.threads, args.trials)))
        return 0
    if args.time:  # child: one runtime's timing
        print(json.dumps(time_runtime(args.time[0], args.time[1], Path(args.files),
                                      args.threads, args.rounds, args.round_s,
                                      args.warmup_s)))
        return 0

    names = [n.strip() for n in args.models.split(",") if n.strip()]
    runtimes = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    unknown = [n for n in names if n not in SIZES] + [r for r in runtimes if r not in RUNTIMES]
    if unknown:
        parser.error(f"unknown model or runtime {unknown}")
    if args.trials <= 0 and "tvm-tuned" in runtimes:
        runtimes.remove("tvm-tuned")
    for module, prefix in (("onnxruntime", "ort"), ("torch", "torch")):
        try:
            __import__(module)
        except ImportError:
            print(f"{module} is not installed: no {prefix} timings")
            runtimes = [r for r in runtimes if not r.startswith(prefix)]
    root = Path(args.files or tempfile.mkdtemp(prefix="msviz-vs-runtimes-"))
    print("\n".join(machine()))
    print(f"threads {args.threads}; {args.processes} fresh processes per runtime, each "
          f"{args.warmup_s} s (>= 3 runs) of warm-up then the median of {args.rounds} rounds "
          f"of ~{args.round_s} s; tolerance {args.rtol:g} of the "
          f"output's scale against tvm-untuned; msviz tuning budget {args.trials} trials; "
          f"files in {root}", flush=True)
    for name in names:
        files = root / name
        files.mkdir(parents=True, exist_ok=True)
        common = ["--files", str(files), "--threads", str(args.threads)]
        prep = _child(["--prepare", name, "--trials", str(args.trials), *common])
        if "error" in prep:
            print(f"\n{name}: preparing failed: {prep['error']}")
            continue
        print(f"\n{name}: {prep['description']}")
        print(f"  untuned TVM build {prep['untuned_build_s']:.1f} s" + (
            f"; msviz tuning wall {prep['tuning_wall_s']:.1f} s for {args.trials} trials over "
            f"{prep['tasks']} tasks (untuned kernels kept for {len(prep['fallback'])} tasks), "
            f"tuned build {prep['tuned_build_s']:.1f} s" if args.trials > 0 else ""))
        results: dict[str, list[dict[str, Any]]] = {r: [] for r in runtimes}
        for _ in range(args.processes):  # interleaved, so a slow spell hits every runtime
            for runtime in runtimes:
                results[runtime].append(_child(["--time", runtime, name, *common,
                                                "--rounds", str(args.rounds),
                                                "--round-s", str(args.round_s),
                                                "--warmup-s", str(args.warmup_s)]))
        ref_path = files / "out-tvm-untuned.npy"
        ref = np.load(ref_path).astype("float64") if ref_path.is_file() else None
        least = {r: min((t["ms"] for t in res if "ms" in t), default=None)
                 for r, res in results.items()}
        ort_ms = least.get("ort")
        print(f"  {'runtime':<14}{'least ms':>10}{'spread':>8}{'vs ort':>8}{'setup s':>9}"
              f"{'rel diff':>10}  ok   per process (ms)")
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
            print(f"  {runtime:<14}{_fmt(lo, '.1f'):>10}{_fmt(spread):>8}"
                  f"{_fmt(lo / ort_ms if lo and ort_ms else None):>8}"
                  f"{_fmt(max((t['setup_s'] for t in ok), default=None), '.1f'):>9}"
                  f"{_fmt(diff, '.1e'):>10}  "
                  f"{'-' if diff is None else ('yes' if diff <= args.rtol else 'NO'):<4} "
                  f"{', '.join(format(t['ms'], '.1f') for t in ok)}"
                  + (f"  errors: {errors}" if errors else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
