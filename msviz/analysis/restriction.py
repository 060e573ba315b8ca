"""A proposed restriction of a task's design space, as schedule-rule edits, computed from its
trials.

:func:`propose_changes` computes the importance of each decision site (PED-ANOVA,
:mod:`msviz.analysis.importance`) over the trials of the best trial's design space, and keeps,
of what MetaSchedule's rules let a user restrict, only what the fastest trials (the top
``quantile``) used:

- ``MultiLevelTiling(max_innermost_factor=...)``: the largest innermost tile factor a winner
  chose, at the tile sites this rule made (those whose bound is the rule's);
- ``ParallelizeVectorizeUnroll(unroll_max_steps=[...])``: the unroll candidates winners chose
  (the losing options dropped);
- ``RandomComputeLocation`` removed when every winner left every block it samples at the root;
- ``MutateUnroll``'s probability set to 0 when one unroll option is left (MetaSchedule's
  mutator fails on a categorical with nothing else to pick).

Every winner's decisions stay in the restricted space. The re-run with the edited rules (a new
session) is the engine's: :mod:`msviz.workflows.rerun`.

The same concept one room up: :mod:`msviz.workflows.rerun` re-runs with them.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from msviz.analysis.importance import QUANTILE, ImportanceInfo, importance_info, top_mask
from msviz.records import Run, Trial
from msviz.space_generator import RuleSet
from msviz.trace import decision_sites
from msviz.trace.spaces import trial_decisions

__all__ = ["READ_AT_MOST", "Proposal", "RuleChange", "apply_changes", "propose_changes",
           "task_proposals"]

#: Traces a proposal reads at most (a trace parses in a few ms: 2,000 in seconds).
READ_AT_MOST = 2000


class RuleChange(NamedTuple):
    """One edit of a rule: ``rule.param`` from ``old`` to ``new`` (``param`` is ``""`` and
    ``new`` None when the rule is removed), and why."""

    rule: str
    param: str
    old: Any
    new: Any
    why: str

    def __str__(self) -> str:
        if not self.param:
            return f"remove {self.rule}: {self.why}"
        return f"{self.rule}.{self.param}: {self.old!r} -> {self.new!r}: {self.why}"


class Proposal(NamedTuple):
    """What :func:`propose_changes` found for one task."""

    task: str
    best: Trial  # the task's best trial (its design space is the one read)
    base_rules: RuleSet  # the rules the edits start from
    rules: RuleSet  # the edited rules
    changes: list[RuleChange]
    importance: ImportanceInfo


def _choice_texts(site: Any) -> list[str]:
    """A site's valid decisions written as :func:`trial_decisions` writes them."""
    if site.kind == "SamplePerfectTile":
        return [str(list(c)) for c in site.choices]
    if site.kind == "SampleCategorical" and site.candidates is not None:
        return [str(c) for c in site.candidates]
    return [str(c) for c in site.choices]


def _share(info: ImportanceInfo, labels: list[str]) -> float:
    return sum(s.importance for s in info.sites if s.site in labels)


def _propose(rules: RuleSet, sites: dict, winners: dict, info: ImportanceInfo
             ) -> list[RuleChange]:
    """The rule edits that keep every winner's decisions (see the module text)."""
    changes = []
    specs = {s.name: s for s in rules.schedule_rules if s.params or s.obj is None}
    n_top = f"the {info.top} fastest trials"
    mlt = specs.get("MultiLevelTiling")
    if mlt is not None and isinstance(mlt.params.get("max_innermost_factor"), int):
        bound = mlt.params["max_innermost_factor"]
        tiles = [k for k, s in sites.items()
                 if s.kind == "SamplePerfectTile" and s.max_innermost_factor == bound]
        inner = sorted({json.loads(v)[-1] for k in tiles for v in winners[k]})
        if inner and max(inner) < bound:
            changes.append(RuleChange(
                "MultiLevelTiling", "max_innermost_factor", bound, int(max(inner)),
                f"{n_top} chose innermost tile factors {inner} at its {len(tiles)} tile sites "
                f"(importance {_share(info, tiles):.2f} of the total)"))
    pvu = specs.get("ParallelizeVectorizeUnroll")
    steps = pvu.params.get("unroll_max_steps") if pvu is not None else None
    if steps:
        unrolls = [k for k, s in sites.items() if s.kind == "SampleCategorical"
                   and s.candidates is not None and list(s.candidates) == list(steps)]
        kept = sorted({int(v) for k in unrolls for v in winners[k]})
        if kept and len(kept) < len(set(steps)):
            changes.append(RuleChange(
                "ParallelizeVectorizeUnroll", "unroll_max_steps", list(steps), kept,
                f"{n_top} unrolled by {kept} only, never "
                f"{sorted(set(steps) - set(kept))} (importance {_share(info, unrolls):.2f})"))
            if len(kept) == 1 and rules.mutator_probs.get("MutateUnroll"):
                # MetaSchedule's MutateUnroll picks another candidate than the current one and
                # fails the search (``!weights.empty()``) when there is none
                changes.append(RuleChange(
                    "MutateUnroll", "probability", rules.mutator_probs["MutateUnroll"], 0.0,
                    "one unroll option is left: nothing for the mutator to change"))
    if "RandomComputeLocation" in {s.name for s in rules.schedule_rules}:
        places = [k for k, s in sites.items() if s.kind == "SampleComputeLocation"]
        if places and all(v == "-1" for k in places for v in winners[k]):
            changes.append(RuleChange(
                "RandomComputeLocation", "", None, None,
                f"{n_top} computed the {len(places)} block(s) it places at the root "
                f"(importance {_share(info, places):.2f})"))
    return changes


def apply_changes(rules: RuleSet, changes: list[RuleChange]) -> RuleSet:
    """A copy of ``rules`` with ``changes`` made."""
    restricted = rules.copy()
    for change in changes:
        if change.param == "probability":  # a mutator's
            restricted.mutator_probs[change.rule] = change.new
        elif change.param:
            restricted.set(change.rule, **{change.param: change.new})
        else:
            restricted.remove(change.rule)
    return restricted


def propose_changes(run: Run, task: str | None = None, *, rules: RuleSet | None = None,
                    target: Any = None, quantile: float = QUANTILE,
                    read_at_most: int | None = READ_AT_MOST) -> Proposal:
    """The rule edits that keep only what a task's fastest trials decided.

    Parameters
    ----------
    run : Run
        The trials.
    task : str, optional
        Which task (may be left out when there is one).
    rules : RuleSet, optional
        The rules the task was tuned with (default: ``RuleSet.default(target)``).
    target : optional
        The target (default: the best record's).
    quantile : float
        Share of the fastest trials that count as winners (at least 5 trials).
    read_at_most : int, optional
        Traces read at most (None: every trial of the task), spread evenly over the latency
        ranking (:func:`trial_decisions`'s ``sample``).

    Returns
    -------
    proposal : Proposal

    Raises
    ------
    ValueError
        When the task has no successful trial (or the run has several tasks and none is named).
    """
    best = run.best(task)
    target = target if target is not None else best.record.target
    base = (rules or RuleSet.default(target)).copy()
    frame = trial_decisions(run, limit=None, task=best.task, space="best", sample=read_at_most)
    sites = {f"#{s.index} {s.kind}": s for s in decision_sites(best)}
    choices = {k: _choice_texts(s) for k, s in sites.items() if s.editable}
    info = importance_info(frame, task=best.task, choices=choices, quantile=quantile)
    winners = frame[top_mask(frame["latency_us"].to_numpy(dtype=float), quantile)]
    winners = {k: [str(v) for v in winners[k]] for k in sites if k in winners.columns}
    sites = {k: s for k, s in sites.items() if k in winners}
    changes = _propose(base, sites, winners, info)
    return Proposal(best.task, best, base, apply_changes(base, changes), changes, info)


#: Tasks :func:`task_proposals` reads (those that cost the model most) and traces per task: a
#: report or ``msviz show`` of a 28-task, 20,000-trial run stays seconds.
REPORT_TASKS = 5
REPORT_READ_AT_MOST = 300


def task_proposals(run: Run, *, tasks: int = REPORT_TASKS,
                   read_at_most: int = REPORT_READ_AT_MOST) -> list[Proposal]:
    """:func:`propose_changes` for the tasks that cost most (weight x best latency), each from
    at most ``read_at_most`` traces, with the target's default rules; tasks with no successful
    trial are left out.

    Parameters
    ----------
    run : Run
        The trials.
    tasks : int
        How many tasks, the costliest first.
    read_at_most : int
        Traces read per task (spread over the latency ranking).
    """
    table = run.tasks.dropna(subset=["best_latency_us"])
    ranked = table.sort_values("weighted_latency_us", ascending=False, kind="stable")
    return [propose_changes(run, str(name), read_at_most=read_at_most)
            for name in ranked["task"].head(tasks)]
