"""Candidates measured per second through the RPC tracker (1 and 2 loopback servers) against the
local runner, on the same built batch.

One batch of distinct GMM-0 schedules (sampled from its design space) is built once; then msviz's
:class:`~msviz.engine.measure.MeasuringService` runs it with ``LocalRunner`` and through a loopback
:class:`~msviz.engine.measure.loopback.LocalFleet` with one and two servers (``msviz.rpc``, one
RPC session per
server in parallel). Each runner gets a warm-up run (process pools start, workers import), then
``--reps`` timed runs; the median is reported. Timing settings are small (``number=1, repeat=1,
min_repeat_ms=0``) so the figure is the per-candidate overhead, not the kernel::

    python benchmarks/rpc_throughput.py               # 16 candidates, 3 reps
    python benchmarks/rpc_throughput.py --batch 32 --reps 5

Target: at most 15 ms per candidate over the local runner on loopback.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def _batch(n: int, seed: int) -> tuple[list, list]:
    from msviz import compat
    from msviz.space_generator.rules import RuleSet
    from msviz.workloads import resolve

    workload = resolve("GMM-0")
    target = compat.make_target("llvm")
    ctx = compat.ms.TuneContext(mod=workload.mod, target=target,
                                space_generator=RuleSet.default("llvm").space_generator(),
                                task_name="GMM-0", rand_state=seed, num_threads=2)
    space = next(iter(ctx.generate_design_space()))
    mods, args, seen = [], [], set()
    rng_seed = seed
    while len(mods) < n and rng_seed < seed + 50 * n:
        rng_seed += 1
        sch = compat.Schedule(workload.mod, seed=rng_seed)
        # the design space's instructions with fresh decisions (sampled from this seed)
        compat.Trace(space.trace.insts, {}).apply_to_schedule(sch, remove_postproc=True)
        key = int(compat.structural_hash(sch.mod))
        if key in seen:
            continue
        seen.add(key)
        mods.append(sch.mod)
        args.append(compat.ArgInfo.from_entry_func(sch.mod, remove_preproc=True))
    return mods, args


def _timed(measurer, built, args, reps: int) -> tuple[float, list]:
    measurer.run(built, args)  # warm-up: pools start, workers import
    walls, results = [], []
    for _ in range(reps):
        tic = time.perf_counter()
        results = measurer.run(built, args)
        walls.append(time.perf_counter() - tic)
    return statistics.median(walls), results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16, help="candidates per batch (16)")
    parser.add_argument("--reps", type=int, default=3, help="timed runs per runner (3)")
    parser.add_argument("--seed", type=int, default=1)
    opts = parser.parse_args()

    from msviz.engine.measure.loopback import LocalFleet
    from msviz.engine.measure.service import MeasuringService

    evaluator = {"number": 1, "repeat": 1, "min_repeat_ms": 0}
    from msviz import compat

    target = compat.make_target("llvm")
    mods, args = _batch(opts.batch, opts.seed)
    local = MeasuringService(target, evaluator_config=evaluator)
    built = local.build(mods)
    assert all(b.error is None for b in built), [b.error for b in built if b.error]
    rows = []
    try:
        wall, res = _timed(local, built, args, opts.reps)
        rows.append(("local (LocalRunner)", wall, res))
        local.close()
        for servers in (1, 2):
            with LocalFleet(servers, key=f"bench{servers}") as fleet:
                rpc = MeasuringService(target, runner=fleet.runner(), evaluator_config=evaluator)
                try:
                    wall, res = _timed(rpc, built, args, opts.reps)
                finally:
                    rpc.close()
            rows.append((f"RPC, {servers} loopback server{'s' * (servers > 1)}", wall, res))
    finally:
        MeasuringService.cleanup(built)

    n = len(built)
    base = rows[0][1]
    print(f"batch: {n} distinct GMM-0 (128x128x128 matmul) candidates, built once; "
          f"median of {opts.reps} timed runs after a warm-up; {os.cpu_count()} CPU cores\n")
    print(f"{'runner':<26}{'wall (s)':>10}{'cand/s':>9}{'ms/cand':>9}{'over local':>12}"
          f"{'ok':>5}  devices")
    for name, wall, res in rows:
        ok = sum(r.ok for r in res)
        devices = sorted({r.device for r in res if r.device})
        over = "" if wall is base else f"{(wall - base) / n * 1e3:+.1f} ms"
        print(f"{name:<26}{wall:>10.2f}{n / wall:>9.1f}{wall / n * 1e3:>9.1f}{over:>12}{ok:>5}  "
              f"{len(devices)}")
    worst = max((wall - base) / n * 1e3 for _, wall, _ in rows[1:])
    print(f"\noverhead per candidate over the local runner: up to {worst:.1f} ms "
          f"(target <= 15 ms on loopback: {'met' if worst <= 15 else 'NOT met'})")
    print(f"note: this machine has {os.cpu_count()} cores; the two servers share them (and the "
          "builder and this process), so 2 servers measure in parallel only as far as the cores "
          "allow, and their timings disturb each other.")


if __name__ == "__main__":
    main()
