"""Design spaces and trial decisions as plain data, read from TVM below the views.

:class:`DesignSpace` is a generated space as data (:mod:`msviz.space_generator` makes them);
:func:`trial_decisions` reads the decisions of a run's fastest trials from their traces;
:func:`space_of` finds the design space a trace was sampled from. The views turn these into
infos without touching TVM.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

__all__ = [
    "DesignSpace", "space_key", "space_of", "trial_decisions",
]

_DECISION = re.compile(r",? ?decision=.*\)$")
_PARALLEL = re.compile(r'(ann_key="meta_schedule\.parallel", ann_val=)\d+')


class DesignSpace(NamedTuple):
    """One design space the rules produced, as plain data."""

    index: int
    trace: tuple[str, ...]  # its trace as Python lines (postprocs removed)
    sites: tuple[tuple[int, str, int], ...]  # (instruction index, kind, valid choice count)
    script: str  # its IRModule (with the space's sampled decisions) as TVMScript


def space_key(trace: Any) -> tuple[str, ...]:
    """What a trace keeps of the design space it was sampled from.

    Its instructions (postprocs and unused pure ones removed, as records store them) as Python
    lines without their decisions, and without the extent of ``meta_schedule.parallel``, which
    the mutator ``MutateParallel`` rewrites. Every other mutator only changes decisions.
    """
    lines = trace.simplified(remove_postproc=True).as_python(remove_postproc=True)
    return tuple(_PARALLEL.sub(r"\1_", _DECISION.sub(")", line)) for line in lines)


def space_of(trace: Any, keys: Sequence[tuple[str, ...]]) -> int | None:
    """Index of the design space whose :func:`space_key` is in ``keys`` that ``trace`` was
    sampled from (then mutated), or None if it is from none of them (other rules)."""
    key = space_key(trace)
    return next((k for k, space in enumerate(keys) if space == key), None)


def _categorical_value(inst: Any, decision: Any) -> Any:
    """A categorical decision as the candidate it picks (its index says little); else as is."""
    if inst.kind.name != "SampleCategorical" or not isinstance(decision, int):
        return decision
    candidates = inst.attrs[0]
    if 0 <= decision < len(candidates):
        value = candidates[decision]
        return getattr(value, "value", value)
    return decision


def trial_decisions(run: Any, *, limit: int | None = 300, task: str | None = None,
                    space: str = "common", sample: int | None = None) -> pd.DataFrame:
    """One row per successful trial (the ``limit`` fastest) of one design space: ``trial``,
    ``latency_us`` and its decision at each site (as text; a categorical decision as the
    candidate it picks), read from the traces.

    Parameters
    ----------
    run : Run
        The records.
    limit : int, optional
        Most trials to read (None: all).
    task : str, optional
        Only this task's trials (None: every trial).
    space : {"common", "best"}
        Which design space (trials with the same decision sites): the one most trials were
        sampled from, or the one of the fastest trial.
    sample : int, optional
        Read at most this many of those trials, spread evenly over their latency ranking (the
        fastest always among them), so the read stays bounded on long runs (a trace takes a
        few ms to parse: 20,000 of them a minute) and the latency quantiles keep their shares.
    """
    if space not in ("common", "best"):
        raise ValueError(f"space must be 'common' or 'best', not {space!r}")
    trials = run.trials
    if task is not None:
        trials = trials[trials["task"] == task]
    ok = trials[trials["status"] == "ok"]
    ok = ok.nsmallest(limit if limit is not None else len(ok), "latency_us")
    if sample is not None and len(ok) > sample:
        ok = ok.iloc[np.unique(np.linspace(0, len(ok) - 1, max(1, sample)).round().astype(int))]
    rows, shapes = [], {}
    for index in ok.index:
        trace = run.trial(int(index)).trace
        insts = list(trace.insts)
        decs = {}
        for inst, value in trace.decisions.items():
            k = insts.index(inst)
            v = [int(x) for x in value] if hasattr(value, "__len__") else int(value)
            decs[f"#{k} {inst.kind.name}"] = str(_categorical_value(inst, v))
        key = tuple(sorted(decs))
        shapes[key] = shapes.get(key, 0) + 1
        rows.append((key, {"trial": int(trials.at[index, "trial"]),
                           "latency_us": float(trials.at[index, "latency_us"]), **decs}))
    if not rows:
        return pd.DataFrame({"trial": [], "latency_us": []})
    chosen = rows[0][0] if space == "best" else max(shapes, key=shapes.get)
    return pd.DataFrame([r for k, r in rows if k == chosen])
