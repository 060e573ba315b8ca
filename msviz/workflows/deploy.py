"""Deploy what was tuned: ``msviz.build(work_dir)`` gives a :class:`TunedModel`, the model built
with the work dir's best records (:meth:`msviz.models.Model.compile`: on the expert graph its
weights prepacked and folded into the executable's constants). Call it on NumPy inputs, time it
against the untuned build in paired rounds, and export it as one shared library that TVM's
runtime loads without msviz. Built, run and timed by the measuring service
(:mod:`msviz.engine.measure.requests`, under its lock, with :mod:`msviz.bench.deploy`): never
beside a tuning batch of this process. From a terminal: ``msviz build`` (:mod:`msviz.cli.deploy`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from msviz import compat
from msviz.archive.writer import output_dir
from msviz.engine.arguments import check_seed, on_tuned_graph
from msviz.engine.measure import requests
from msviz.engine.measure.requests import DEFAULT_DRAWS, DEFAULT_ROUNDS, PairedComparison
from msviz.engine.session import Session
from msviz.errors import MsvizError, TargetError, WriteError
from msviz.records import Run
from msviz.records.model_profile import last_entry, model_of_run
from msviz.records.sidecar import read_sidecar
from msviz.records.targets import record_target, same_target, target_text
from msviz.workflows.compare_models import (
    check_holds_model,
    check_records,
    check_work_dir,
    checked_settings,
    model_named,
)

__all__ = ["LIBRARY_FILE", "LOADER_FILE", "SPEC_FILE", "TunedModel", "build",
           "tuned_model_of"]

#: The files :meth:`TunedModel.export` writes: the shared library (code and weights), what it
#: takes (JSON) and a script that runs it with TVM alone.
LIBRARY_FILE = "model.so"
SPEC_FILE = "model.json"
LOADER_FILE = "load.py"


def build(source: Any, *, model: Any = None, target: Any = None) -> TunedModel:
    """The model a work dir tuned, built with its best records.

    Parameters
    ----------
    source : str | Path | Session | Run
        A work dir of a tuned model, the Session that tuned it, or its ``msviz.open`` Run.
    model : optional
        The model (anything :func:`msviz.models.load` takes); None: the Session's, else the
        catalogue model the work dir's environment names.
    target : str | Target, optional
        What to build for: one of the records' targets (in a work dir that holds several);
        None: the Session's target, else the target of the records.

    Returns
    -------
    TunedModel

    Raises
    ------
    msviz.WorkDirError
        ``source`` is missing or not a work dir.
    msviz.TargetError
        ``target`` is not a target of the records (their schedules were tuned for another).
    msviz.MsvizError
        A work dir with no record, one tuned for a single PrimFunc, one whose records are of
        no task of the model, or no model given or named; one whose database files stock
        MetaSchedule cannot load (a torn, corrupt or blank line) or that holds a record that
        cannot be true (``msviz.open``'s ``"impossible"``): ``msviz merge`` writes a copy
        without them.
    """
    primfunc = False
    if isinstance(source, Session):
        work_dir, entries = Path(source.work_dir), read_sidecar(source.work_dir).other
        primfunc = source.model is None
        model = source.model if model is None and not primfunc else model
        target = source.config.target if target is None else target
    elif isinstance(source, Run):
        work_dir, entries = Path(source.work_dir), source.sidecar_entries
    elif isinstance(source, (str, Path)):
        work_dir = Path(source)
        check_work_dir(work_dir, "pass the work dir of a tuned model (msviz.build(work_dir))")
        entries = read_sidecar(work_dir).other
    else:
        raise TypeError(f"msviz.build takes a work dir, a Session or a Run, got "
                        f"{type(source).__name__}")
    model, target, tasks = tuned_model_of(work_dir, entries, model, target, primfunc=primfunc)
    exe, fallback = requests.build_tuned_model(model, tasks, work_dir, target)
    return TunedModel(model, exe, target, work_dir, [t.name for t in tasks], fallback)


def tuned_model_of(work_dir: Path, entries: list, model: Any, target: Any, *,
                   primfunc: bool = False, doing: tuple[str, str] = ("build", "built")
                   ) -> tuple[Any, Any, list]:
    """The model a work dir tuned, on the graph it was tuned on, the target to build it for and
    its tasks, each checked (``msviz.build``'s and ``msviz.vs_runtimes``' front half): not a
    PrimFunc's work dir, records stock MetaSchedule can build with and none that cannot be true
    (:func:`~msviz.workflows.compare_models.check_records`), a target of the records, some
    record of a task of the model. ``doing``: the verb and its participle, for the refusals."""
    env = last_entry(entries, "environment")
    if primfunc or (env is not None and "model" in env and env["model"] is None):
        raise MsvizError(f"{work_dir} was tuned for one PrimFunc, not a model: use "
                         f"msviz.open({str(work_dir)!r}).best() for its best schedule")
    targets = check_records(work_dir, doing[0])
    model = model_of_run(work_dir, entries, model)
    target = _target_of(target, targets, work_dir)
    model = on_tuned_graph(model, work_dir, entries, target)
    tasks = check_holds_model([work_dir], {work_dir: model_named(work_dir)}, model, target,
                              doing=doing, advice="pass model= for the model it was tuned for",
                              records_checked=True)
    return model, target, tasks


def _target_of(target: Any, held: set[str], work_dir: Path) -> Any:
    """The target to build for: the one given (one of the records' targets), else the one
    target of the records."""
    texts = {target_text(t): t for t in held}
    if target is not None:
        given = record_target(target)
        if not any(same_target(given, record_target(t)) for t in texts.values()):
            raise TargetError(
                f"{work_dir} holds records of {', '.join(sorted(texts))}, not of the target "
                f"given ({given}): their schedules were tuned and timed for another target. "
                "Leave target= out to build for the records' target, or tune for this one")
        return given
    if len(texts) > 1:
        raise MsvizError(f"{work_dir} holds records of {len(texts)} targets ("
                         f"{', '.join(sorted(texts))}): pass target= to say which to build for")
    return record_target(next(iter(texts.values())))


class TunedModel:
    """A model built with a work dir's best records, ready to run, time and export.

    Parameters
    ----------
    model : msviz.models.Model
        What was built.
    exe : Executable
        The build (:meth:`Model.compile`).
    target : Target
        What it was built for.
    work_dir : Path
        Whose records it was built with.
    tasks : list of str
        The model's tasks.
    fallback : list of str
        Its tasks with no successful record: they run their untuned schedule.
    """

    def __init__(self, model: Any, exe: Any, target: Any, work_dir: Path, tasks: list[str],
                 fallback: list[str]) -> None:
        self.model, self.exe, self.target = model, exe, target
        self.work_dir, self.tasks, self.fallback = Path(work_dir), list(tasks), list(fallback)
        self._vm: Any = None
        self._untuned: Any = None

    @property
    def name(self) -> str:
        return str(self.model.name)

    @property
    def graph(self) -> str:
        return str(self.model.graph)

    @property
    def inputs(self) -> list[tuple[str, tuple[int, ...], str]]:
        """``(name, shape, dtype)`` of each input, in call order."""
        return list(self.model.inputs)

    def __repr__(self) -> str:
        tuned = len(self.tasks) - len(self.fallback)
        return (f"TunedModel({self.name!r}, graph={self.graph!r}, tasks tuned {tuned} of "
                f"{len(self.tasks)}, fallback: {', '.join(self.fallback) or 'none'}, "
                f"target={str(self.target)!r}, work_dir={str(self.work_dir)!r})")

    def __call__(self, *arrays: Any) -> Any:
        """Run the model on NumPy inputs (in :attr:`inputs` order): its output, a tuple for
        several."""
        checked = self._checked_inputs(arrays)
        self._vm, outs = requests.run_model_build(self.exe, self._vm, self.model.func_name,
                                                  checked, self.target)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _checked_inputs(self, arrays: Sequence[Any]) -> list[np.ndarray]:
        spec = ", ".join(f"{n}: {s} {d}" for n, s, d in self.inputs)
        if len(arrays) != len(self.inputs):
            raise TypeError(f"model {self.name!r} takes {len(self.inputs)} input(s) ({spec}), "
                            f"got {len(arrays)}")
        out = []
        for (name, shape, dtype), value in zip(self.inputs, arrays):
            array = np.asarray(value)
            if array.shape != tuple(shape):
                raise ValueError(f"input {name!r} of model {self.name!r}: expected shape "
                                 f"{tuple(shape)} {dtype}, got shape {array.shape}")
            if array.dtype != np.dtype(dtype):
                raise ValueError(f"input {name!r} of model {self.name!r}: expected dtype "
                                 f"{dtype}, got {array.dtype} (cast it: .astype({dtype!r}))")
            out.append(np.ascontiguousarray(array))
        return out

    def time(self, *, rounds: int = DEFAULT_ROUNDS, draws: int = DEFAULT_DRAWS,
             number: int = 10, repeat: int = 3, min_repeat_ms: int = 30,
             seed: int = 0) -> PairedComparison:
        """Its latency in place, against the untuned build (``tvm.compile``, as the end-to-end
        check builds it), in paired rounds in ``draws`` fresh processes
        (:func:`msviz.engine.measure.requests.compare_model_builds`).

        Returns
        -------
        PairedComparison
            ``tuned / untuned`` per round, their median and range, each build's µs per round
            (``.frame()``); ``str()`` says it with its spread and the verdict.
        """
        settings = checked_settings(number, repeat, min_repeat_ms, caller="TunedModel.time")
        check_seed(seed)
        if self._untuned is None:
            self._untuned = requests.build_untuned_model(self.model, self.target)
        return requests.compare_model_builds(
            self._untuned, self.exe, self.model, self.target, ["untuned", "tuned"], seed=seed,
            rounds=rounds, draws=draws, **settings)

    def spec(self) -> dict[str, Any]:
        """What :meth:`export` writes to ``model.json``: how to call the library."""
        return {"model": self.name, "graph": self.graph, "library": LIBRARY_FILE,
                "entry": self.model.func_name,
                "inputs": [{"name": n, "shape": list(s), "dtype": d} for n, s, d in self.inputs],
                "target": str(self.target), "device": compat.device_type(self.target),
                "tvm": compat.tvm_version(), "work_dir": str(self.work_dir.resolve()),
                "tasks": self.tasks, "fallback": self.fallback,
                "weights": f"constants in {LIBRARY_FILE}"
                           + (" (prepacked)" if self.graph != "stock" else "")}

    def export(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Write ``model.so`` (code and weights), ``model.json`` (:meth:`spec`) and ``load.py``
        (runs it with TVM alone: ``tvm.runtime.load_module`` then ``relax.VirtualMachine``) to
        the directory ``path``, whole or not at all.

        Raises
        ------
        msviz.WriteError
            ``path`` exists and is not an empty directory (``overwrite=True`` replaces it);
            ``path`` is the work dir the model was built from, inside it, or holds it
            (replacing it would remove the records).
        TypeError
            ``path`` is not a path, or ``overwrite`` not True or False.
        """
        path = self._checked_output(path, overwrite)
        with output_dir(path, what="deployed model", empty_ok=True,
                        overwrite=bool(overwrite)) as tmp:
            requests.export_model_build(self.exe, tmp / LIBRARY_FILE)
            (tmp / SPEC_FILE).write_text(json.dumps(self.spec(), indent=1) + "\n")
            (tmp / LOADER_FILE).write_text(LOADER)
        return Path(path)

    def _checked_output(self, path: Any, overwrite: Any) -> Path:
        """``path`` as a Path, refused where it is not one, empty, or where writing it would
        write into (or replace) the work dir the model was built from."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"TunedModel.export writes to a directory path, got "
                            f"{type(path).__name__} {path!r}")
        if not isinstance(overwrite, (bool, np.bool_)):
            raise TypeError(f"overwrite must be True or False, got {type(overwrite).__name__} "
                            f"{overwrite!r}")
        if not str(path).strip():
            raise WriteError("cannot write the deployed model to '': name a new directory")
        out, records = Path(path).resolve(), self.work_dir.resolve()
        if out == records or records in out.parents or out in records.parents:
            where = ("is the work dir" if out == records else "is inside the work dir"
                     if records in out.parents else "holds the work dir")
            raise WriteError(f"cannot write the deployed model to {path}: it {where} {records} "
                             "whose records the model was built with (a deploy there would "
                             f"{'replace' if out in (records, *records.parents) else 'mix with'}"
                             " them): name a new directory outside it")
        return Path(path)


#: ``load.py``: the exported model run with TVM alone.
LOADER = '''"""Run this model with TVM alone (no msviz): ``python load.py`` runs it on random
inputs; ``from load import load, run`` gives ``run(vm, *arrays)``."""

import json
from pathlib import Path

import numpy as np
import tvm
from tvm import relax

HERE = Path(__file__).resolve().parent
SPEC = json.loads((HERE / "model.json").read_text())


def load():
    """The model's VM: ``tvm.runtime.load_module`` then ``relax.VirtualMachine``."""
    lib = tvm.runtime.load_module(str(HERE / SPEC["library"]))
    return relax.VirtualMachine(lib, tvm.device(SPEC["device"], 0))


def run(vm, *arrays):
    """The model on NumPy inputs (model.json's order): its output(s) as NumPy."""
    dev = tvm.device(SPEC["device"], 0)
    out = vm[SPEC["entry"]](*[tvm.runtime.tensor(np.ascontiguousarray(a), dev) for a in arrays])
    return out.numpy() if hasattr(out, "numpy") else tuple(o.numpy() for o in out)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(i["shape"]).astype(i["dtype"]) for i in SPEC["inputs"]]
    result = run(load(), *inputs)
    for r in result if isinstance(result, tuple) else [result]:
        print(r.shape, r.dtype)
'''
