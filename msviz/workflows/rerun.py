"""A proposed restriction of a task's design space, as a schedule-rule edit, and its re-run.

:func:`propose_restriction` reads a task's trials (a work dir, a Run or a Session, whose rules
and options it keeps) and asks :func:`msviz.analysis.restriction.propose_changes` for the rule
edits that keep only what the fastest trials decided (PED-ANOVA importance of each decision
site, :mod:`msviz.analysis.importance`). The result, a :class:`Restriction`, says each change in
words with its evidence, holds the edited :class:`RuleSet`, and re-runs the task with it
(:meth:`Restriction.rerun`: a new :class:`Session` on the same workload and target, a fresh work
dir, the same trial budget), to compare with ``msviz.compare(run, session)``.

The same concept one room down: :mod:`msviz.analysis.restriction` computes the edits.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from msviz import workloads
from msviz.analysis.importance import QUANTILE, ImportanceInfo
from msviz.analysis.restriction import READ_AT_MOST, RuleChange, propose_changes
from msviz.engine.config import SessionConfig
from msviz.engine.session import Session
from msviz.records import Run, open_work_dir
from msviz.records import database as db_files
from msviz.space_generator import RuleSet

__all__ = ["Restriction", "RuleChange", "propose_restriction", "rerun"]


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
                 trials: int, config: SessionConfig | None = None) -> None:
        self.task, self.run, self.workload, self.target = task, run, workload, target
        self.base_rules, self.rules, self.changes = base_rules, rules, changes
        self.importance, self.trials = importance, trials
        #: The settings of the session it was proposed from (None: a work dir or a Run).
        self.config = config
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
        if seed is not None:
            options["seed"] = seed
        self.session = _new_session(self.workload, self.target, self.rules, self.config,
                                    max_trials=max_trials or self.trials, work_dir=work_dir,
                                    start=start, **options)
        return self.session


def _source(source: Any) -> tuple[Run, RuleSet | None, SessionConfig | None]:
    """(records, the rules they were tuned with if known, the session's config if known)."""
    if isinstance(source, (str, Path)):
        return open_work_dir(source), None, None
    if isinstance(source, Run):
        return source, None, None
    if isinstance(source, Session):
        records = source.work_dir / db_files.RECORD_FILE
        if not records.is_file() or records.stat().st_size == 0:
            how = ("start it (session.start()) and" if source.state == "idle" else
                   "let it run")
            raise ValueError(f"the session has no trials yet (state {source.state}): {how} "
                             "wait for a batch or more (session.wait()) before proposing a "
                             "restriction")
        return source.open(), source.rules, source.config
    raise TypeError(f"a {type(source).__name__} has no trials to restrict: pass a work dir, a "
                    "Run or a Session")


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
        Share of the fastest trials that count as winners (at least 5 trials).
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
        When the task has no successful trial (or the run has several tasks and none is named),
        or a session has no trials yet (before :meth:`Session.start`).
    """
    run, session_rules, config = _source(source)
    target = config.target if config is not None else None
    found = propose_changes(run, task, rules=rules or session_rules, target=target,
                            quantile=quantile, read_at_most=read_at_most)
    workload, trials = _task_workload(run, found.task)
    return Restriction(task=found.task, run=run, workload=workload,
                       target=target if target is not None else found.best.record.target,
                       base_rules=found.base_rules, rules=found.rules, changes=found.changes,
                       importance=found.importance, trials=trials, config=config)


def _task_workload(run: Run, task: str) -> tuple[Any, int]:
    """A task's workload (named after the task) and how many trials the run spent on it."""
    mine = run.trials[run.trials["task"] == task]
    return workloads.resolve(run.workload_mod(int(mine["workload"].iloc[0])), name=task), len(mine)


def _new_session(workload: Any, target: Any, rules: RuleSet, config: SessionConfig | None, *,
                 max_trials: int, work_dir: str | Path | None, start: bool,
                 **options: Any) -> Session:
    """A session of one task: derived from the first session's config (its strategy, knobs,
    seed, check, builder and runner; a fresh start of its own budget, the new rules) with
    ``options`` changed, or made from ``options`` alone."""
    work_dir = Path(work_dir) if work_dir is not None else Path(
        tempfile.mkdtemp(prefix="msviz-rerun-")) / "wd"
    if config is None:
        session = Session(workload, target=target, rules=rules, work_dir=work_dir,
                          max_trials=max_trials, **options)
    else:
        config = dataclasses.replace(
            config, rules=rules, max_trials=max_trials, resume=False, max_trials_per_task=None,
            task_scheduler="forecast").updated(**options)
        session = Session.from_config(workload, config, work_dir=work_dir)
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
    run, _, config = _source(source)
    best = run.best(task)
    workload, trials = _task_workload(run, best.task)
    return _new_session(workload, best.record.target if config is None else config.target,
                        rules, config, max_trials=max_trials or trials, work_dir=work_dir,
                        start=start, **options)
