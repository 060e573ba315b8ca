"""Realistic large work dirs, made quickly: real traces from tiny tuning runs, replayed.

A real msviz session tunes each seed workload for a few trials (its records, sidecar and logs
are real). :func:`make_work_dir` then writes N records that cycle through those real records,
with the stock database's exact line format, varied ``run_secs``, a share of failed builds
(``[1e10]`` with their error text), one sidecar line per record and the per-task log lines and
task table that ``tune_tir``/msviz write. Nothing is tuned N times.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

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


def seed_model_work_dir(model: str, cache: Path, trials_per_task: int = 8) -> Path:
    """A real msviz work dir of a catalogue ``model``: one tiny session tunes every task for a
    batch (``trials_per_task``), as ``tune_relax`` lays it out (tuned once, then reused)."""
    import msviz

    wd = cache / model
    if (wd / RECORD_FILE).is_file() and (wd / "done").is_file():
        return wd
    shutil.rmtree(wd, ignore_errors=True)
    tasks = msviz.models.catalogue()[model].tasks
    knobs = {**SEED_KNOBS, "trials_per_batch": trials_per_task}
    session = msviz.Session(model, work_dir=wd, max_trials=tasks * trials_per_task,
                            task_scheduler="round-robin", **knobs)
    session.start()
    state = session.wait(3 * 3600)
    if state != "finished":
        raise RuntimeError(f"seed session {model} ended {state}: {session.end_reason}")
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


# -- a model's work dir ---------------------------------------------------------------------------


def _seed_model(seed: Path) -> dict:
    """What a model seed holds, per task (its workload index): name, FLOP, weight, its real
    records (as :func:`_records_of` cuts them, failed ones apart), its sidecar lines, the head
    of its log (the workload, before the first trial), and the logs' start."""
    from msviz.records.logs import read_scheduler_table

    table = {row.id: row for row in read_scheduler_table(seed / "logs").rows}
    side = {}
    profiles: dict[str, list[dict]] = {}
    extra = []
    for text in (seed / SIDECAR_FILE).read_text().splitlines():
        entry = json.loads(text)
        if entry.get("kind") == "trial":
            side[entry["line"]] = entry
        elif entry.get("kind") == "profile" and entry.get("batch") is not None:
            profiles.setdefault(entry["task"], []).append(entry)
        elif entry.get("kind") in ("profile", "end_to_end"):
            extra.append(entry)
    ok: dict[int, list] = {}
    bad: dict[int, list] = {}
    for line, text in enumerate((seed / RECORD_FILE).read_text().splitlines(), start=1):
        workload, (_, secs, _, _) = json.loads(text)
        target_end = text.rfind("},[[")
        target_start = text.rfind(",{", 0, target_end)
        secs_start = text.rindex("[", 0, target_start)
        cut = (text[text.index(",") + 1 : secs_start], text[target_start:], secs,
               side.get(line, {}))
        (ok if secs and max(secs) < 1e10 else bad).setdefault(workload, []).append(cut)
    heads = {}
    for path in (seed / "logs").glob(f"{LOG_PREFIX}task_*_*.log"):
        i = int(path.name[len(LOG_PREFIX) + 5 :].split("_", 1)[0])
        text = path.read_text()
        cut = text.find("] Trial #")
        heads[i] = text[: text.rfind("\n", 0, cut) + 1] if cut >= 0 else text
    sched = (seed / "logs" / f"{LOG_PREFIX}task_scheduler.log").read_text()
    start = sched[: sched.find("TaskScheduler picks")]
    return {"table": table, "ok": ok, "bad": bad, "profiles": profiles, "extra": extra,
            "heads": heads, "scheduler_head": start[: start.rfind("\n") + 1]}


def make_model_work_dir(dest: Path, records: int, seed: Path, *, sidecar: bool = True,
                        failed: float = 0.05, batch: int = 16, rng_seed: int = 0,
                        tasks: int | None = None) -> Path:
    """Write a model's work dir of ``records`` records, as ``tune_relax`` (``sidecar=False``)
    or an msviz session (with its sidecar) leaves it, from a real tiny run of every task.

    Batches go to the tasks as a gradient-based scheduler sends them: one round over every
    task first, then mostly to the tasks with the largest weighted latency (weight x the
    seed's best latency), every task now and then. Each task cycles through its seed's real
    records (its real traces), run times shrinking as its trials go on (so the best so far
    improves in steps) with noise; ``failed`` of them as failed builds. Written: both stock
    database files, every task's log (its seed log's head, then one entry per trial), the task
    scheduler log (its seed's head, then each pick, update and task table), and with
    ``sidecar`` msviz's sidecar (a trial line per record, a profile line per batch, the seed's
    end-to-end check). A stock layout's task logs print their workload's TVMScript first, as
    ``tune_relax`` does. ``tasks``: only the model's first ``tasks`` tasks.
    """
    from msviz.engine.task_scheduler.scheduler import format_task_table

    rng = random.Random(rng_seed)
    info = _seed_model(seed)
    table = info["table"]
    if tasks is not None:
        table = {i: row for i, row in table.items() if i < tasks}
    n_tasks = len(table)
    shutil.rmtree(dest, ignore_errors=True)
    (dest / "logs").mkdir(parents=True)
    workload_lines = (seed / WORKLOAD_FILE).read_text().splitlines(keepends=True)[:n_tasks]
    (dest / WORKLOAD_FILE).write_text("".join(workload_lines))
    wl = [max((row.weighted_latency_us or 0.0), 1e-3) for _, row in sorted(table.items())]
    share = [0.2 / n_tasks + 0.8 * w / sum(wl) for w in wl]
    counts = [0] * n_tasks
    batches = [0] * n_tasks
    best = [math.inf] * n_tasks
    logs = {i: open(dest / "logs" / f"{LOG_PREFIX}task_{i}_{table[i].name}.log", "w")
            for i in table}
    for i, f in logs.items():
        if not sidecar:
            f.write(_stock_log_head(i, table[i].name, workload_lines[i]))
        f.write(info["heads"].get(i, ""))
    sched = open(dest / "logs" / f"{LOG_PREFIX}task_scheduler.log", "w")
    sched.write(info["scheduler_head"])
    side = open(dest / SIDECAR_FILE, "w") if sidecar else None
    if side is not None:
        for entry in info["extra"]:
            if entry["kind"] == "profile":
                side.write(json.dumps(entry, separators=(",", ":")) + "\n")
    clock = datetime.now(timezone.utc) - timedelta(seconds=1.3 * records)
    line = 0
    n_batch = 0
    with open(dest / RECORD_FILE, "w") as rec_file:
        while line < records:
            i = n_batch if n_batch < n_tasks else rng.choices(range(n_tasks), share)[0]
            name = table[i].name
            stamp = clock.astimezone().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            sched.write(f"{stamp} [INFO] [task_scheduler.cc:0] TaskScheduler picks Task #{i}: "
                        f"{name}\n")
            pool = info["ok"].get(i) or info["bad"][i]
            size = min(batch, records - line)
            # a batch is searched, built and run, then its trials are logged together
            clock += timedelta(seconds=size * rng.uniform(0.6, 2.0))
            for _ in range(size):
                head_text, tail, secs, entry = pool[counts[i] % len(pool)]
                k = counts[i]
                bad = secs is None or max(secs) >= 1e10 or rng.random() < failed
                speed = 0.45 + 0.55 * math.exp(-k / 400)  # later trials are faster
                run_secs = [1e10] if bad else [s * speed * rng.uniform(0.85, 1.2) for s in secs]
                rec_file.write(f"[{i},{head_text}"
                               f"{json.dumps(run_secs, separators=(',', ':'))}{tail}\n")
                line += 1
                counts[i] += 1
                clock += timedelta(milliseconds=rng.uniform(0.5, 2.0))
                mean = sum(run_secs) / len(run_secs)
                if not bad:
                    best[i] = min(best[i], mean)
                _log_trial(logs[i], clock, i, name, k, bad, mean, table[i].flop, best[i])
                if side is not None:
                    side.write(json.dumps({
                        **entry, "v": 1, "kind": "trial",
                        "timestamp": clock.isoformat(timespec="milliseconds"), "line": line,
                        "task": name, "workload": i, "task_trial": k, "batch": batches[i],
                        "generation": batches[i], "error_kind": "build" if bad else None,
                        "error": BUILD_ERROR if bad else None,
                        "run_secs": None if bad else run_secs}, separators=(",", ":")) + "\n")
            if side is not None and info["profiles"].get(name):
                got = info["profiles"][name][0]
                side.write(json.dumps({
                    **got, "timestamp": clock.isoformat(timespec="milliseconds"),
                    "batch": batches[i]}, separators=(",", ":")) + "\n")
            batches[i] += 1
            n_batch += 1
            stamp = clock.astimezone().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            rows = [{"index": j, "name": table[j].name, "flop": table[j].flop,
                     "weight": table[j].weight, "trials": counts[j], "done": False,
                     "latency_us": None if best[j] == math.inf else best[j] * 1e6,
                     "gflops": None if best[j] == math.inf else table[j].flop / best[j] / 1e9,
                     "weighted_latency_us": None if best[j] == math.inf
                     else best[j] * 1e6 * table[j].weight} for j in range(n_tasks)]
            sched.write(f"{stamp} [INFO] [task_scheduler.cc:0] [Updated] Task #{i}: {name}\n"
                        f"{stamp} [INFO] [task_scheduler.cc:0] \n" + format_task_table(rows))
    for f in [*logs.values(), sched]:
        f.close()
    if side is not None:
        for entry in info["extra"]:
            if entry["kind"] == "end_to_end":
                side.write(json.dumps(entry, separators=(",", ":")) + "\n")
        side.close()
    return dest


def _stock_log_head(i: int, name: str, workload_line: str) -> str:
    """How ``tune_relax``'s task log starts: the task's name, then its workload as TVMScript."""
    from msviz import compat

    mod = compat.Workload.from_json(json.loads(workload_line)).mod
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    head = f"{stamp} [INFO] [task_scheduler.cc:120] "
    return f'{head}Initializing Task #{i}: "{name}"\n{head}\n{mod.script()}\n'


def _log_trial(log: Any, clock: datetime, i: int, name: str, k: int, bad: bool, mean: float,
               flop: float, best: float) -> None:
    """A task log's ``Trial #`` entry, as ``tune_relax`` writes it."""
    local = clock.astimezone().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    head = f"{local} [INFO] [task_scheduler.cc:0] [Task #{i}: {name}] Trial #{k + 1}: "
    if bad:
        log.write(head + "Error in building:\n" + BUILD_ERROR + "\n")
    else:
        best_gflops = flop / best / 1e9 if best < math.inf else 0.0
        log.write(head + f"GFLOPs: {flop / mean / 1e9:.4f}. Time: {mean * 1e6:.4f} us. "
                  f"Best GFLOPs: {best_gflops:.4f}\n")
