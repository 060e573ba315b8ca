"""The measuring service's requests that are not a list of schedules: a trial's result check,
a model profiled anew, a forced schedule (why-not) timed, a tuned model built, run and exported
(``msviz.build``). Each builds and runs kernels, so each
holds :data:`~msviz.engine.measure.service.MEASURING_LOCK`, the lock every build and run of
:class:`~msviz.engine.measure.service.MeasuringService` holds: one measurement at a time in this
process, so a check never times against a tuning batch on the same cores.

The building and running itself is :mod:`msviz.bench`'s (the same bench, one room lower: it
knows no lock and no session); user calls reach these through a Run's actions
(:mod:`msviz.engine.measure.run_actions`) and the why-not view.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from msviz import compat
from msviz.archive import merge
from msviz.bench import deploy
from msviz.bench import draws as draws_mod
from msviz.bench.draws import DEFAULT_DRAWS
from msviz.bench.model_check import run_check
from msviz.bench.model_profile import PROFILE_RUNS, profile_model
from msviz.bench.paired import DEFAULT_ROUNDS, PairedComparison, check_count, compare_builds
from msviz.bench.schedule import CheckResult, Reference, check_schedule, random_inputs
from msviz.engine.arguments import on_tuned_graph, workloads_held
from msviz.engine.measure.service import MEASURING_LOCK
from msviz.errors import MsvizError, TargetError
from msviz.records import database as db_files
from msviz.records.impossible import refuse_impossible
from msviz.records.model_profile import (
    DEFAULT_THRESHOLD,
    model_of_run,
    model_profile_frame,
)
from msviz.records.sidecar import read_sidecar
from msviz.records.targets import target_text
from msviz.whynot.wants import tvm_text

__all__ = [
    "DEFAULT_DRAWS",
    "DEFAULT_ROUNDS",
    "PairedComparison",
    "build_tuned_model",
    "build_untuned_model",
    "check_model_end_to_end",
    "check_rounds",
    "check_trial",
    "compare_model_builds",
    "export_model_build",
    "measure_forced",
    "model_profile_of",
    "profile_run",
    "run_model_build",
    "tuned_database",
]


def check_rounds(rounds: Any, draws: Any) -> None:
    """Refuse ``rounds`` and ``draws`` a paired comparison cannot use, naming them, before any
    work (the measuring room's own checks, for the workflows above it)."""
    check_count("rounds", rounds)
    draws_mod.check_draws(draws)


def check_trial(trial: Any, *, inputs: Any = None, rtol: float | None = None,
                atol: float | None = None, seed: int = 0) -> CheckResult:
    """``Trial.check``: build the trial's schedule and its untuned workload for the record's
    target, run both on the same inputs, compare (:func:`msviz.bench.schedule.check_schedule`)."""
    record = trial.record
    target = record.target if record.target is not None else compat.make_target("llvm")
    mod = trial.mod  # replayed before the lock: no kernel is built yet
    with MEASURING_LOCK:
        return check_schedule(mod, record.workload.mod, target, inputs=inputs, rtol=rtol,
                              atol=atol, seed=seed)


def check_model_end_to_end(model: Any, tasks: Sequence[Any], work_dir: Any, target: Any, *,
                           seed: int, draws: int | None) -> tuple[dict, Any, Any]:
    """A model compiled with the work dir's database and without, both run on the same random
    inputs, compared and timed in ``draws`` fresh processes (None:
    :data:`msviz.bench.draws.DEFAULT_DRAWS`, read now) that also profile the tuned build
    (:func:`msviz.bench.model_check.run_check`), under the lock."""
    draws = draws_mod.DEFAULT_DRAWS if draws is None else draws
    database = tuned_database(work_dir, target)
    with MEASURING_LOCK:
        return run_check(model, tasks, work_dir, target, seed=seed, draws=draws,
                         profile_runs=PROFILE_RUNS, database=database)


def tuned_database(work_dir: Any, target: Any) -> Any:
    """The database a model is built with from a work dir: stock's ``JSONDatabase`` when its
    records are of one target. When they are of several (a work dir resumed on another CPU, or
    tuned for a GPU as well), only ``target``'s best records
    (:func:`msviz.archive.merge.database`; an empty database when none is of ``target``): a
    ``JSONDatabase`` answers each workload's fastest record of any target, and the build would
    run a schedule timed on another machine, or a GPU's schedule on the CPU."""
    held = workloads_held(Path(work_dir))[1]
    texts = set()
    for text in held:
        try:
            texts.add(target_text(text))
        except ValueError:  # a target this TVM cannot read: one of its own
            texts.add(text)
    if len(texts) <= 1:
        return compat.JSONDatabase(work_dir=str(work_dir))
    try:
        return merge.database(work_dir, target=target)
    except TargetError:
        return compat.ms.database.MemoryDatabase()


def profile_run(run: Any, model: Any = None, *, threshold: float = DEFAULT_THRESHOLD,
                runs: int = PROFILE_RUNS, draws: int = DEFAULT_DRAWS) -> pd.DataFrame:
    """A run's model built with its work dir's database and profiled now.

    Parameters
    ----------
    run : msviz.Run
        A work dir of a tuned model.
    model : Model | str | ..., optional
        The model (anything :func:`msviz.models.load` takes: a catalogue name such as
        ``"mlp"``, an ``.onnx`` path, a :class:`msviz.models.Model`); needed unless the
        sidecar's ``environment`` line names a catalogue model.
    threshold : float
        ``flagged``: every draw's in-model time per call over ``threshold`` times the tuned
        latency (``ratio > threshold``); ``disputed``: some draws' but not every one's.
    runs : int
        Model runs timed in each draw.
    draws : int
        Fresh processes the model is profiled in (a process's speed can be ~1x or ~2x for its
        whole life on a shared machine; the least draw is kept).

    Returns
    -------
    profile : pandas.DataFrame
        One row per task in task order: ``task`` (string), ``calls`` (int64, per model run),
        ``in_model_us`` (the least over the draws of the median time per call in the model),
        ``in_model_max_us`` (the slowest draw's), ``spread`` (the one over the other),
        ``tuned_us`` (the best record's mean run time), ``ratio`` (``in_model_us /
        tuned_us``; float64, NaN where a time is missing), ``fallback`` (no successful record:
        the model ran the untuned kernel), ``flagged`` and ``disputed`` (bool).
        ``attrs["other"]`` sums the calls of no task (VM builtins, ...) per symbol;
        ``attrs["draws"]`` the draws, ``attrs["runs"]`` the runs of each. The new profile is
        not written to the work dir.

    Raises
    ------
    MsvizError
        No model given or named; a PrimFunc's work dir; a work dir holding none of the model's
        workloads.
    """
    model = model_of_run(run.work_dir, run.sidecar_entries, model)
    db_files.refuse_unreadable(run.work_dir, "profile")  # JSONDatabase would fail or crash
    if len(run.trials) == 0:
        raise MsvizError(f"{run.work_dir} holds no tuning record: there is no target to build "
                         f"model {model.name!r} for")
    refuse_impossible(run.work_dir, run.impossible, "profile")
    target = run.trial(0).record.target or compat.make_target("llvm")
    model = on_tuned_graph(model, run.work_dir, run.sidecar_entries, target)
    tasks = model.extract_tasks(target)
    database = tuned_database(run.work_dir, target)
    if not any(database.has_workload(t.workload.mod) for t in tasks):
        raise MsvizError(f"{run.work_dir} holds no workload of model {model.name!r} (its tasks: "
                         f"{', '.join(t.name for t in tasks)}; the work dir's: "
                         f"{', '.join(run.tasks['task'])}): is it a PrimFunc's work dir, or "
                         "another model's?")
    return model_profile_of(run.work_dir, model, tasks, target, recorded=None,
                            threshold=threshold, refresh=True, runs=runs, draws=draws,
                            database=database)


def model_profile_of(work_dir: Any, model: Any, tasks: Sequence[Any], target: Any, *,
                     recorded: dict | None, threshold: float = DEFAULT_THRESHOLD,
                     refresh: bool = False, runs: int = PROFILE_RUNS,
                     draws: int = DEFAULT_DRAWS, database: Any = None) -> pd.DataFrame:
    """The recorded profile (unless ``refresh``), else a fresh one of ``model`` built from the
    work dir's database (``database``: :func:`tuned_database`'s, opened already; None: opened
    here) and timed in ``draws`` fresh processes, under :data:`MEASURING_LOCK`; as a
    :func:`~msviz.records.model_profile.model_profile_frame`."""
    if recorded is not None and not refresh:
        if recorded.get("error"):
            raise MsvizError(f"the model profile recorded in {work_dir} failed: "
                             f"{recorded['error']}; pass refresh=True to profile again")
        return model_profile_frame(recorded, threshold)
    if database is None:
        database = tuned_database(work_dir, target)
    with MEASURING_LOCK:
        data = profile_model(model, tasks, work_dir, target, runs=runs, draws=draws,
                             database=database)
    return model_profile_frame(data, threshold)


def measure_forced(answer: Any, *, repeats: int = 3, seed: int = 0) -> dict:
    """Build a forced schedule (a :class:`msviz.whynot.answer.WhyNot`'s), check its result
    against the untuned workload, time it.

    Parameters
    ----------
    answer : WhyNot
        With a forced schedule (``answer.forced``).
    repeats : int
        Timed repeats (the median is reported).
    seed : int
        Seed of the random inputs of the result check.

    Returns
    -------
    result : dict
        ``{"check": "ok" | "wrong" | "error", "detail", "latency_us", "error"}``, as a session's
        re-measure reports an edit.
    """
    if answer.forced is None:
        raise ValueError("this WhyNot has no forced schedule to measure: "
                         f"{answer.blocked_by} blocks it ({answer.reason[:200]})")
    target = answer.target
    with MEASURING_LOCK:
        try:
            func = compat.fast_build(answer.forced.mod, target)
        except Exception as err:
            return {"check": "error", "detail": "", "latency_us": None,
                    "error": f"the forced schedule does not build: {tvm_text(err)}"}
        checked = Reference(answer.workload_mod, target, seed=seed).check(func)
        device = compat.device_of(target)
        args = [compat.to_tensor(a, device) for a in random_inputs(answer.workload_mod, seed)]
        timer = func.time_evaluator("main", device, number=1, repeat=repeats)
        latency = sorted(timer(*args).results)[repeats // 2] * 1e6
    return {"check": checked.outcome, "detail": checked.detail, "latency_us": latency,
            "error": None}


def compare_model_builds(a: Any, b: Any, model: Any, target: Any, labels: list[str], *,
                         seed: int, **timing: Any) -> PairedComparison:
    """``msviz.compare_models``' measurement: each of ``a`` and ``b`` (a work dir, built with
    its database, or a build) and ``model`` timed in paired rounds
    (:func:`msviz.bench.paired.compare_builds`), under the lock."""
    with MEASURING_LOCK:
        return _compare(a, b, model, target, labels, seed=seed, **timing)


def _compare(a: Any, b: Any, model: Any, target: Any, labels: list[str], *, seed: int,
             **timing: Any) -> PairedComparison:
    builds = {}
    for label, what in zip(labels, (a, b)):
        if isinstance(what, (str, Path)):
            if not Path(what).is_dir():
                raise FileNotFoundError(f"{what} is not a work dir")
            database = tuned_database(what, target)
            # each on the graph it was tuned on
            tuned = on_tuned_graph(model, what, read_sidecar(what).other, target)
            builds[label] = tuned.compile(database, target)
        else:
            builds[label] = what
    return compare_builds(builds, model.random_inputs(seed), model.func_name,
                          device=compat.device_type(target), **timing)


def build_tuned_model(model: Any, tasks: list, work_dir: Any, target: Any
                      ) -> tuple[Any, list[str]]:
    """``model`` built with the work dir's best records and its tasks with no record there
    (:func:`msviz.bench.deploy.build_tuned`), under the lock."""
    database = tuned_database(work_dir, target)
    with MEASURING_LOCK:
        return deploy.build_tuned(model, tasks, work_dir, target, database=database)


def build_untuned_model(model: Any, target: Any) -> Any:
    """``model`` built untuned (``tvm.compile``), under the lock."""
    with MEASURING_LOCK:
        return deploy.build_untuned(model, target)


def run_model_build(exe: Any, vm: Any, func_name: str, arrays: Sequence[Any], target: Any
                    ) -> tuple[Any, list[Any]]:
    """A build run once on ``arrays`` (NumPy) in this process, under the lock: its VM (made on
    the first call: pass back the one returned) and its outputs as NumPy arrays."""
    with MEASURING_LOCK:
        vm = deploy.vm_of(exe, target) if vm is None else vm
        return vm, deploy.run_build(vm, func_name, arrays, target)


def export_model_build(exe: Any, path: Any) -> None:
    """A build exported as one shared library (``export_library``, which runs the host
    compiler), under the lock."""
    with MEASURING_LOCK:
        deploy.export_build(exe, path)
