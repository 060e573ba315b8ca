"""A proposed restriction of a task's design space, as a schedule-rule edit, and its re-run.

From a task's trials, :func:`propose_restriction` computes the importance of each decision site
(PED-ANOVA, :mod:`msviz.views.importance`) over the trials of the best trial's design space, and
keeps, of what MetaSchedule's rules let a user restrict, only what the fastest trials (the top
``quantile``) used:

- ``MultiLevelTiling(max_innermost_factor=...)``: the largest innermost tile factor a winner
  chose, at the tile sites this rule made (those whose bound is the rule's);
- ``ParallelizeVectorizeUnroll(unroll_max_steps=[...])``: the unroll candidates winners chose
  (the losing options dropped);
- ``RandomComputeLocation`` removed when every winner left every block it samples at the root;
- ``MutateUnroll``'s probability set to 0 when one unroll option is left (MetaSchedule's
  mutator fails on a categorical with nothing else to pick).

Every winner's decisions stay in the restricted space. The result, a :class:`Restriction`,
says each change in words with its evidence, holds the edited :class:`RuleSet`, and re-runs the
task with it (:meth:`Restriction.rerun`: a new :class:`Session` on the same workload and target,
a fresh work dir, the same trial budget), to compare with ``msviz.compare(run, session)``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

from msviz import workloads
from msviz.engine.session import Session
from msviz.records import Run, open_work_dir
from msviz.space_generator import RuleSet
from msviz.trace import decision_sites
from msviz.trace.spaces import trial_decisions
from msviz.views.importance import QUANTILE, ImportanceInfo, importance_info, top_mask

__all__ = ["Restriction", "RuleChange", "propose_restriction", "rerun"]

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


#: A restriction proposed from fewer trials (of the best design space) than this says it is weak:
#: PED-ANOVA's winners are then a handful of trials, and chance decides what they share.
WEAK_BELOW = 32


class Restriction:
    """A proposed restriction of one task's space: the edited rules, what changed and why.

    Attributes
    ----------
    task : str
        The task.
    rules, base_rules : RuleSet
        The restricted rules and those they were edited from.
    changes : list of RuleChange
        The edits (empty when the winners used every option MetaSchedule's rules expose).
    importance : ImportanceInfo
        The decision sites' importance it was derived from.
    run : Run
        The records it was derived from.
    session : Session or None
        The last re-run (:meth:`rerun`).
    """

    def __init__(self, *, task: str, run: Run, workload: Any, target: Any, base_rules: RuleSet,
                 rules: RuleSet, changes: list[RuleChange], importance: ImportanceInfo,
                 trials: int, options: dict) -> None:
        self.task, self.run, self.workload, self.target = task, run, workload, target
        self.base_rules, self.rules, self.changes = base_rules, rules, changes
        self.importance, self.trials, self._options = importance, trials, options
        self.session: Session | None = None

    @property
    def weak(self) -> bool:
        """Whether it was proposed from fewer than :data:`WEAK_BELOW` trials."""
        return self.importance.trials < WEAK_BELOW

    @property
    def summary(self) -> str:
        """One line: what is restricted (or that nothing is), and whether that is weak."""
        caveat = (f" (weak: from only {self.importance.trials} trials; {WEAK_BELOW} or more "
                  "make it reliable)") if self.weak else ""
        if not self.changes:
            return (f"nothing to restrict in {self.task}: its fastest trials used every option "
                    "the rules expose" + caveat)
        return f"restrict {self.task}: " + "; ".join(
            f"remove {c.rule}" if not c.param else f"{c.rule}.{c.param} {c.old!r} -> {c.new!r}"
            for c in self.changes) + caveat

    def __str__(self) -> str:
        info = self.importance
        lines = [f"Proposed restriction of task {self.task} ({info.method} over {info.trials} "
                 f"trials of its best design space; winners: the fastest {info.top}, up to "
                 f"{info.cutoff_us:.4g} µs)"]
        if self.weak:
            lines[0] += (f"; weak: only {info.trials} trials, {WEAK_BELOW} or more make it "
                         "reliable")
        lines += [f"  - {c}" for c in self.changes] or [f"  {self.summary}"]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Restriction({self.summary!r})"

    def rerun(self, *, max_trials: int | None = None, work_dir: str | Path | None = None,
              seed: int | None = None, start: bool = True, **options: Any) -> Session:
        """Tune the task again with the restricted rules (see :func:`rerun`); the session is
        also kept as :attr:`session`."""
        merged = {**self._options, **options}
        if seed is not None:
            merged["seed"] = seed
        self.session = _new_session(self.workload, self.target, self.rules,
                                    max_trials=max_trials or self.trials, work_dir=work_dir,
                                    start=start, **merged)
        return self.session


def _source(source: Any) -> tuple[Run, RuleSet | None, Any, dict]:
    """(records, the rules they were tuned with if known, target if known, session options)."""
    if isinstance(source, (str, Path)):
        return open_work_dir(source), None, None, {}
    if isinstance(source, Run):
        return source, None, None, {}
    if isinstance(source, Session):
        options = {k: v for k, v in source._measurer_options.items() if k != "max_workers"}
        options.update(vars(source.knobs), preset=source.preset, strategy=source.strategy,
                       trials_per_batch=source.trials_per_batch, seed=source.seed)
        return source.open(), source.rules, source.target, options
    raise TypeError(f"a {type(source).__name__} has no trials to restrict: pass a work dir, a "
                    "Run or a Session")


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


def propose_restriction(source: Any, task: str | None = None, *, rules: RuleSet | None = None,
                        quantile: float = QUANTILE,
                        read_at_most: int | None = READ_AT_MOST) -> Restriction:
    """Propose a restriction of a task's design space from what its fastest trials decided.

    Parameters
    ----------
    source : Run | Session | str | Path
        The trials (a work dir, a Run, or a Session: then its rules and options too).
    task : str, optional
        Which task (may be left out when there is one).
    rules : RuleSet, optional
        The rules the task was tuned with (default: the session's, else the target's
        defaults, ``RuleSet.default(target)``).
    quantile : float
        Share of the fastest trials that count as winners (at least 2 trials).
    read_at_most : int, optional
        Traces read at most (None: every trial of the task), spread evenly over the latency
        ranking (:func:`trial_decisions`'s ``sample``): the button's click stays seconds on a
        20,000-trial run.

    Returns
    -------
    restriction : Restriction

    Raises
    ------
    ValueError
        When the task has no successful trial (or the run has several tasks and none is named).
    """
    run, session_rules, target, options = _source(source)
    best = run.best(task)
    task = best.task
    record = best.record
    target = target if target is not None else record.target
    base = (rules or session_rules or RuleSet.default(target)).copy()
    frame = trial_decisions(run, limit=None, task=task, space="best", sample=read_at_most)
    sites = {f"#{s.index} {s.kind}": s for s in decision_sites(best)}
    choices = {k: _choice_texts(s) for k, s in sites.items() if s.editable}
    info = importance_info(frame, task=task, choices=choices, quantile=quantile)
    winners = frame[top_mask(frame["latency_us"].to_numpy(dtype=float), quantile)]
    winners = {k: [str(v) for v in winners[k]] for k in sites if k in winners.columns}
    sites = {k: s for k, s in sites.items() if k in winners}
    changes = _propose(base, sites, winners, info)
    restricted = base.copy()
    for change in changes:
        if change.param == "probability":  # a mutator's
            restricted.mutator_probs[change.rule] = change.new
        elif change.param:
            restricted.set(change.rule, **{change.param: change.new})
        else:
            restricted.remove(change.rule)
    workload, trials = _task_workload(run, task)
    return Restriction(task=task, run=run, workload=workload, target=target, base_rules=base,
                       rules=restricted, changes=changes, importance=info, trials=trials,
                       options=options)


def _task_workload(run: Run, task: str) -> tuple[Any, int]:
    """A task's workload (named after the task) and how many trials the run spent on it."""
    mine = run.trials[run.trials["task"] == task]
    return workloads.resolve(run.workload_mod(int(mine["workload"].iloc[0])), name=task), len(mine)


def _new_session(workload: Any, target: Any, rules: RuleSet, *, max_trials: int,
                 work_dir: str | Path | None, start: bool, **options: Any) -> Session:
    work_dir = Path(work_dir) if work_dir is not None else Path(
        tempfile.mkdtemp(prefix="msviz-rerun-")) / "wd"
    session = Session(workload, target=target, rules=rules, work_dir=work_dir,
                      max_trials=max_trials, **options)
    if start:
        session.start()
    return session


def rerun(source: Any, rules: RuleSet, *, task: str | None = None, max_trials: int | None = None,
          work_dir: str | Path | None = None, start: bool = True, **options: Any) -> Session:
    """Tune a task of a run again with other rules, in the background.

    Parameters
    ----------
    source : Run | Session | str | Path
        The first run (a Session's options, knobs and seed are reused).
    rules : RuleSet
        The rules of the new run.
    task : str, optional
        Which task (may be left out when there is one).
    max_trials : int, optional
        The new run's budget (default: the trials the first run spent on the task).
    work_dir : str | Path, optional
        Where the new run's records go (default: a new temp dir).
    start : bool
        Start tuning now (the call returns at once; ``session.wait()`` waits).
    **options
        More :class:`Session` options (``seed``, ``trials_per_batch``, knobs...).

    Returns
    -------
    session : Session
        On the same workload and target.
    """
    run, _, target, base_options = _source(source)
    best = run.best(task)
    workload, trials = _task_workload(run, best.task)
    return _new_session(workload, target if target is not None else best.record.target, rules,
                        max_trials=max_trials or trials, work_dir=work_dir, start=start,
                        **{**base_options, **options})
