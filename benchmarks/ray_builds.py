"""Candidates built per second: msviz's warm local builder against the Ray builder on a local
Ray instance of 1 and 2 CPUs, on the same batch.

One batch of distinct GMM-0 schedules (sampled from its design space, as
``benchmarks/rpc_throughput.py`` samples them) is built by each builder: a warm-up batch first
(process pools start, Ray workers import TVM and msviz), then ``--reps`` timed batches; the
median is reported. Each artifact of the last timed batch is loaded and run once against numpy,
so a builder that returns broken artifacts cannot look fast::

    python benchmarks/ray_builds.py              # 32 candidates, 3 reps
    python benchmarks/ray_builds.py --batch 64 --reps 5

On one machine Ray adds work and no cores: it can only show its overhead here (task
submission, the module and target sent as JSON, the artifact's bytes sent back and written).
Ray pays off when the cluster's other machines add cores to the builds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from rpc_throughput import _batch


def _timed(builder, mods, target, reps: int) -> tuple[float, list]:
    from msviz import compat
    from msviz.engine.measure.service import MeasuringService

    inputs = [compat.ms.builder.BuilderInput(mod, target) for mod in mods]
    MeasuringService.cleanup([_outcome(r) for r in builder.build(inputs)])  # warm-up
    walls, results = [], []
    for rep in range(reps):
        tic = time.perf_counter()
        results = builder.build(inputs)
        walls.append(time.perf_counter() - tic)
        if rep < reps - 1:
            MeasuringService.cleanup([_outcome(r) for r in results])
    return statistics.median(walls), results


def _outcome(result):
    from msviz.engine.measure.results import BuildOutcome

    return BuildOutcome(result.artifact_path, result.error_msg)


def _right(artifact: str) -> bool:
    """The artifact computes X @ Y (GMM-0: 1x128x128 float32)."""
    from msviz import compat

    func = compat.load_module(artifact)
    rng = np.random.default_rng(0)
    a, b = rng.random((1, 128, 128), "float32"), rng.random((1, 128, 128), "float32")
    dev = compat.device_of(compat.make_target("llvm"))
    c = compat.to_tensor(np.zeros((1, 128, 128), "float32"), dev)
    func(compat.to_tensor(a, dev), compat.to_tensor(b, dev), c)
    return bool(np.allclose(c.numpy(), a @ b, rtol=1e-4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32, help="candidates per batch (32)")
    parser.add_argument("--reps", type=int, default=3, help="timed batches per builder (3)")
    parser.add_argument("--seed", type=int, default=1)
    opts = parser.parse_args()

    import ray

    import msviz
    from msviz import compat
    from msviz.engine.measure.builder import WarmLocalBuilder
    from msviz.engine.measure.service import MeasuringService

    target = compat.make_target("llvm")
    mods, _ = _batch(opts.batch, opts.seed)
    rows = []
    for workers in (1, 2):
        builder = WarmLocalBuilder(max_workers=workers, timeout_sec=60)
        try:
            rows.append((f"local (warm), {workers} worker{'s' * (workers > 1)}",
                         *_timed(builder, mods, target, opts.reps)))
        finally:
            builder.reset()
    for cpus in (1, 2):
        tic = time.perf_counter()
        builder = msviz.ray_builder(num_cpus=cpus, timeout=60)
        started = time.perf_counter() - tic
        try:
            rows.append((f"Ray, local instance, {cpus} CPU{'s' * (cpus > 1)}",
                         *_timed(builder, mods, target, opts.reps)))
        finally:
            ray.shutdown()
        print(f"(Ray instance of {cpus} CPU{'s' * (cpus > 1)} started in {started:.1f} s)")

    n = len(mods)
    print(f"\nbatch: {n} distinct GMM-0 (128x128x128 matmul) candidates; median of "
          f"{opts.reps} timed batches after a warm-up batch; {os.cpu_count()} CPU cores\n")
    print(f"{'builder':<32}{'wall (s)':>10}{'cand/s':>9}{'ms/cand':>9}{'ok':>5}{'right':>7}")
    for name, wall, res in rows:
        ok = [i for i, r in enumerate(res) if r.error_msg is None]
        right = sum(_right(res[i].artifact_path) for i in ok)
        print(f"{name:<32}{wall:>10.2f}{n / wall:>9.1f}{wall / n * 1e3:>9.1f}{len(ok):>5}"
              f"{right:>7}")
        MeasuringService.cleanup([_outcome(r) for r in res])
    print(f"\nnote: this machine has {os.cpu_count()} cores. A local Ray instance adds no cores, "
          "only work (task submission, modules sent as JSON, artifacts sent back as bytes and "
          "written), so here Ray can only show its overhead; it pays off when other machines "
          "join the cluster and add cores to the builds.")


if __name__ == "__main__":
    main()
