"""Where a tuned model's time goes beyond its kernels' tuned times.

For each work dir of one catalogue model (msviz's, stock's), in one process and alternating
between the builds round by round (on these machines a process's speed flips between ~1x and
~2x; builds timed in turn share the mode of the moment):

* **whole**: the model, Relax VM ``time_evaluator`` (number 10, repeat 3, min_repeat_ms 30);
* **calls**: each VM call timed through the instrument hook (:func:`msviz.bench.draws.time_calls`):
  the sum of the task kernels per run, and the rest (VM builtins: allocation, shape checks);
* **alone**: each task's best schedule built alone and timed in this process as the tuner's
  runner times it (``time_evaluator``, number 3 repeat 1 min_repeat_ms 100 by default, inputs hot
  in cache), and again after a 64 MiB write that evicts the caches before every call (cold).

and the kernels' **tuned sum** (weight x the best record's mean run time). It prints, per build,
the medians over rounds and the ratios; per task, in-model / alone; and runs itself again under
each ``--env`` setting (``TVM_NUM_THREADS=1``, ``TVM_BIND_THREADS=0``, ...) in a fresh process.

::

    python benchmarks/in_place.py --model resnet18 msviz=/tmp/ttq/msviz-seed1 \
        stock=/tmp/ttq/stock-seed1 --rounds 6 --env TVM_BIND_THREADS=0 --env TVM_NUM_THREADS=1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def measure(model_name: str, dirs: dict[str, str], rounds: int, alone: bool) -> dict[str, Any]:
    """Every figure of the module's docstring, in this process."""
    import numpy as np
    import tvm
    from tvm import relax

    from msviz import compat, models
    from msviz.bench.draws import time_calls
    from msviz.bench.model_check import best_record_us
    from msviz.bench.model_profile import match_call

    compat.quiet_ipython_printing()
    threads = int(os.environ.get("TVM_NUM_THREADS", "0") or 0) or compat.host_cores()
    target = compat.make_target("llvm", num_cores=compat.host_cores())
    model = models.build(model_name, seed=0)
    tasks = model.extract_tasks(target)
    dev = tvm.cpu()
    inputs = [tvm.runtime.tensor(x, dev) for x in model.random_inputs(0)]
    builds, tuned, dbs = {}, {}, {}
    for name, wd in dirs.items():
        db = compat.JSONDatabase(work_dir=wd)
        dbs[name] = db
        exe = compat.ms.relax_integration.compile_relax(db, model.mod, target, params=None)
        builds[name] = relax.VirtualMachine(exe, dev)
        tuned[name] = {t.name: best_record_us(db, t.workload.mod) for t in tasks}
    names = [t.name for t in tasks]
    weight = {t.name: t.weight for t in tasks}
    out: dict[str, Any] = {"threads": threads, "env": {k: v for k, v in os.environ.items()
                                                       if k.startswith("TVM_")}}
    per: dict[str, dict[str, list]] = {n: {"whole": [], "kernels": [], "other": [],
                                          "calls": []} for n in dirs}
    for r in range(rounds):
        order = list(dirs) if r % 2 == 0 else list(reversed(dirs))
        for name in order:
            vm = builds[name]
            vm[model.func_name](*inputs)
            timer = vm.time_evaluator(model.func_name, dev, number=10, repeat=3,
                                      min_repeat_ms=30)
            per[name]["whole"].append(statistics.median(timer(*inputs).results) * 1e6)
            times, hook_us, runs = time_calls(vm, model.func_name, inputs, dev, runs=5)
            kernel, other, by_task = 0.0, 0.0, {}
            hook = hook_us or 0.0  # the hook's own cost, taken off every call
            for sym, ts in times.items():
                ts = [max(0.0, x - hook) for x in ts]
                total = sum(ts) / runs
                task = match_call(sym, names)
                if task is None:
                    other += total
                else:
                    kernel += total
                    by_task.setdefault(task, []).extend(ts)
            per[name]["kernels"].append(kernel)
            per[name]["other"].append(other)
            per[name]["calls"].append({t: statistics.median(v) for t, v in by_task.items()})
    for name in dirs:
        p = per[name]
        tsum = sum(weight[t] * (tuned[name][t] or 0.0) for t in names)
        in_model = {t: statistics.median(c[t] for c in p["calls"] if t in c) for t in names
                    if any(t in c for c in p["calls"])}
        res = {"tuned_sum_us": tsum, "whole_us": p["whole"],
               "kernels_us": p["kernels"], "other_us": p["other"],
               "whole_median": statistics.median(p["whole"]),
               "in_model": in_model, "tuned": tuned[name]}
        if alone:
            res["alone"], res["alone_cold"] = _alone(dbs[name], tasks, target, dev, np, tvm)
        out[name] = res
    return out


def _alone(db: Any, tasks: list, target: Any, dev: Any, np: Any, tvm: Any
           ) -> tuple[dict[str, float], dict[str, float]]:
    """Each task's best schedule alone: µs per call hot (as the runner times it) and cold."""
    from msviz import compat
    from msviz.bench.schedule import random_inputs

    hot, cold = {}, {}
    flush = np.ones(16 * 1024 * 1024, dtype="float32")  # 64 MiB, over any L3 here
    for t in tasks:
        sch = db.query_schedule(t.workload.mod, target, "main")
        if sch is None:
            continue
        lib = compat.fast_build(sch.mod, target)  # as the tuner's builder builds it
        args = [compat.to_tensor(a, dev) for a in random_inputs(t.workload.mod, 0)]
        f = lib["main"]
        timer = lib.time_evaluator("main", dev, number=3, repeat=1, min_repeat_ms=100)
        f(*args)
        hot[t.name] = statistics.median(timer(*args).results) * 1e6
        runs = []
        for _ in range(7):
            flush += 1.0
            tic = time.perf_counter()
            f(*args)
            runs.append((time.perf_counter() - tic) * 1e6)
        cold[t.name] = statistics.median(runs)
    return hot, cold


def report(res: dict[str, Any], names: list[str]) -> None:
    print(f"  threads {res['threads']}, env {res['env']}")
    for name in names:
        r = res[name]
        whole, ksum = r["whole_median"], statistics.median(r["kernels_us"])
        other = statistics.median(r["other_us"])
        print(f"  {name:>8}: tuned sum {r['tuned_sum_us']:8.1f} us | whole in place "
              f"{whole:8.1f} us (rounds {min(r['whole_us']):.1f}-{max(r['whole_us']):.1f}) "
              f"= {whole / r['tuned_sum_us']:.2f}x the tuned sum | per call: kernels "
              f"{ksum:.1f}, VM other {other:.1f} us")
    if len(names) == 2:
        a, b = names
        ratios = [y / x for x, y in zip(res[a]["whole_us"], res[b]["whole_us"])]
        print(f"  paired whole-model ratio {b}/{a}: median {statistics.median(ratios):.3f} "
              f"(rounds {min(ratios):.3f}-{max(ratios):.3f})")


def report_tasks(res: dict[str, Any], name: str, weights: dict[str, int]) -> None:
    r = res[name]
    print(f"  per task ({name}): weight x us: tuned | in model | alone hot | alone cold")
    rows = []
    for task, tuned in r["tuned"].items():
        w = weights[task]
        rows.append((w * (r["in_model"].get(task) or 0), task, w, tuned,
                     r["in_model"].get(task), r.get("alone", {}).get(task),
                     r.get("alone_cold", {}).get(task)))
    tot = [0.0, 0.0, 0.0, 0.0]
    for _, task, w, *vals in sorted(rows, reverse=True):
        cells = [f"{w * v:9.1f}" if v is not None else "        -" for v in vals]
        for i, v in enumerate(vals):
            tot[i] += w * (v or 0.0)
        print(f"    {task[:44]:44} x{w} " + " ".join(cells))
    print(f"    {'total':44}    " + " ".join(f"{v:9.1f}" for v in tot))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", help="NAME=WORK_DIR (one or two)")
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--env", action="append", default=[],
                        help="also run under this setting (VAR=VALUE), in a fresh process")
    parser.add_argument("--no-alone", action="store_true", help="skip kernels alone")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    dirs = dict(d.split("=", 1) for d in args.dirs)
    if args.child:
        print(json.dumps(measure(args.model, dirs, args.rounds, not args.no_alone)))
        return 0
    print(f"CPU: {_cpu()}; {os.cpu_count()} logical cores; model {args.model}")
    from msviz import models
    from msviz.compat import host_cores, make_target

    tasks = models.build(args.model, seed=0).extract_tasks(make_target("llvm",
                                                                       num_cores=host_cores()))
    weights = {t.name: t.weight for t in tasks}
    for setting in ["", *args.env]:
        env = dict(os.environ)
        if setting:
            key, value = setting.split("=", 1)
            env[key] = value
        cmd = [sys.executable, __file__, *args.dirs, "--model", args.model, "--rounds",
               str(args.rounds), "--child"] + (["--no-alone"] if args.no_alone or setting
                                                else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            print(f"[{setting or 'default'}] failed: {proc.stderr[-2000:]}")
            continue
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"[{setting or 'default settings'}]")
        report(res, list(dirs))
        if not setting:
            for name in dirs:
                report_tasks(res, name, weights)
    return 0


if __name__ == "__main__":
    sys.exit(main())
