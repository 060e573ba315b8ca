"""A tuning session: MetaSchedule tuning in a worker thread, steerable from any thread.

:class:`Session` is a facade: its control (states, the command queue, checkpoints) is
:mod:`msviz.engine.control`, each task's tuning :mod:`msviz.engine.task_scheduler` (search and
measurement below it), and everything it does is an event (:mod:`msviz.engine.events`).
"""

from __future__ import annotations

import tempfile
import warnings
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from msviz.engine.arguments import (
    DEFAULT_MAX_TRIALS,
    TIME_ONLY_MAX_TRIALS,
    check_budget,
    check_resume,
    check_work_dir,
    check_writable,
    library_notes,
    tasks_of,
)
from msviz.engine.config import SessionConfig
from msviz.engine.control import (
    STATES,
    Control,
    LiveTrials,
    SessionStateError,
)
from msviz.engine.control.lock import check_unlocked
from msviz.engine.events import EventLog
from msviz.engine.profile import Profile
from msviz.engine.session_requests import SessionRequests
from msviz.engine.task_scheduler import kinds as scheduler_kinds
from msviz.engine.task_scheduler.task_loop import TaskLoop
from msviz.engine.worker import Worker
from msviz.errors import MsvizWarning
from msviz.space_generator.intrinsics import untensorized_int8
from msviz.space_generator.rules import RuleSet

__all__ = ["STATES", "Session", "SessionConfig", "SessionStateError"]


def _setting(name: str, doc: str) -> property:
    """A read-only session attribute that reads the session's config."""
    return property(lambda self: getattr(self.config, name), doc=doc)


class Session(SessionRequests):
    """Tune one workload with MetaSchedule in a background thread.

    Parameters
    ----------
    workload : str | PrimFunc | IRModule | Workload | Model
        One PrimFunc: a catalogue name (``"GMM-0"``), TVMScript, a PrimFunc or an IRModule
        with one PrimFunc. Or a model (every task of it is tuned in this session): a model of
        the catalogue (``"mlp"``, ``"resnet-block"``, ...; see :func:`msviz.models.catalogue`),
        an ``.onnx`` file, a Relax IRModule (``params=`` or ``(mod, params)``), an
        ``nn.Module`` (``spec=`` or ``(module, spec)``), or a :class:`msviz.models.Model`.
    target : str | dict | Target
        ``"llvm"`` (the host CPU, its cores) or ``"cuda"``, a tag, a dict or a Target.
    work_dir : str | Path, optional
        Where the stock JSON database, the sidecar and the logs go (a new temp dir if None).
    max_trials : int, optional
        Trials in total over all tasks, counting those the work dir already holds when
        resuming (None: 64, or no trial limit of its own when ``max_seconds`` is given:
        :data:`msviz.engine.arguments.TIME_ONLY_MAX_TRIALS`). Schedules the user edits and
        measures (:meth:`remeasure`) do not count. A candidate that could not be measured for
        infrastructure reasons (``error_kind="infra"``) is stored but does not count; 3 such
        batches in a row fail the session with :class:`msviz.engine.InfrastructureError`.
    trials_per_batch : int
        Candidates measured per batch.
    max_trials_per_task : int, optional
        A model's per-task budget (as in ``tune_relax``; None: no limit of its own).
    max_seconds : float, optional
        A time budget: seconds of tuning (from :meth:`start`, paused time not counted; a
        resumed run counts its own seconds). Tuning ends at a batch boundary within it: a batch
        that would overrun it, by the task's measured search and per-trial costs, is cut to the
        trials that fit, or not started; the end reason says so (:attr:`end_reason`). With
        ``max_trials`` too, the first reached ends tuning.
    max_seconds_per_task : float, optional
        The same budget for each task of a model (the task ends when it is spent).
    task_scheduler : {"forecast", "gradient", "round-robin"} | TaskScheduler
        Which task gets the next batch: ``"forecast"`` (default; each task's learning curve
        against seconds, the largest expected gain per second, a reason in words: see
        docs/models.md), MetaSchedule's ``GradientBased`` (``alpha=0.2``, ``window_size=3``,
        the session's seed) or ``RoundRobin``.
    params, spec : optional
        A Relax model's weights, an ``nn.Module``'s input spec.
    end_to_end_check : bool
        For a model: compile it with the work dir's database when tuning ends, run it, compare
        with the untuned build and time both, the least of
        :data:`msviz.bench.draws.DEFAULT_DRAWS` fresh processes (the ``end_to_end`` event,
        :attr:`end_to_end`; :meth:`check_model`).
    strategy : {"evolutionary", "replay"}
        msviz's step-able port of ``EvolutionarySearch``, or MetaSchedule's ``ReplayTrace``.
    rules : RuleSet, optional
        Schedule rules, postprocs and mutator probabilities (the target's defaults if None).
    seed : int, optional
        Seed of the search (random if None).
    preset : {"msviz", "stock"}
        Knob defaults; ``"stock"`` reproduces MetaSchedule's exactly.
    resume : bool
        Continue what ``work_dir`` holds (required when it already holds records; the
        ``work_dir`` must exist).
    builder, runner : str | Builder | Runner
        ``"local"`` (default), ``"rpc"`` (runner), or MetaSchedule objects. The runner may
        also be :func:`msviz.rpc`'s spec (a tracker and key); over RPC the session waits for
        devices (state ``"waiting"``) before tuning and whenever no server holds the key.
    num_threads : int, optional
        Threads for the search and the cost model (default: the cores this process may use).
    builder_timeout, runner_timeout : float
        Seconds per candidate.
    evaluator_config : dict | EvaluatorConfig, optional
        How the runner times kernels (MetaSchedule's defaults if None).
    check : {"best", "measured", "none"}
        Which candidates' outputs are compared with the untuned workload's on seeded random
        inputs, after each batch's timings: every candidate that would become the best so far
        (default), every one that ran, or none. A wrong one gets the status ``wrong_result``
        and is never the best (see :mod:`msviz.bench.schedule`).
    library : str | Path | list | msviz.Library, optional
        A tuning library: other runs' work dirs, bundles and folders of them, read-only
        (:class:`msviz.Library`). Before the first trial each task's coverage by it is shown
        (the ``library_coverage`` event); an exact hit (same workload, same target) starts at
        the library's best, a task with the same anchor block or a sibling (same operator,
        another shape) measures the library's best schedules carried to it in its first batch,
        and the cost model starts trained on the library's records (see
        :mod:`msviz.engine.tuning.library_reuse`). Nothing is written into the library.
    reuse : {"improve", "skip"}
        What an exact library hit does: tune on from the library's best, or get no trials.
    graph : {"expert", "expert-nchw", "expert-exact", "stock"}, optional
        The graph a model is tuned on (default: the model's own, ``"expert"`` unless it was
        made otherwise): msviz's expert graph (batch norms folded into the convolutions,
        on CPU convolutions laid out NHWC, weights prepacked and exp/erf/tanh vectorized,
        epilogues fused; :mod:`msviz.models.graph_passes`), it in the model's own layout, it
        with libm's exp/erf/tanh, or stock MetaSchedule's, for comparisons.
    **knobs
        Search knobs overriding the preset: ``population_size``, ``init_measured_ratio``,
        ``init_min_unmeasured``, ``max_fail_count``, ``genetic_num_iters``,
        ``genetic_mutate_prob``, ``genetic_max_fail_count``, ``eps_greedy``,
        ``cost_model_warmup``, ``cost_model_task_warmup``, ``task_warmup_ranked``,
        ``sample_to_minimum_after``,
        ``skip_db_measured``, ``eps_greedy_at_least_one``. Unknown names raise TypeError.

    Attributes
    ----------
    config : SessionConfig
        Every setting above but the workload, the work dir, ``params`` and ``spec``, checked
        once and frozen; ``session.target``, ``session.seed``, ``session.knobs``... read it.
        ``dataclasses.replace(session.config, seed=2)`` and :meth:`from_config` make another
        session like it. :attr:`rules` are the rules now (:meth:`set_rules` changes them, not
        the config).
    """

    def __init__(self, workload: Any, *, target: Any = "llvm", work_dir: str | Path | None = None,
                 max_trials: int | None = None, trials_per_batch: int = 16,
                 strategy: str = "evolutionary", rules: RuleSet | None = None,
                 seed: int | None = None, preset: str = "msviz", resume: bool = False,
                 builder: Any = "local", runner: Any = "local", num_threads: int | None = None,
                 builder_timeout: float = 30.0, runner_timeout: float = 30.0,
                 evaluator_config: Any = None, max_trials_per_task: int | None = None,
                 task_scheduler: Any = "forecast", params: dict | None = None,
                 spec: dict | None = None, end_to_end_check: bool = True,
                 check: str = "best", max_seconds: float | None = None,
                 max_seconds_per_task: float | None = None, library: Any = None,
                 reuse: str = "improve", graph: str | None = None, **knobs: Any) -> None:
        if max_trials is None:
            max_trials = DEFAULT_MAX_TRIALS if max_seconds is None else TIME_ONLY_MAX_TRIALS
        config = SessionConfig(
            target=target, max_trials=max_trials, trials_per_batch=trials_per_batch,
            max_trials_per_task=max_trials_per_task, max_seconds=max_seconds,
            max_seconds_per_task=max_seconds_per_task, strategy=strategy, rules=rules, seed=seed,
            preset=preset, knobs=knobs, resume=resume, builder=builder, runner=runner,
            num_threads=num_threads, builder_timeout=builder_timeout,
            runner_timeout=runner_timeout, evaluator_config=evaluator_config,
            task_scheduler=task_scheduler, end_to_end_check=end_to_end_check, check=check,
            library=library, reuse=reuse, graph=graph)
        self._setup(workload, config, work_dir, params=params, spec=spec)

    @classmethod
    def from_config(cls, workload: Any, config: SessionConfig, *,
                    work_dir: str | Path | None = None, params: dict | None = None,
                    spec: dict | None = None) -> Session:
        """A session with the settings of ``config`` (e.g. another session's, changed with
        ``dataclasses.replace(session.config, seed=2)``).

        Parameters
        ----------
        workload : str | PrimFunc | IRModule | Workload | Model
            What to tune (see :class:`Session`).
        config : SessionConfig
            Every setting.
        work_dir : str | Path, optional
            Where the records go (a new temp dir if None).
        params, spec : optional
            A Relax model's weights, an ``nn.Module``'s input spec.
        """
        if not isinstance(config, SessionConfig):
            raise TypeError(f"config must be a SessionConfig, not {type(config).__name__}")
        session = cls.__new__(cls)
        session._setup(workload, config, work_dir, params=params, spec=spec)
        return session

    def _setup(self, workload: Any, config: SessionConfig, work_dir: str | Path | None, *,
               params: dict | None, spec: dict | None) -> None:
        check_work_dir(work_dir, config.resume)
        #: Every setting, as given (frozen; the rules are those it started with, see
        #: :attr:`rules`).
        self.config = config
        #: The model (None when tuning one PrimFunc) and its tasks (one for a PrimFunc).
        self.model, self.tasks = tasks_of(workload, config.target, params=params, spec=spec,
                                           graph=config.graph)
        self.workload = self.tasks[0].workload
        #: The model's (or the workload's) name: the task of session-level events.
        self.name = self.model.name if self.model is not None else self.workload.name
        self.work_dir = Path(work_dir) if work_dir is not None else Path(
            tempfile.mkdtemp(prefix="msviz-"))
        check_writable(self.work_dir)
        check_unlocked(self.work_dir)  # held from start(); a live holder is refused now
        if config.resume:
            check_resume(self.work_dir, self.tasks, config.target)
        self.events = EventLog()
        note = untensorized_int8([t.workload for t in self.tasks], config.target, config.rules)
        if note:  # an int8 workload the target cannot tensorize: say so now, not never
            warnings.warn(note, MsvizWarning, stacklevel=3)
            self.events.emit("warning", self.name, message=note)
        for note in library_notes(config.library, config.target):  # said here, not only in
            warnings.warn(f"library: {note}", MsvizWarning, stacklevel=3)  # the sidecar
        self._profile = Profile()
        self._loop = TaskLoop(
            self.tasks, scheduler_kinds.create(config.task_scheduler, seed=config.seed),
            config=config, tuners=lambda: self._worker.tuners, emit=self.events.emit,
            name=self.name, log_dir=self.work_dir / "logs" if self.model is not None else None,
            timeit=self._profile.timeit)
        self._control = Control(self.name, emit=self.events.emit,
                                trials=lambda: self.trials_done,
                                apply=lambda name, arg: self._worker.apply(name, arg),
                                timeit=self._profile.timeit)
        self._live = LiveTrials(self.work_dir, task=self.workload.name, flop=self.workload.flop,
                                tasks=self.tasks if self.model is not None else [],
                                tuners=lambda: self._worker.tuners, snapshot=self.events.snapshot,
                                warn=self._warn)
        self._worker = Worker(config, name=self.name, tasks=self.tasks, model=self.model,
                              work_dir=self.work_dir, events=self.events, profile=self._profile,
                              loop=self._loop, control=self._control, live=self._live)
        self.events.subscribe(self._live.feed)

    # -- settings (read-only: see config) ---------------------------------------------------------

    target = _setting("target", "The Target tuned for.")
    max_trials = _setting("max_trials", "Trials in total.")
    trials_per_batch = _setting("trials_per_batch", "Candidates measured per batch.")
    max_trials_per_task = _setting("max_trials_per_task",
                                   "Each task's budget at first (None: none of its own).")
    strategy = _setting("strategy", "The search strategy.")
    seed = _setting("seed", "The seed of the search.")
    preset = _setting("preset", "The knobs' preset.")
    knobs = _setting("knobs", "The search knobs (SearchKnobs).")
    check = _setting("check", "Which candidates' results are checked.")
    num_threads = _setting("num_threads", "Threads for the search and the cost model.")
    fleet = property(lambda self: self._worker.fleet,
                     doc="The tracker and key when measuring over RPC (an RPCSpec), else None.")
    end_to_end_check = property(
        lambda self: self.config.end_to_end_check and self.model is not None,
        doc="Whether the model is checked end to end when tuning ends (never for a PrimFunc).")
    rules = property(lambda self: self._worker.rules, doc=(
        "The rules of every task now: the config's at first, then those of :meth:`set_rules` "
        "(``session.config.rules`` stays the rules the session started with)."))
    end_to_end = property(
        lambda self: self._worker.end_to_end,
        doc="The last end-to-end check (the ``end_to_end`` event's data), or None.")
    model_profile_data = property(
        lambda self: self._worker.model_profile_data,
        doc="The model profile recorded after the last end-to-end check (its sidecar data).")

    # -- state ------------------------------------------------------------------------------------

    state = property(lambda self: self._control.state,
                     doc="One of idle, running, waiting, paused, stopping, finished, stopped, "
                         "failed.")
    end_reason = property(lambda self: self._control.end_reason, doc="Why tuning ended.")
    scheduler = property(lambda self: self._loop.scheduler,
                         doc="The task scheduler (see :meth:`set_scheduler`).")
    tuners = property(lambda self: list(self._worker.tuners), doc=(
        "Each task's :class:`~msviz.engine.tuning.tuner.Tuner`, set up when tuning "
        "starts (empty before): the engine's own parts, to inspect (search, history), never "
        "to drive."))
    profile_calls = property(lambda self: self._profile.calls, doc=(
        "Timer entries :attr:`profile` has taken so far (what profiling itself cost: see "
        "``benchmarks/profiles.py``)."))

    trials_done = property(lambda self: self._worker.trials_done, doc=(
        "Trials of all tasks in the work dir that count toward ``max_trials`` (committed ones; "
        "infrastructure failures are stored but do not count)."))
    best_secs = property(lambda self: self._worker.best_secs, doc=(
        "Mean run time of the fastest successful trial so far (inf if none); for a model, the "
        "estimated model latency: the sum of weight x best run time over the tasks (inf while "
        "a task has none)."))

    def task_index(self, task: Any = None) -> int:
        """The index of a task given by index or name (None: the only task of a PrimFunc)."""
        return self._loop.index_of(task)

    def task_table(self) -> list[dict]:
        """MetaSchedule's task table now, one dict per task: ``index``, ``name``, ``flop``,
        ``weight``, ``gflops``, ``latency_us``, ``weighted_latency_us`` (None while the task
        has no successful trial), ``trials``, ``done``. Latencies are medians of each trial's
        ``run_secs``, as the C++ prints them."""
        return self._loop.table()

    def tasks_info(self) -> list[dict]:
        """The ``tasks`` event's list: one dict per task."""
        return self._loop.info()

    def subscribe(self, callback: Any, *, replay: bool = False) -> Any:
        """Call ``callback(event)`` for every event (see :meth:`EventLog.subscribe`)."""
        return self.events.subscribe(callback, replay=replay)

    def _warn(self, message: str) -> None:
        self._worker.warn(message)

    # -- controls (see msviz.engine.control) ------------------------------------------------------

    def start(self) -> bool:
        """Start tuning in the worker thread; returns at once. False if already started."""
        return self._control.start(self._worker.work)

    def pause(self) -> bool:
        """Pause after the current stage. False if already paused or pausing."""
        return self._control.pause()

    def resume(self) -> bool:
        """Continue a paused session (or cancel a pause/step not reached yet)."""
        return self._control.resume()

    def step(self, kind: str = "batch") -> bool:
        """Run one measurement batch (``"batch"``) or one search stage (``"generation"``), then
        pause. From idle this starts the session."""
        return self._control.step(kind, self._worker.work)

    def stop(self) -> bool:
        """Finish cleanly after the current stage. False if already stopping or ended."""
        return self._control.stop()

    def wait(self, timeout: float | None = None) -> str:
        """Block until the session is paused or has ended (or ``timeout`` s); returns the state.
        Waiting for RPC devices counts as running (it ends by itself, or fails after the
        runner's ``wait_timeout``)."""
        return self._control.wait(timeout)

    def set_rules(self, rules: RuleSet, *, task: Any = None) -> Future:
        """Use new schedule rules / postprocs / mutator probabilities from the next stage on.

        The rules are checked now (:class:`RuleError` names the bad rule and parameter); the
        design spaces are regenerated by the worker; database and cost model are kept.
        ``task`` (an index or name) limits them to one task of a model (default: every task).
        """
        if not isinstance(rules, RuleSet):
            raise TypeError(f"rules must be a RuleSet, not {type(rules).__name__}")
        arg = (rules.copy().validate(), None if task is None else self.task_index(task))
        return self._control.command("set_rules", arg, now=lambda: self._worker.set_rules(*arg))

    def tune_next(self, task: Any) -> Future:
        """Give the next batch to ``task`` (an index or name), whatever the scheduler says."""
        return self._steer("tune_next", self.task_index(task))

    def pin(self, task: Any, pinned: bool = True) -> Future:
        """Give every batch to ``task`` while it is pinned (until unpinned or done)."""
        return self._steer("pin", (self.task_index(task), bool(pinned)))

    def skip(self, task: Any, skipped: bool = True) -> Future:
        """Leave ``task`` out of the schedule while it is skipped."""
        return self._steer("skip", (self.task_index(task), bool(skipped)))

    def set_task_budget(self, task: Any, max_trials: int | None) -> Future:
        """Change one task's trial budget (None: no limit of its own)."""
        if max_trials is not None:
            check_budget("max_trials", max_trials)
        return self._steer("budget", (self.task_index(task), max_trials))

    def set_scheduler(self, kind: Any) -> Future:
        """Switch the task scheduler (``"forecast"``, ``"gradient"`` or ``"round-robin"``) from
        the next pick on.
        A new ``GradientBased`` starts with its warm-up over the tasks not tuned yet."""
        return self._steer("scheduler", scheduler_kinds.create(kind, seed=self.seed))

    def _steer(self, name: str, arg: Any) -> Future:
        return self._control.command(name, arg, now=lambda: self._loop.steer(name, arg))

    def __repr__(self) -> str:
        return (f"Session({self.name!r}, state={self.state!r}, "
                f"trials={self.trials_done}/{self.max_trials}, work_dir={str(self.work_dir)!r})")

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            if self.state in ("running", "paused"):
                self.stop()
        except Exception:
            pass

