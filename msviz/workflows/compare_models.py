"""Two work dirs of one model (msviz's, MetaSchedule's) compared whole, in paired rounds
(:mod:`msviz.bench.paired`): ``msviz.compare_models(a, b)``. Built and timed by the measuring
service (:func:`msviz.engine.measure.requests.compare_model_builds`, under its lock): never
beside a tuning batch of this process."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msviz import compat, models
from msviz.archive.merge_sources import impossible_records
from msviz.engine.arguments import check_seed, holds_workload, workloads_held
from msviz.engine.measure.requests import (
    DEFAULT_DRAWS,
    DEFAULT_ROUNDS,
    PairedComparison,
    compare_model_builds,
)
from msviz.engine.measure.runner import evaluator_config
from msviz.errors import MsvizError, WorkDirError
from msviz.records import database as db_files
from msviz.records.impossible import refuse_impossible
from msviz.records.model_profile import last_entry, model_of_run
from msviz.records.sidecar import read_sidecar

__all__ = ["check_holds_model", "check_records", "check_work_dir", "checked_settings",
           "compare_models", "model_named"]


def compare_models(a: Any, b: Any, *, model: Any = None, target: Any = "llvm",
                   names: Sequence[str] | None = None, rounds: int = DEFAULT_ROUNDS,
                   draws: int = DEFAULT_DRAWS, number: int = 10, repeat: int = 3,
                   min_repeat_ms: int = 30, seed: int = 0) -> PairedComparison:
    """A model tuned two ways, compared whole in paired rounds.

    Parameters
    ----------
    a, b : str | Path | Executable
        Work dirs (MetaSchedule's or msviz's) whose databases ``compile_relax`` builds the model
        with, or builds already made.
    model : optional
        The model (anything :func:`msviz.models.load` takes); None: the catalogue model the
        first msviz work dir's environment names.
    target : str | Target
        What to build for (``"llvm"``: this host's CPU).
    names : (str, str), optional
        The builds' names (default: the work dirs' names, else ``"a"`` and ``"b"``).

    Returns
    -------
    PairedComparison
        ``str()`` of it says the paired median ratio B / A, its spread and the verdict.
    """
    dirs = [Path(x) for x in (a, b) if isinstance(x, (str, Path))]
    for work_dir in dirs:  # before the model is looked for in it
        check_work_dir(work_dir, "pass the work dirs of two tunings of one model")
    settings = checked_settings(number, repeat, min_repeat_ms)
    check_seed(seed)
    named = {d: model_named(d) for d in dirs}
    if len({m for m in named.values() if m is not None}) > 1:
        raise MsvizError(
            "compare_models compares two tunings of one model: "
            + "; ".join(f"{d} was tuned for {m!r}" for d, m in named.items())
            + ": pass two work dirs of the same model")
    if model is None:
        if not dirs:
            raise ValueError("pass model= to compare two builds of it")
        first = next((d for d in dirs if named[d] is not None), dirs[0])
        model = model_of_run(first, read_sidecar(first).other)
    elif dirs:  # on the graph the work dirs were tuned on (each build on its own)
        model = model_of_run(dirs[0], read_sidecar(dirs[0]).other, model)
    else:
        model = models.load(model)
    target = compat.make_target(target)
    if dirs:
        check_holds_model(dirs, named, model, target)
    labels = list(names) if names is not None else [
        Path(x).name if isinstance(x, (str, Path)) else key for x, key in ((a, "a"), (b, "b"))]
    if len(labels) != 2 or labels[0] == labels[1]:
        labels = [f"a:{labels[0]}", f"b:{labels[-1]}"]
    return compare_model_builds(a, b, model, target, labels, seed=seed, rounds=rounds,
                                draws=draws, **settings)


def check_work_dir(work_dir: Path, advice: str) -> None:
    """Refuse a path that is not a work dir (missing, or without MetaSchedule's two database
    files), saying why and ``advice``."""
    if not work_dir.is_dir() or not all((work_dir / n).is_file() for n in (
            db_files.WORKLOAD_FILE, db_files.RECORD_FILE)):
        why = ("it does not exist" if not work_dir.exists() else
               f"it holds no {db_files.WORKLOAD_FILE} and {db_files.RECORD_FILE}")
        raise WorkDirError(f"{work_dir} is not a work dir ({why}): {advice}")


def checked_settings(number: Any, repeat: Any, min_repeat_ms: Any, *,
                     caller: str = "compare_models") -> dict[str, int]:
    """The timing settings, checked as a Session checks its ``evaluator_config`` (one check:
    :func:`~msviz.engine.measure.runner.evaluator_config`): ``number=0`` would time nothing
    and report ``nan``."""
    try:
        config = evaluator_config({"number": number, "repeat": repeat,
                                   "min_repeat_ms": min_repeat_ms})
    except (TypeError, ValueError) as err:
        raise type(err)(f"{caller}: {err} (number, repeat and min_repeat_ms are the "
                        "evaluator settings a Session takes)") from None
    return {"number": int(config.number), "repeat": int(config.repeat),
            "min_repeat_ms": int(config.min_repeat_ms)}


def model_named(work_dir: Path) -> str | None:
    """The catalogue model a msviz work dir's environment line names (None: none named)."""
    env = last_entry(read_sidecar(work_dir).other, "environment")
    found = env.get("model") if env is not None else None
    if isinstance(found, dict) and isinstance(found.get("source"), str):
        return found["source"]
    return None


def check_records(work_dir: Path, verb: str = "compare") -> set[str]:
    """Refuse a work dir whose records the model cannot be built with as they are (``verb``:
    what would be done with it); returns its records' targets (as the file holds them).

    Refused, naming the lines: a database file stock ``JSONDatabase`` cannot load (a torn,
    corrupt or blank line: :func:`~msviz.records.database.stock_unreadable`; it fails on the
    whole file, and a blank record line crashes the process); no tuning record; a record that
    cannot be true (``msviz.open`` marks it ``"impossible"``: ``compile_relax`` would rank it
    by its time and build the model with it). ``msviz merge`` writes a copy without them.
    """
    db_files.refuse_unreadable(work_dir, verb)
    targets = workloads_held(work_dir)[1]
    if not targets:
        raise MsvizError(f"{work_dir} holds no tuning record: there is nothing of it to "
                         f"{verb} (tune it first, or pass another work dir)")
    refuse_impossible(work_dir, impossible_records(work_dir), verb)
    return targets


def check_holds_model(dirs: list[Path], named: dict[Path, str | None], model: Any,
                      target: Any, *, doing: tuple[str, str] = ("compare", "compared"),
                      advice: str = "compare two work dirs of one model, or pass model= for "
                      "the model both were tuned for", records_checked: bool = False) -> list:
    """Refuse a work dir none of whose records is of a task of ``model``: ``compile_relax``
    would match nothing in it and build the model untuned, and the comparison would time an
    untuned build as that dir's (a deployed model would be an untuned one). ``doing`` (the
    verb and its participle) and ``advice`` word the refusal; ``records_checked``: each dir's
    :func:`check_records` was passed already. Returns the model's tasks."""
    tasks = model.extract_tasks(target)
    for work_dir in dirs:
        if not records_checked:
            check_records(work_dir, doing[0])
        used = workloads_held(work_dir)[0]
        if not any(holds_workload(used, t.workload) for t in tasks):
            what = (f"was tuned for {named[work_dir]!r}" if named.get(work_dir) else
                    f"holds records of {len(used)} workload(s)")
            raise MsvizError(
                f"{work_dir} {what}, none of them a task of the model {doing[1]} "
                f"({model.name!r}: {', '.join(t.name for t in tasks[:4])}"
                f"{' ...' if len(tasks) > 4 else ''}): {advice}")
    return tasks
