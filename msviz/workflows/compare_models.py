"""Two work dirs of one model (msviz's, MetaSchedule's) compared whole, in paired rounds
(:mod:`msviz.bench.paired`): ``msviz.compare_models(a, b)``. Built and timed by the measuring
service (:func:`msviz.engine.measure.requests.compare_model_builds`, under its lock): never
beside a tuning batch of this process."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from msviz import compat, models
from msviz.engine.measure.requests import (
    DEFAULT_DRAWS,
    DEFAULT_ROUNDS,
    PairedComparison,
    compare_model_builds,
)
from msviz.records.model_profile import model_of_run
from msviz.records.sidecar import read_sidecar

__all__ = ["compare_models"]


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
    dirs = [x for x in (a, b) if isinstance(x, (str, Path))]
    if model is None:
        if not dirs:
            raise ValueError("pass model= to compare two builds of it")
        model = model_of_run(dirs[0], read_sidecar(Path(dirs[0])).other)
    else:
        model = models.load(model)
    target = compat.make_target(target)
    labels = list(names) if names is not None else [
        Path(x).name if isinstance(x, (str, Path)) else key for x, key in ((a, "a"), (b, "b"))]
    if len(labels) != 2 or labels[0] == labels[1]:
        labels = [f"a:{labels[0]}", f"b:{labels[-1]}"]
    return compare_model_builds(a, b, model, target, labels, seed=seed, rounds=rounds,
                                draws=draws, number=number, repeat=repeat,
                                min_repeat_ms=min_repeat_ms)
