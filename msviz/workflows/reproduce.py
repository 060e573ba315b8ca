"""Reproduce a bundled run on this machine: re-time its best kernels, re-draw its first batch.

:func:`reproduce` opens a bundle (``msviz bundle``'s zip) or a work dir an msviz session wrote,
and

1. builds the best trial of each task and times it here with MetaSchedule's builder and runner
   (as the session measured it: :class:`~msviz.engine.measure.service.MeasuringService`, the run's
   evaluator config), next to the latency the bundle holds;
2. tunes one batch with a new :class:`~msviz.engine.session.Session` made from the
   :class:`~msviz.engine.config.SessionConfig` the bundle's environment gives back
   (:func:`msviz.engine.environment.config_of`: same target, seed, preset and knobs, rules) on
   the same workload in a temporary work dir,
   and compares its candidates' traces with the bundle's first batch;
3. lists the environment facts (versions, CPU, architecture, features) that differ from this
   machine's.

A bundle is untrusted input, and its stored settings may sit at the maxima a session accepts
(a population of 65,536, a batch of 4,096: gigabytes and hours). A reproduce therefore uses them
only within bounds that keep it to about a tuning batch of MetaSchedule's defaults: with every
bound at its maximum, a re-draw of GMM-0 peaked under 1 GiB and took about 2 minutes on 2 busy
cores (a larger workload takes more, in proportion to its schedules' size):

* a re-draw is refused, saying which setting and bound, when the bundle's ``trials_per_batch``
  or search knobs exceed :data:`REDRAW_LIMITS` (a smaller value would draw other candidates, so
  they are not lowered); its batch is timed with :data:`REDRAW_EVALUATOR` (the candidates drawn
  do not depend on it), and it waits at most ``timeout`` seconds;
* the best kernels are re-timed with the bundle's evaluator config brought into
  :data:`RETIME_LIMITS`, with a note (in :attr:`Reproduction.notes`) for each value changed.

Temporary folders (the re-drawn session's work dir, build artifacts) are removed on every exit
Python sees (a return, an error, Ctrl-C; not a kill, which ends the process at once).
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from msviz.engine.environment import config_of
from msviz.engine.measure.service import MeasuringService
from msviz.engine.session import Session
from msviz.errors import MsvizError
from msviz.records import database as db_files
from msviz.records.environment import (
    environment_differences,
    environments,
    host_facts,
    other_architecture,
)
from msviz.records.run import Run, open_work_dir
from msviz.records.sidecar import read_sidecar

__all__ = ["KERNEL_COLUMNS", "FirstBatch", "Reproduction", "first_batch_traces",
           "redraw_first_batch", "reproduce", "retime_best"]

#: The columns of :attr:`Reproduction.kernels`.
KERNEL_COLUMNS = ["task", "trial", "bundle_us", "here_us", "ratio", "error"]
#: The largest stored settings a re-draw tunes with (MetaSchedule's defaults, population 2048
#: and 4 genetic iterations, and twice its batch of 64); a bundle beyond them is not re-drawn.
#: Memory grows with population x iterations: 4096 x 16 took over 3 GiB within 4 minutes.
REDRAW_LIMITS = {"trials_per_batch": 128, "population_size": 2048, "init_min_unmeasured": 2048,
                 "max_fail_count": 50, "genetic_num_iters": 4, "genetic_max_fail_count": 50}
#: How a re-drawn batch is timed (once: only which candidates are drawn is compared).
REDRAW_EVALUATOR = {"number": 1, "repeat": 1, "min_repeat_ms": 0, "enable_cpu_cache_flush": False}
#: The range of each evaluator setting a best kernel is re-timed with (at most about 5 s a
#: kernel); a bundle's value outside it is brought into it, with a note.
RETIME_LIMITS = {"number": (1, 100), "repeat": (1, 10), "min_repeat_ms": (0, 500)}


@dataclass
class FirstBatch:
    """The bundle's first batch against the one re-drawn here with the same seed.

    Attributes
    ----------
    seed : int | None
        The seed both were drawn with.
    bundle, here : list of str
        The candidates' traces (canonical JSON, with their workload's hash), in record order.
    error : str | None
        Why nothing was re-drawn (e.g. a workload the bundle cannot rebuild).
    """

    seed: int | None
    bundle: list[str] = field(default_factory=list)
    here: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def matching(self) -> int:
        """Candidates drawn here that the bundle's first batch holds too."""
        theirs = set(self.bundle)
        return sum(1 for trace in self.here if trace in theirs)

    @property
    def same(self) -> bool:
        """Whether the same candidates were drawn, in the same order."""
        return self.error is None and bool(self.bundle) and self.bundle == self.here

    def text(self) -> str:
        if self.error is not None:
            return f"First batch not re-drawn: {self.error}"
        verdict = ("the same candidates in the same order" if self.same else
                   f"{self.matching} of {len(self.here)} re-drawn candidates are in it")
        return (f"First batch re-drawn with seed {self.seed}: {len(self.here)} candidates here, "
                f"{len(self.bundle)} in the bundle; {verdict}.")


@dataclass
class Reproduction:
    """What :func:`reproduce` found; ``str()`` (or :meth:`text`) renders it as the CLI prints it.

    Attributes
    ----------
    source : Path
        The bundle or work dir.
    environment : dict | None
        The bundle's environment (its first ``environment`` line: what drew its first batch).
    kernels : pandas.DataFrame
        One row per task (:data:`KERNEL_COLUMNS`): its best trial, the bundle's latency and
        the one measured here (µs), here / bundle, and the error if it could not be timed.
    first_batch : FirstBatch | None
        None when not asked for.
    differences : list of (fact, in bundle, here)
        Environment facts that differ (see
        :func:`msviz.records.environment.environment_differences`).
    notes : list of str
        The bundle's settings a reproduce did not use as stored (see :data:`RETIME_LIMITS`).
    """

    source: Path
    environment: dict | None
    kernels: pd.DataFrame
    first_batch: FirstBatch | None
    differences: list[tuple[str, Any, Any]]
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        env = self.environment or {}
        lines = [f"Bundle {self.source}: " + _where(env)]
        lines += [f"Note: {note}" for note in self.notes]
        if len(self.kernels):
            shown = self.kernels.assign(error=self.kernels["error"].fillna(""))
            lines += ["", "Best kernels re-timed here (µs; ratio = here / bundle):",
                      shown.to_string(index=False, na_rep="-",
                                      float_format=lambda v: f"{v:.4g}")]
        if self.first_batch is not None:
            lines += ["", self.first_batch.text()]
        lines.append("")
        if not self.environment:
            lines.append("Environment: the bundle has none (not tuned by an msviz session).")
        elif not self.differences:
            lines.append("Environment: versions and CPU are the same here.")
        else:
            lines.append("Environment differences (bundle -> here):")
            for fact, theirs, mine in self.differences:
                if fact == "CPU features":
                    lines.append(f"  CPU features: only in the bundle's: "
                                 f"{' '.join(theirs) or '-'}; only here: {' '.join(mine) or '-'}")
                else:
                    lines.append(f"  {fact}: {theirs} -> {mine}")
        return "\n".join(lines)

    __str__ = text


def _where(env: dict) -> str:
    if not env:
        return "no environment recorded"
    versions, host = env.get("versions", {}), env.get("host", {})
    what = (env.get("model") or {}).get("name") or (env.get("workload") or {}).get("name")
    return (f"{what}, tuned with msviz {versions.get('msviz')}, TVM {versions.get('tvm')} "
            f"(LLVM {versions.get('llvm')}) on {host.get('cpu')} ({host.get('mcpu')}, "
            f"{host.get('cores')} cores), seed {env.get('seed')}, preset {env.get('preset')}")


def first_batch_traces(run: Run) -> list[str]:
    """The traces of a run's first batch, in record order, as ``"<workload hash> <canonical
    trace JSON>"`` read from the record file. The first batch is the batch (a sidecar column,
    counted per task) of the first record, of that record's task."""
    trials = run.trials
    if "batch" not in trials or trials.empty or pd.isna(trials["batch"].iloc[0]):
        return []
    first = trials.iloc[0]
    rows = trials[(trials["workload"] == first["workload"]) & (trials["batch"] == first["batch"])]
    lines = (run.work_dir / db_files.RECORD_FILE).read_bytes().split(b"\n")
    out = []
    for line, workload in zip(rows["line"], rows["workload"], strict=True):
        trace = json.loads(lines[int(line) - 1])[1][0]
        out.append(f"{run.workload_key(int(workload))} {json.dumps(trace, sort_keys=True)}")
    return out


def retime_best(run: Run, evaluator_config: dict | None = None) -> pd.DataFrame:
    """Build each task's best trial and time it here with MetaSchedule's builder and runner."""
    rows: list[dict] = []
    todo = []
    for task in run.tasks.itertuples():
        if task.best_trial is None or pd.isna(task.best_trial):
            continue
        trial = run.trial(int(task.best_trial))
        row = {"task": task.task, "trial": trial.index, "bundle_us": trial.latency_us,
               "here_us": math.nan, "ratio": math.nan, "error": None}
        try:
            record = trial.record
            todo.append((row, trial.mod, record.target, record.args_info))
        except Exception as err:  # a record this TVM cannot replay: say so in its row
            row["error"] = f"{type(err).__name__}: {err}".strip().splitlines()[0]
        rows.append(row)
    by_target: dict[str, list] = {}
    for item in todo:  # one builder/runner per target
        by_target.setdefault(str(item[2]), []).append(item)
    for items in by_target.values():
        service = MeasuringService(items[0][2], evaluator_config=evaluator_config)
        try:
            results = service.measure([mod for _, mod, _, _ in items],
                                      [list(args) for *_, args in items])
        finally:
            service.close()
        for (row, *_), res in zip(items, results, strict=True):
            if res.error or not res.run_secs:
                row["error"] = _error_line(res.error or "no timing")
                continue
            row["here_us"] = 1e6 * sum(res.run_secs) / len(res.run_secs)
            row["ratio"] = row["here_us"] / row["bundle_us"]
    return pd.DataFrame(rows, columns=KERNEL_COLUMNS)


def _best_kernels(run: Run, why: str) -> pd.DataFrame:
    """Each task's best trial as :func:`retime_best` lists it, not timed here (``why``)."""
    rows = [{"task": t.task, "trial": int(t.best_trial),
             "bundle_us": run.trial(int(t.best_trial)).latency_us, "here_us": math.nan,
             "ratio": math.nan, "error": why}
            for t in run.tasks.itertuples()
            if t.best_trial is not None and not pd.isna(t.best_trial)]
    return pd.DataFrame(rows, columns=KERNEL_COLUMNS)


def _error_line(text: str) -> str:
    """A build or run error in one line: its first line (``LocalBuilder: An exception
    occurred``) and, where that is all it says, its last (the exception itself)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "no timing"
    return lines[0] if len(lines) == 1 else f"{lines[0]}: {lines[-1]}"


def _workload_of(run: Run, env: dict) -> Any:
    """What the re-drawn session tunes: the catalogue model or workload the bundle names, else
    the bundle's own (single) workload."""
    model = env.get("model")
    if model is not None:
        if not model.get("source"):
            raise MsvizError(f"the model {model.get('name')!r} is not from msviz's catalogue, "
                             "and a bundle does not carry the model itself")
        return model["source"]
    source = (env.get("workload") or {}).get("source")
    if source:
        return source
    workloads = sorted(set(run.trials["workload"]))
    return run.workload_mod(int(workloads[0]))


def _beyond_redraw(env: dict) -> str | None:
    """Why a bundle's stored settings are too large to re-draw (None: within
    :data:`REDRAW_LIMITS`)."""
    stored = {"trials_per_batch": env.get("trials_per_batch"), **(env.get("knobs") or {})}
    over = [f"{name}={value:,} (at most {high:,})" for name, high in REDRAW_LIMITS.items()
            if isinstance(value := stored.get(name), int) and not isinstance(value, bool)
            and value > high]
    if not over:
        return None
    return (f"the bundle's {', '.join(over)} beyond what a reproduce re-draws (its memory and "
            "time grow with them, and a smaller value would draw other candidates); re-draw it "
            "by hand with msviz.engine.environment.config_of if this machine can afford it")


def redraw_first_batch(run: Run, env: dict, *, timeout: float = 600.0) -> FirstBatch:
    """Tune one batch in a temporary work dir with a session made from ``env`` and compare
    its candidates with the run's first batch.

    Settings beyond :data:`REDRAW_LIMITS` are refused (the error says which); the batch is
    timed with :data:`REDRAW_EVALUATOR`; the session is given ``timeout`` seconds to draw and
    measure it, then stopped. Its temporary work dir is removed on every exit, after the
    session is stopped.
    """
    out = FirstBatch(env.get("seed"), bundle=first_batch_traces(run))
    if not out.bundle:
        out.error = "its sidecar marks no trial as the first batch's (batch 0)"
        return out
    tmp = Path(tempfile.mkdtemp(prefix="msviz-reproduce-"))
    session = None
    try:
        try:
            config = config_of(env, end_to_end_check=False, evaluator_config=REDRAW_EVALUATOR)
            out.error = _beyond_redraw(env)
            if out.error is not None:
                return out
            session = Session.from_config(_workload_of(run, env), config,
                                          work_dir=tmp / "work_dir")
        except (MsvizError, TypeError, ValueError) as err:
            out.error = f"cannot make the session again: {err}"
            return out
        session.step("batch")
        state = session.wait(timeout)
        if state not in ("paused", "finished"):
            out.error = f"the re-drawn session {state}: {session.end_reason}"
            return out
        out.here = first_batch_traces(Run(session.work_dir))
        return out
    finally:
        if session is not None:  # ended before its folder goes, whatever ended this
            with contextlib.suppress(Exception):
                session.stop()
                session.wait(timeout)
        shutil.rmtree(tmp, ignore_errors=True)


def _bounded_evaluator(config: Any, notes: list[str]) -> dict | None:
    """A bundle's evaluator config with each value brought into :data:`RETIME_LIMITS` (a note
    for each changed; a value that is not a number is left to MetaSchedule's default)."""
    if not isinstance(config, dict):
        if config is not None:
            notes.append(f"the bundle's evaluator_config {config!r} is not a mapping: re-timed "
                         "with MetaSchedule's defaults")
        return None
    out = {k: v for k, v in config.items() if k in (*RETIME_LIMITS, "enable_cpu_cache_flush")}
    for name in sorted(set(config) - set(out)):
        notes.append(f"the bundle's evaluator_config has an unknown setting {name!r}: ignored")
    for name, (low, high) in RETIME_LIMITS.items():
        value = out.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value):
            del out[name]
            notes.append(f"the bundle's evaluator_config {name}={value!r} is not a number: "
                         "re-timed with MetaSchedule's default")
        elif not low <= value <= high:
            out[name] = min(max(int(value), low), high)
            notes.append(f"the bundle's evaluator_config {name}={value:,} is outside what a "
                         f"reproduce times with ({low} to {high:,}): re-timed with {out[name]:,}")
    return out


def reproduce(bundle: str | Path, *, retime: bool = True, redraw: bool = True) -> Reproduction:
    """Re-time a bundled run's best kernels here, re-draw its first batch, compare environments.

    The bundle's stored settings are used within bounds (see the module's doc:
    :data:`REDRAW_LIMITS`, :data:`RETIME_LIMITS`), so that a reproduce stays within about a
    tuning batch's memory and time whatever the bundle holds.

    Parameters
    ----------
    bundle : str | Path
        A bundle (``msviz bundle``'s zip) or a work dir an msviz session wrote.
    retime : bool
        Build and time each task's best trial here.
    redraw : bool
        Tune one batch with the bundle's seed, preset, knobs and rules and compare its
        candidates with the bundle's first batch (needs the environment an msviz session
        stores; a model must come from msviz's catalogue).

    Returns
    -------
    result : Reproduction
        ``print(result)`` shows all three.
    """
    run = open_work_dir(bundle)
    envs = _environments(run)
    first = envs[0] if envs else None
    notes: list[str] = []
    config = _bounded_evaluator((first or {}).get("evaluator_config"), notes)
    elsewhere = other_architecture(first)
    if retime and elsewhere:  # a build would fail with the builder's "An exception occurred"
        notes.append(f"not re-timed: {elsewhere}")
        kernels = _best_kernels(run, f"not re-timed: {elsewhere}")
    else:
        kernels = retime_best(run, config) if retime else pd.DataFrame(columns=KERNEL_COLUMNS)
    batch = None
    if redraw:
        batch = (redraw_first_batch(run, first) if first is not None else
                 FirstBatch(None, error="the bundle has no environment (not tuned by an msviz "
                                        "session): its seed and settings are unknown"))
    here = host_facts()
    return Reproduction(Path(bundle), first, kernels, batch,
                        environment_differences(first, here) if first else [],
                        notes if retime else [])


def _environments(run: Run) -> list[dict]:
    envs = environments(read_sidecar(run.work_dir))
    return envs or ([run.environment] if run.environment else [])

