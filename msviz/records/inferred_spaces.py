"""Design spaces of a stock work dir's trials, inferred from their traces.

msviz's engine records each trial's design space in its sidecar; ``tune_tir`` keeps no such
thing. For those trials, :func:`infer_design_spaces` generates the design spaces of each task
under the target's default rules (what ``tune_tir`` uses unless told otherwise) and finds the
space each trace was sampled from (:func:`msviz.trace.spaces.space_of`: the same instructions,
decisions aside). The trials table labels them ``design_space_inferred``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from msviz import compat
from msviz.space_generator.rules import RuleSet
from msviz.trace.spaces import space_key, space_of

__all__ = ["INFERRED_COLUMN", "infer_design_spaces", "space_keys"]

#: The trials column that says a trial's ``design_space`` was inferred, not recorded.
INFERRED_COLUMN = "design_space_inferred"


def space_keys(mod: Any, target: Any, rules: RuleSet | None = None) -> list[tuple[str, ...]]:
    """The :func:`~msviz.trace.spaces.space_key` of each design space of ``mod`` under
    ``rules`` (default: the target's default rules), in MetaSchedule's order."""
    target = compat.make_target(target)
    rules = rules or RuleSet.default(target)
    compat.register_tensor_intrins()  # before the TuneContext imports them, slowly
    context = compat.ms.TuneContext(mod=mod, target=target,
                                    space_generator=rules.space_generator(target), num_threads=1)
    return [space_key(sch.trace) for sch in context.generate_design_space()]


def infer_design_spaces(run: Any, rules: RuleSet | None = None) -> pd.Series:
    """Fill in ``run.trials["design_space"]`` where the records do not say it, and label it.

    Each task's design spaces are generated once, for the target of its first record; a trial
    sampled from none of them (other rules, a hand-written trace) stays without one. Adds the
    boolean column ``design_space_inferred`` (True where this filled the value in).

    Parameters
    ----------
    run : Run
        The records (a stock work dir, or one whose sidecar lacks some trials' spaces).
    rules : RuleSet, optional
        The rules the run was tuned with, when not the target's defaults.

    Returns
    -------
    design_space : pandas.Series
        ``run.trials["design_space"]`` after inference.
    """
    trials = run.trials
    known = trials["design_space"].notna()
    inferred = pd.Series(False, index=trials.index)
    values = trials["design_space"].astype("object").where(known, None)
    for workload, rows in trials[~known].groupby("workload").groups.items():
        first = run.trial(int(rows[0])).record
        target = first.target if first.target is not None else compat.make_target("llvm")
        keys = space_keys(run.workload_mod(int(workload)), target, rules)
        for index in rows:
            space = space_of(run.trial(int(index)).trace, keys)
            if space is not None:
                values[index], inferred[index] = space, True
    trials["design_space"] = pd.array(values.tolist(), dtype="Int64")
    trials[INFERRED_COLUMN] = inferred
    return trials["design_space"]
