"""Realistic large work dirs, made quickly: real traces from tiny tuning runs, replayed.

A real msviz session tunes each seed workload for a few trials (its records, sidecar and logs
are real). :func:`make_work_dir` then writes N records that cycle through those real records,
with the stock database's exact line format, varied ``run_secs``, a share of failed builds
(``[1e10]`` with their error text), one sidecar line per record and the per-task log lines and
task table that ``tune_tir``/msviz write. Nothing is tuned N times.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from msviz.records.database import RECORD_FILE, WORKLOAD_FILE
from msviz.records.sidecar import SIDECAR_FILE

#: Knobs of the seed sessions (tiny: a shared 2-core machine).
SEED_KNOBS = {"population_size": 16, "init_min_unmeasured": 8, "genetic_num_iters": 1,
              "evaluator_config": {"number": 1, "repeat": 1, "min_repeat_ms": 0}, "seed": 1,
              "trials_per_batch": 8}
LOG_PREFIX = "tvm.s_tir.meta_schedule.logging."
BUILD_ERROR = (
    "LocalBuilder: An exception occurred\nTraceback (most recent call last):\n"
    '  File "tvm/s_tir/meta_schedule/builder/local_builder.py", line 165, in _worker_func\n'
    "    rt_mod: Module = f_build(mod, target, _deserialize_params(params))\n"
    "tvm.error.InternalError: Check failed: (extent > 0) is false: loop extent is 0"
)


def seed_work_dir(workload: str, cache: Path, trials: int = 8) -> Path:
    """A real msviz work dir of ``workload`` (tuned once, then reused from ``cache``)."""
    import msviz

    wd = cache / workload
    if (wd / RECORD_FILE).is_file() and (wd / "done").is_file():
        return wd
    shutil.rmtree(wd, ignore_errors=True)
    session = msviz.Session(workload, work_dir=wd, max_trials=trials, **SEED_KNOBS)
    session.start()
    state = session.wait(1800)
    if state != "finished":
        raise RuntimeError(f"seed session {workload} ended {state}: {session.end_reason}")
    (wd / "done").write_text("")
    return wd


def _records_of(seed: Path) -> list[tuple[str, str, list]]:
    """(text before run_secs, text after them, run_secs) of each successful record of a seed,
    cut where msviz's reader cuts (the stock line format is kept byte for byte)."""
    out = []
    for text in (seed / RECORD_FILE).read_text().splitlines():
        _, (_, secs, _, _) = json.loads(text)
        if not secs or max(secs) >= 1e10:
            continue
        target_end = text.rfind("},[[")
        target_start = text.rfind(",{", 0, target_end)
        secs_start = text.rindex("[", 0, target_start)
        out.append((text[text.index(",") + 1 : secs_start], text[target_start:], secs))
    return out


def make_work_dir(dest: Path, records: int, seeds: dict[str, Path], *, failed: float = 0.05,
                  batch: int = 16, rng_seed: int = 0) -> Path:
    """Write a work dir of ``records`` records cycling through the seeds' real records.

    Parameters
    ----------
    dest : Path
        The new work dir (replaced if it exists).
    records : int
        Records in total, spread over the seed workloads in turn (batches of ``batch``).
    seeds : dict
        Task name -> a real msviz work dir of that workload (:func:`seed_work_dir`).
    failed : float
        Share of records written as failed builds (``[1e10]``, error text in log and sidecar).
    """
    rng = random.Random(rng_seed)
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "logs").mkdir(parents=True)
    names = list(seeds)
    with open(dest / WORKLOAD_FILE, "w") as f:
        for name in names:  # each seed holds one workload line
            f.write((seeds[name] / WORKLOAD_FILE).read_text().splitlines()[0] + "\n")
    pools = {name: _records_of(seeds[name]) for name in names}
    flops = {name: _flop_of(seeds[name]) for name in names}
    counts = dict.fromkeys(names, 0)
    logs = {name: open(dest / "logs" / f"{LOG_PREFIX}task_{i}_{name}.log", "w")
            for i, name in enumerate(names)}
    start = datetime.now(timezone.utc) - timedelta(seconds=records)
    with open(dest / RECORD_FILE, "w") as rec_file, open(dest / SIDECAR_FILE, "w") as side:
        for n in range(records):
            task_index = (n // batch) % len(names)
            name = names[task_index]
            head_text, tail, secs = pools[name][n % len(pools[name])]
            k = counts[name]
            counts[name] += 1
            bad = rng.random() < failed
            run_secs = [1e10] if bad else [s * rng.uniform(0.8, 1.25) for s in secs]
            secs_text = json.dumps(run_secs, separators=(",", ":"))
            rec_file.write(f"[{task_index},{head_text}{secs_text}{tail}\n")
            stamp = start + timedelta(seconds=n)
            side.write(json.dumps({
                "v": 1, "kind": "trial", "timestamp": stamp.isoformat(timespec="milliseconds"),
                "line": n + 1, "task": name, "workload": task_index, "task_trial": k,
                "batch": n // batch, "generation": n // batch, "iteration": rng.randint(0, 3),
                "origin": rng.choice(["fresh", "mutated", "database"]), "pick": "score",
                "predicted_score": rng.random(), "design_space": rng.randint(0, 2),
                "mutator": "MutateTileSize", "parent": rng.randint(0, 15), "ancestor_line": None,
                "error_kind": "build" if bad else None, "error": BUILD_ERROR if bad else None,
                "run_secs": None if bad else run_secs}, separators=(",", ":")) + "\n")
            local = stamp.astimezone().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            head = f"{local} [INFO] [tuner.py:0] [Task #{task_index}: {name}] Trial #{k + 1}: "
            if bad:
                logs[name].write(head + "Error in building:\n" + BUILD_ERROR + "\n")
            else:
                mean = sum(run_secs) / len(run_secs)
                logs[name].write(head + f"GFLOPs: {flops[name] / mean / 1e9:.4f}. Time: "
                                 f"{mean * 1e6:.4f} us. Best GFLOPs: 0.0000\n")
    for f in logs.values():
        f.close()
    with open(dest / "logs" / f"{LOG_PREFIX}task_scheduler.log", "w") as f:
        f.write(" ID | Name |  FLOP | Weight | Speed (GFLOPS) | Latency (us) | Weighted Latency"
                " (us) | Trials | Done \n" + "-" * 100 + "\n")
        for i, name in enumerate(names):
            f.write(f"  {i} | {name} | {int(flops[name])} | 1 | N/A | N/A | N/A | "
                    f"{counts[name]} |  \n")
    return dest


def _flop_of(seed: Path) -> float:
    import msviz

    return float(msviz.open(seed).tasks["flop"].iloc[0])
