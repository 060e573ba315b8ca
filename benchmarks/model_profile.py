"""What the model profile adds to a user's time after tuning a model.

A Session that tunes a model checks it end to end when tuning ends (``check_model``: builds it
with the work dir's database and untuned, runs and times both) and then profiles the tuned
build it already has (``profile_executable``: one warm-up run and ``PROFILE_RUNS`` timed runs
under the VM's instrument hook). This script tunes each model briefly (``--trials`` per task, the
test knobs), then times, on the same work dir:

* ``compile_relax``: what a second build would have cost (the profile reuses the check's);
* the end-to-end check alone (``check_model`` without the profile);
* the profile of the check's tuned build (the seconds it adds after tuning), and its share of
  the check;

and prints the profile itself (in-model vs tuned time per task), what the hook costs, and each
task's hook-timed time per call against ``time_evaluator`` (C++-timed, warm, 100 runs) of the
same kernel on the same arguments: what the hook's correction leaves in.

    .venv/bin/python benchmarks/model_profile.py [--models mlp resnet-block] [--trials 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KNOBS = {"population_size": 16, "init_min_unmeasured": 8, "genetic_num_iters": 1,
         "cost_model_task_warmup": 0, "seed": 1,
         "evaluator_config": {"number": 3, "repeat": 1, "min_repeat_ms": 0}}


def bench(name: str, trials: int, root: Path) -> dict:
    from msviz import compat
    from msviz.bench.model_check import check_model
    from msviz.bench.model_profile import profile_executable
    from msviz.engine import Session
    from msviz.records.model_profile import model_profile_frame

    session = Session(name, work_dir=root / name, end_to_end_check=False, **KNOBS,
                      max_trials=10_000, max_trials_per_task=trials, trials_per_batch=2)
    tic = time.perf_counter()
    session.start()
    state = session.wait(3600)
    tune_s = time.perf_counter() - tic
    model, tasks, target = session.model, session.tasks, session.target

    database = compat.JSONDatabase(work_dir=str(session.work_dir))
    tic = time.perf_counter()
    compat.ms.relax_integration.compile_relax(database, model.mod, target, params=None)
    compile_s = time.perf_counter() - tic

    tic = time.perf_counter()
    check_model(model, tasks, session.work_dir, target)
    check_s = time.perf_counter() - tic

    built: dict = {}
    tic = time.perf_counter()
    check_model(model, tasks, session.work_dir, target,
                with_tuned=lambda exe, db, dev: built.update(
                    data=profile_executable(exe, model, tasks, db, dev)))
    both_s = time.perf_counter() - tic
    profile = built["data"]
    profile_s = _profile_seconds(model, tasks, session.work_dir, target)
    frame = model_profile_frame(profile)
    frame["time_evaluator_us"] = frame["task"].map(_time_evaluator_us(model, session.work_dir,
                                                                      target))
    return {"model": name, "state": state, "tasks": len(tasks), "trials": session.trials_done,
            "tune_s": tune_s, "compile_s": compile_s, "check_s": check_s, "both_s": both_s,
            "profile_s": profile_s, "frame": frame}


def _profile_seconds(model: object, tasks: list, work_dir: Path, target: object) -> float:
    """Seconds of ``profile_executable`` alone on the tuned build (built here, untimed)."""
    import tvm

    from msviz import compat
    from msviz.bench.model_profile import profile_executable

    database = compat.JSONDatabase(work_dir=str(work_dir))
    exe = compat.ms.relax_integration.compile_relax(database, model.mod, target, params=None)
    dev = tvm.device(compat.device_type(target), 0)
    tic = time.perf_counter()
    profile_executable(exe, model, tasks, database, dev)
    return time.perf_counter() - tic


def _time_evaluator_us(model: object, work_dir: Path, target: object) -> dict[str, float]:
    """Per task, ``time_evaluator``'s median time of its kernel on the arguments of its first
    call in a run of the tuned build."""
    import tvm
    from tvm import relax

    from msviz import compat

    database = compat.JSONDatabase(work_dir=str(work_dir))
    exe = compat.ms.relax_integration.compile_relax(database, model.mod, target, params=None)
    dev = tvm.device(compat.device_type(target), 0)
    vm = relax.VirtualMachine(exe, dev)
    calls: dict = {}

    def grab(_func: object, symbol: str, before: bool, _ret: object, *args: object) -> int:
        if before and not str(symbol).startswith("vm."):
            calls.setdefault(str(symbol), args)
        return 0

    vm.set_instrument(grab)
    vm[model.func_name](*[tvm.runtime.tensor(x, dev) for x in model.random_inputs(0)])
    vm.set_instrument(None)
    lib = exe.jit()
    out = {}
    for symbol, args in calls.items():
        for mod in (lib, *lib.imports):
            try:
                timer = mod.time_evaluator(symbol, dev, number=100, repeat=5)
                out[symbol] = float(timer(*args).median) * 1e6
                break
            except Exception:  # the kernel lives in another of the build's modules
                continue
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["mlp", "resnet-block"])
    parser.add_argument("--trials", type=int, default=2, help="trials per task")
    args = parser.parse_args()
    import pandas as pd

    from msviz import compat

    compat.quiet_ipython_printing()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            result = bench(name, args.trials, Path(tmp))
            frame = result.pop("frame")
            rows.append(result)
            print(f"\n== {name}: {result['tasks']} tasks, {result['trials']} trials "
                  f"({result['state']}) ==")
            print(frame.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
            print(f"hook cost taken off: {frame.attrs['hook_us']} µs per call, "
                  f"{frame.attrs['runs']} runs; other calls: "
                  f"{frame.attrs['other']['us_per_run'].sum():.3f} µs per run")
    table = pd.DataFrame(rows)
    table["added_by_profile_s"] = table["both_s"] - table["check_s"]
    table["profile_share_of_check"] = table["profile_s"] / table["check_s"]
    print("\nSeconds (one process, 2 cores shared):")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


if __name__ == "__main__":
    main()
