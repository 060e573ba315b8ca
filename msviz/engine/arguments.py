"""A Session's arguments, checked in its constructor so a bad one fails before tuning, each
error naming the argument and what was wrong (the checks of one value, which
:class:`~msviz.engine.config.SessionConfig` makes; the work dir's); and what the workload argument
means."""

from __future__ import annotations

import math
import numbers
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msviz import compat, models
from msviz.errors import MsvizWarning, WorkDirError, WriteError
from msviz.models import graph_passes
from msviz.records import database as db_files
from msviz.records import targets
from msviz.records.library import Library
from msviz.records.model_profile import graph_of_run
from msviz.workloads import resolve

__all__ = [
    "DEFAULT_MAX_TRIALS",
    "TIME_ONLY_MAX_TRIALS",
    "check_budget",
    "check_resume",
    "check_seconds",
    "check_seed",
    "check_timeout",
    "check_work_dir",
    "check_writable",
    "duration_text",
    "holds_workload",
    "library_notes",
    "parse_duration",
    "task_of",
    "tasks_of",
    "workloads_held",
]

#: The largest seed (numpy's and TVM's random states take 0 .. 2**31 - 1).
MAX_SEED = 2**31 - 1
#: A session's trial budget when it is given neither trials nor seconds.
DEFAULT_MAX_TRIALS = 64
#: A session's trial budget when it is given only seconds (``max_seconds``): no limit of its own.
TIME_ONLY_MAX_TRIALS = 1_000_000
#: The most candidates one batch may measure (MetaSchedule's default is 64).
MAX_TRIALS_PER_BATCH = 4096


def check_budget(name: str, value: Any, high: int | None = None) -> None:
    """A trial budget: an int >= 1 (not a bool), at most ``high``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if high is not None and value > high:
        raise ValueError(f"{name}={value:,} is beyond msviz's range (at most {high:,}): "
                         "choose a smaller value")


def check_seconds(name: str, value: Any) -> float | None:
    """A time budget in seconds: None, or a finite number > 0 (not a bool); as a float."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a number of seconds > 0 (or None for no time "
                         f"limit), got {value!r}")
    return float(value)


def check_timeout(name: str, value: Any) -> float:
    """A timeout in seconds: a finite number > 0 (not a bool); as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    return float(value)


_DURATION = re.compile(r"(?:(\d+(?:\.\d*)?)h)?(?:(\d+(?:\.\d*)?)m)?(?:(\d+(?:\.\d*)?)s?)?")


def parse_duration(text: str) -> float:
    """Seconds of a duration: ``"90"``, ``"90s"``, ``"20m"``, ``"1h30m"``, ``"1.5h"``.

    Raises
    ------
    ValueError
        Text that is no such duration, or not > 0.
    """
    match = _DURATION.fullmatch(text.strip().lower())
    if not text.strip() or match is None or not any(match.groups()):
        raise ValueError(f"{text!r} is not a duration (seconds, or 90s, 20m, 1h30m)")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    value = hours * 3600 + minutes * 60 + seconds
    if not value > 0:
        raise ValueError(f"{text!r}: a duration must be > 0")
    return value


def duration_text(seconds: float) -> str:
    """``1200`` -> ``"20m"``, ``90`` -> ``"1m30s"``, ``5400`` -> ``"1h30m"``, ``12.5`` ->
    ``"12.5s"``."""
    if seconds < 60:
        return f"{seconds:g}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if v)


#: What a tuning library's exact hit does: "improve" (tune on from the library's best) or
#: "skip" (no trials).
REUSE_POLICIES = ("improve", "skip")


def check_reuse(reuse: Any) -> str:
    """The reuse policy, checked (a bad one names the choices)."""
    if reuse not in REUSE_POLICIES:
        raise ValueError(f"reuse must be one of {', '.join(map(repr, REUSE_POLICIES))}, not "
                         f"{reuse!r}")
    return reuse


def library_paths(library: Any) -> tuple[str, ...] | None:
    """A session's ``library=`` as the paths its config keeps (None: no library): a path, a
    list of paths (work dirs, bundles, folders of them) or an :class:`msviz.Library`.

    Raises
    ------
    TypeError
        For anything else, naming what was given.
    """
    why = ("library must be a path, a list of paths (work dirs, bundles, folders of them) or an "
           "msviz.Library")
    if library is None:
        return None
    if isinstance(getattr(library, "paths", None), (list, tuple)):  # an msviz.Library
        return tuple(str(p) for p in library.paths)
    if isinstance(library, (str, Path)):
        return (str(library),)
    if isinstance(library, (list, tuple)):
        if not library or not all(isinstance(p, (str, Path)) for p in library):
            raise TypeError(f"{why}, got {library!r}")
        return tuple(str(p) for p in library)
    raise TypeError(f"{why}, not {type(library).__name__}")


def library_notes(paths: tuple[str, ...] | None, target: Any) -> list[str]:
    """What a session will not take from its library, said when it is made (its worker names
    the same again as warning events): each path that does not exist or cannot be read, and
    each source that holds no record of ``target`` (its workloads count as siblings only)."""
    if not paths:
        return []
    with warnings.catch_warnings():  # said once, by the caller
        warnings.simplefilter("ignore", MsvizWarning)
        library = Library(paths)
    notes = [*library.problems, *library.other_targets(target)]
    if not library.entries and not notes:
        notes.append(f"{', '.join(paths)}: nothing usable in it for this session (no readable "
                     "tuning record): it tunes as if it had no library")
    return notes


def check_seed(seed: Any) -> int | None:
    """``seed`` as an int (None stays None).

    Only integers are seeds (numpy's too): ``1.7`` or ``True`` would silently become 1.

    Raises
    ------
    TypeError
        For a bool, float, str or any other non-integer.
    """
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(
            f"seed must be an int (or None for a random seed), not {type(seed).__name__} "
            f"{seed!r}")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be within 0 .. {MAX_SEED} (or None for a random seed), "
                         f"got {seed}")
    return int(seed)


def check_work_dir(work_dir: Any, resume: Any) -> None:
    """Refuse a ``work_dir`` that cannot be used, a ``resume`` with nothing to resume, and a
    fresh start over records (which would mix two runs).

    Raises
    ------
    WorkDirError
        ``work_dir`` is empty (``""``) or an existing file; ``resume=True`` and ``work_dir``
        is None or does not exist (a mistyped path would silently start a new run); or
        ``resume=False`` and ``work_dir`` holds tuning records.
    """
    if isinstance(work_dir, str) and not work_dir.strip():
        raise WorkDirError(
            f"work_dir {work_dir!r} is empty, which would put the records in the current "
            "directory: name a directory, or pass None for a new temp dir")
    if work_dir is not None and Path(work_dir).exists() and not Path(work_dir).is_dir():
        raise WorkDirError(
            f"work_dir {str(work_dir)!r} is a file, not a directory: pass a new directory or "
            "one that holds a MetaSchedule work dir")
    if resume:
        if work_dir is None:
            raise WorkDirError(
                "resume=True needs the work_dir of the run to continue; pass work_dir=..., or "
                "resume=False to start a new run")
        if not Path(work_dir).exists():
            raise WorkDirError(
                f"resume=True but work_dir {str(work_dir)!r} does not exist (nothing to resume; "
                "a mistyped path?): check the path, or pass resume=False to start a new run "
                "there")
    elif work_dir is not None:
        records = Path(work_dir) / db_files.RECORD_FILE
        if records.is_file() and records.stat().st_size > 0:
            raise WorkDirError(
                f"{work_dir} already holds tuning records: pass resume=True to continue "
                "them, or choose another work_dir")


def check_writable(work_dir: Path) -> None:
    """Make ``work_dir`` (and its parents) and check a file can be written in it, so a path
    that cannot hold records fails here, naming it, not later on the worker thread.

    Raises
    ------
    WriteError
        The directory cannot be made, or a file cannot be created in it.
    """
    try:
        work_dir.mkdir(parents=True, exist_ok=True)
        probe = work_dir / f".msviz-write-check-{os.getpid()}"
        with open(probe, "wb") as f:
            f.write(b"msviz")
        probe.unlink()
    except OSError as err:
        where = err.filename if err.filename and str(err.filename) != str(work_dir) else None
        raise WriteError(
            f"work_dir {str(work_dir)!r} cannot be written ({err.strerror or err}"
            f"{f': {where}' if where else ''}): choose a directory msviz may create files "
            "in") from None


def check_resume(work_dir: Path, tasks: list, target: Any) -> None:
    """Refuse to resume a work dir whose records are of other workloads or another target:
    the new trials would be mixed with them under one task.

    Raises
    ------
    WorkDirError
        Naming what the work dir holds and what the session would tune.
    """
    used, record_targets = workloads_held(work_dir)
    if not record_targets:
        return
    mine = [t.workload for t in tasks]
    if used and not any(holds_workload(used, w) for w in mine):
        raise WorkDirError(
            f"resume=True but work_dir {str(work_dir)!r} holds records of another workload "
            f"than {', '.join(w.name for w in mine[:3])}{' ...' if len(mine) > 3 else ''} "
            "(its structure, shapes or dtypes differ): pass the workload it was tuned for, or "
            "choose another work_dir")
    theirs = {text: targets.record_target(text) for text in record_targets}
    if theirs and not any(targets.same_target(t, target) for t in theirs.values()):
        raise WorkDirError(
            f"resume=True but work_dir {str(work_dir)!r} holds records for the target "
            f"{' / '.join(sorted(str(t) for t in theirs.values()))}, not this session's "
            f"{target}: pass that target, or choose another work_dir")


def workloads_held(work_dir: Path) -> tuple[list, set[str]]:
    """The workload lines of a work dir that its records use, and its records' targets (as
    the file holds them): what a resumed session or a comparison checks its tasks against."""
    with warnings.catch_warnings():  # a torn tail: the session repairs it and says so
        warnings.simplefilter("ignore", MsvizWarning)
        workloads = db_files.read_workloads(work_dir / db_files.WORKLOAD_FILE)
        records = db_files.read_record_columns(work_dir / db_files.RECORD_FILE, len(workloads))
    used = [workloads[i] for i in sorted(set(records.workload)) if workloads[i] is not None]
    return used, set(records.target)


def holds_workload(entries: list, workload: Any) -> bool:
    """Whether a work dir's workload lines hold ``workload`` (by MetaSchedule's hash, else by
    structure: another TVM version may hash the same module differently)."""
    shash = str(compat.structural_hash(workload.mod))
    if any(e.shash == shash for e in entries):
        return True
    for entry in entries:
        try:
            stored = compat.Workload.from_json([entry.shash, entry.payload]).mod
        except Exception:  # TVM's own error types: a payload this TVM cannot load
            continue
        if compat.structural_equal(stored, workload.mod):
            return True
    return False


def on_tuned_graph(found: Any, work_dir: Any, entries: Sequence[dict], target: Any) -> Any:
    """Model ``found`` on the graph a work dir was tuned on: the one its environment line
    names, else (stock MetaSchedule's work dirs, msviz's before the expert graph) the graph
    more of whose tasks it holds records of (stock's on a tie): built on the other graph, most
    tasks would run untuned."""
    graph = graph_of_run(entries)
    if graph is not None:
        return found.on_graph(graph)
    used = workloads_held(Path(work_dir))[0]
    held = {graph: sum(holds_workload(used, t.workload)
                       for t in found.on_graph(graph).extract_tasks(target))
            for graph in graph_passes.GRAPHS}
    best = max(graph_passes.GRAPHS, key=lambda g: (held[g], g == graph_passes.STOCK))
    return found.on_graph(best)


def tasks_of(workload: Any, target: Any, *, params: dict | None = None,
             spec: dict | None = None, graph: str | None = None
             ) -> tuple[models.Model | None, list[models.ModelTask]]:
    """What a session tunes: a model (on ``graph``, else its own) and its tasks
    (``extract_tasks``), or no model and one task, the PrimFunc workload."""
    if models.is_model(workload):
        model = models.load(workload, params=params, spec=spec)
        if graph is not None:
            model = model.on_graph(graph)
        return model, model.extract_tasks(target)
    if params is not None or spec is not None:
        raise TypeError("params= and spec= belong to a model (a Relax IRModule, an "
                        "nn.Module), not to a single PrimFunc workload")
    if graph is not None:
        raise TypeError(f"graph={graph!r} belongs to a model (the graph passes rewrite a "
                        "model's Relax graph), not to a single PrimFunc workload: leave it out")
    one = resolve(workload)
    return None, [models.ModelTask(0, one.name, 1, one)]


def task_of(what: Any) -> Any:
    """The task name a trial row or Trial carries (None if it names none)."""
    task = getattr(what, "task", None)
    if task is None and hasattr(what, "get"):
        task = what.get("task")
    return task if isinstance(task, str) else None
