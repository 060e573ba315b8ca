"""A tuned model built to deploy: built with a work dir's database (:meth:`Model.compile`), run
in this process, exported as one shared library. The measuring service holds its lock around
each (:mod:`msviz.engine.measure.requests`); ``msviz.build`` is the user's door
(:mod:`msviz.workflows.deploy`), ``msviz build`` the terminal's (:mod:`msviz.cli.deploy`)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from msviz import compat
from msviz.bench.draws import without_scope_warnings
from msviz.bench.model_check import fallback_tasks, flatten_outputs

__all__ = ["build_tuned", "build_untuned", "export_build", "run_build", "vm_of"]


def build_tuned(model: Any, tasks: list, work_dir: str | Path, target: Any, *,
                database: Any = None) -> tuple[Any, list[str]]:
    """``model`` built with the work dir's best records (``database``: the database of them
    to build with; None: its ``JSONDatabase``), and the names of its tasks that have no
    successful record there (they run their untuned schedule)."""
    if database is None:
        database = compat.JSONDatabase(work_dir=str(work_dir))
    return model.compile(database, target), fallback_tasks(database, tasks)


def build_untuned(model: Any, target: Any) -> Any:
    """``model`` built by ``tvm.compile`` with no database: the end-to-end check's untuned
    build."""
    with target:
        return compat.tvm_compile(model.mod, target=target)


def vm_of(exe: Any, target: Any) -> Any:
    """A Relax VM of a build on device 0 of the target's kind."""
    return compat.relax.VirtualMachine(exe, compat.tvm_device(compat.device_type(target), 0))


def run_build(vm: Any, func_name: str, arrays: Sequence[np.ndarray], target: Any
              ) -> list[np.ndarray]:
    """``vm[func_name](*arrays)``, its outputs as NumPy arrays (a tuple's flattened)."""
    dev = compat.tvm_device(compat.device_type(target), 0)
    return flatten_outputs(vm[func_name](*[compat.tensor(x, dev) for x in arrays]))


def export_build(exe: Any, path: str | Path) -> None:
    """``exe.export_library(path)``, TVM's per-scope log lines kept off stderr."""
    with tempfile.TemporaryDirectory(prefix="msviz-export-") as tmp, \
            without_scope_warnings(Path(tmp) / "export.err"):
        exe.export_library(str(path))
