"""A tuning session: MetaSchedule tuning in a worker thread, steerable from any thread.

Commands (pause, resume, step, stop, set rules, re-measure) are applied by the worker between
stages; every stage is an event (see :mod:`msviz.engine.events`). States::

    idle -> running <-> paused -> stopping -> stopped
                   \\-> finished | failed
    running <-> waiting (for RPC devices; pausable, stoppable)
"""

from __future__ import annotations

import collections
import os
import tempfile
import threading
import traceback
import warnings
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from msviz import compat
from msviz.engine import intrinsics, options
from msviz.engine import scheduler as scheduler_mod
from msviz.engine.events import EventLog
from msviz.engine.presets import knobs_for
from msviz.engine.rules import RuleSet
from msviz.engine.task_loop import TaskLoop
from msviz.engine.tuner import SharedParts, Tuner
from msviz.errors import MsvizError, MsvizWarning, WorkDirError
from msviz.records import database as db_files
from msviz.records.sidecar import SidecarWriter

__all__ = ["STATES", "Session", "SessionStateError"]

STATES = ("idle", "running", "waiting", "paused", "stopping", "finished", "stopped", "failed")
_ENDED = ("finished", "stopped", "failed")
_STEPS = ("batch", "generation")


class SessionStateError(MsvizError, RuntimeError):
    """A control call that makes no sense in the session's current state."""


class _StopRequested(Exception):
    pass


def _check_budget(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")


class Session:
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
    max_trials : int
        Trials in total over all tasks, counting those the work dir already holds when
        resuming. Schedules the user edits and measures (:meth:`remeasure`) do not count. A
        candidate
        that could not be measured for infrastructure reasons (``error_kind="infra"``) is stored
        but does not count; 3 such batches in a row fail the session with
        :class:`msviz.engine.InfrastructureError`.
    trials_per_batch : int
        Candidates measured per batch.
    max_trials_per_task : int, optional
        A model's per-task budget (as in ``tune_relax``; None: no limit of its own).
    task_scheduler : {"gradient", "round-robin"} | TaskScheduler
        Which task gets the next batch: MetaSchedule's ``GradientBased`` (``alpha=0.2``,
        ``window_size=3``, the session's seed) or ``RoundRobin``.
    params, spec : optional
        A Relax model's weights, an ``nn.Module``'s input spec.
    end_to_end_check : bool
        For a model: compile it with the work dir's database when tuning ends, run it, compare
        with the untuned build and time both (the ``end_to_end`` event, :attr:`end_to_end`).
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
        and is never the best (see :mod:`msviz.engine.check`).
    **knobs
        Search knobs overriding the preset: ``population_size``, ``init_measured_ratio``,
        ``init_min_unmeasured``, ``max_fail_count``, ``genetic_num_iters``,
        ``genetic_mutate_prob``, ``genetic_max_fail_count``, ``eps_greedy``,
        ``cost_model_warmup``, ``skip_db_measured``, ``eps_greedy_at_least_one``. Unknown names
        raise TypeError.
    """

    def __init__(self, workload: Any, *, target: Any = "llvm", work_dir: str | Path | None = None,
                 max_trials: int = 64, trials_per_batch: int = 16,
                 strategy: str = "evolutionary", rules: RuleSet | None = None,
                 seed: int | None = None, preset: str = "msviz", resume: bool = False,
                 builder: Any = "local", runner: Any = "local", num_threads: int | None = None,
                 builder_timeout: float = 30.0, runner_timeout: float = 30.0,
                 evaluator_config: Any = None, max_trials_per_task: int | None = None,
                 task_scheduler: Any = "gradient", params: dict | None = None,
                 spec: dict | None = None, end_to_end_check: bool = True,
                 check: str = "best", **knobs: Any) -> None:
        from msviz import models
        from msviz.engine.check import validate_mode
        from msviz.workloads import resolve

        self.check = validate_mode(check)
        if strategy not in ("evolutionary", "replay"):
            raise ValueError(f"strategy must be 'evolutionary' or 'replay', not {strategy!r}")
        for name, value in (("max_trials", max_trials), ("trials_per_batch", trials_per_batch)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if max_trials_per_task is not None:
            _check_budget("max_trials_per_task", max_trials_per_task)
        options.check_work_dir(work_dir, resume)
        seed = options.check_seed(seed)
        self.knobs = knobs_for(preset, **knobs)
        self.preset = preset
        self.target = compat.make_target(target)
        #: The model (None when tuning one PrimFunc).
        self.model = models.load(workload, params=params, spec=spec) \
            if models.is_model(workload) else None
        if self.model is not None:
            self.tasks = self.model.extract_tasks(self.target)
            self.workload = self.tasks[0].workload
        else:
            if params is not None or spec is not None:
                raise TypeError("params= and spec= belong to a model (a Relax IRModule, an "
                                "nn.Module), not to a single PrimFunc workload")
            self.workload = resolve(workload)
            self.tasks = [models.ModelTask(0, self.workload.name, 1, self.workload)]
        #: The model's (or the workload's) name: the task of session-level events.
        self.name = self.model.name if self.model is not None else self.workload.name
        self.rules = (rules or RuleSet.default(self.target)).copy().validate()
        self.work_dir = Path(work_dir) if work_dir is not None else Path(
            tempfile.mkdtemp(prefix="msviz-"))
        records = self.work_dir / db_files.RECORD_FILE
        if not resume and records.is_file() and records.stat().st_size > 0:
            raise WorkDirError(
                f"{self.work_dir} already holds tuning records: pass resume=True to continue "
                "them, or choose another work_dir")
        self._resume = resume
        self.seed = seed if seed is not None else int.from_bytes(os.urandom(4), "little") \
            % (2**31 - 2) + 1
        self.max_trials = max_trials
        self.trials_per_batch = trials_per_batch
        self.max_trials_per_task = max_trials_per_task
        self.strategy = strategy
        self._task_rules: dict[int, RuleSet] = {}
        self.end_to_end_check = bool(end_to_end_check) and self.model is not None
        #: The last end-to-end check (the ``end_to_end`` event's data), or None.
        self.end_to_end: dict | None = None
        self.num_threads = num_threads or compat.host_cores()
        self._measurer_options = {
            "builder": builder, "runner": runner, "builder_timeout": builder_timeout,
            "runner_timeout": runner_timeout, "evaluator_config": evaluator_config,
            "max_workers": None,
        }
        from msviz.engine.rpc import fleet_of

        #: The tracker and key when measuring over RPC (an RPCSpec), else None.
        self.fleet = fleet_of(runner)
        self.events = EventLog()
        note = intrinsics.untensorized_int8([t.workload for t in self.tasks], self.target,
                                            self.rules)
        if note:  # an int8 workload the target cannot tensorize: say so now, not never
            warnings.warn(note, MsvizWarning, stacklevel=2)
            self.events.emit("warning", self.name, message=note)
        self._tuners: list[Tuner] = []
        self._loop = TaskLoop(
            self.tasks, scheduler_mod.create(task_scheduler, seed=self.seed),
            tuners=lambda: self._tuners, emit=self.events.emit, name=self.name,
            max_trials_per_task=max_trials_per_task,
            log_dir=self.work_dir / "logs" if self.model is not None else None)
        self._cond = threading.Condition(threading.RLock())
        self._state = "idle"
        self._pause_requested = False
        self._step: str | None = None
        self._stop_requested = False
        self._commands: collections.deque = collections.deque()
        self._thread: threading.Thread | None = None
        self._shared: SharedParts | None = None
        self._measure_lock = threading.Lock()  # all measurements, one at a time
        self.end_reason: str | None = None
        self._live: Any = None  # the trials table, fed by events (see `run`)
        self._live_lock = threading.Lock()
        self.events.subscribe(self._feed_live)

    # -- state ------------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        """One of idle, running, waiting, paused, stopping, finished, stopped, failed."""
        return self._state

    @property
    def scheduler(self) -> scheduler_mod.TaskScheduler:
        """The task scheduler (see :meth:`set_scheduler`)."""
        return self._loop.scheduler

    @property
    def _tuner(self) -> Tuner | None:
        """The first task's tuner (the only one for a single PrimFunc)."""
        return self._tuners[0] if self._tuners else None

    @property
    def trials_done(self) -> int:
        """Trials of all tasks in the work dir that count toward ``max_trials`` (committed
        ones; infrastructure failures are stored but do not count)."""
        return sum(t.trials_done for t in self._tuners)

    @property
    def best_secs(self) -> float:
        """Mean run time of the fastest successful trial so far (inf if none); for a model,
        the estimated model latency: the sum of weight x best run time over the tasks (inf
        while a task has none)."""
        if not self._tuners:
            return float("inf")
        if self.model is None:
            return self._tuner.best_secs
        return sum(t.weight * u.best_secs for t, u in zip(self.tasks, self._tuners))

    def task_index(self, task: Any = None) -> int:
        """The index of a task given by index or name (None: the only task of a PrimFunc)."""
        if task is None:
            if len(self.tasks) == 1:
                return 0
            raise ValueError(f"{self.name} has {len(self.tasks)} tasks: pass task= (an index "
                             "or a task name)")
        if isinstance(task, str):
            for t in self.tasks:
                if t.name == task:
                    return t.index
            raise ValueError(f"no task named {task!r}; tasks: "
                             f"{', '.join(t.name for t in self.tasks)}")
        if isinstance(task, bool) or not isinstance(task, int) or not \
                0 <= task < len(self.tasks):
            raise ValueError(f"task must be a task name or an index in 0..{len(self.tasks) - 1},"
                             f" not {task!r}")
        return task

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

    def _set_state(self, state: str) -> None:
        with self._cond:
            self._state = state
            self._cond.notify_all()

    def _refuse(self, call: str, why: str) -> SessionStateError:
        return SessionStateError(f"Session.{call}() makes no sense now: the session is "
                                 f"{self._state}; {why}")

    # -- controls ---------------------------------------------------------------------------------

    def start(self) -> bool:
        """Start tuning in the worker thread; returns at once.

        Returns True if it started, False if it was already started (running or paused).
        """
        with self._cond:
            if self._state == "idle":
                self._launch()
                return True
            if self._state in ("running", "waiting", "paused", "stopping"):
                return False
            raise self._refuse("start", "a session runs once; open its work dir with "
                               "Session(..., work_dir=..., resume=True) to tune further")

    def _launch(self) -> None:
        self._state = "running"
        self._thread = threading.Thread(target=self._work, name="msviz-session", daemon=True)
        self._thread.start()
        self._cond.notify_all()

    def pause(self) -> bool:
        """Pause after the current stage. False if already paused or pausing."""
        with self._cond:
            if self._state in ("running", "waiting"):
                if self._pause_requested:
                    return False
                self._pause_requested = True
                self._cond.notify_all()
                return True
            if self._state == "paused":
                return False
            raise self._refuse("pause", "only a running session can pause" + (
                "; use step() to run one stage from idle" if self._state == "idle" else ""))

    def resume(self) -> bool:
        """Continue a paused session (or cancel a pause/step not reached yet)."""
        with self._cond:
            if self._state == "paused":
                self._state = "running"
                self._step = None
                self._cond.notify_all()
                return True
            if self._state in ("running", "waiting"):
                changed = self._pause_requested or self._step is not None
                self._pause_requested, self._step = False, None
                return changed
            raise self._refuse("resume", "call start() first" if self._state == "idle"
                               else "only a paused session can resume")

    def step(self, kind: str = "batch") -> bool:
        """Run one measurement batch (``"batch"``) or one search stage (``"generation"``), then
        pause. From idle this starts the session."""
        if kind not in _STEPS:
            raise ValueError(f"step kind must be 'batch' or 'generation', not {kind!r}")
        with self._cond:
            if self._state in ("idle", "paused", "running"):
                self._step, self._pause_requested = kind, False
                if self._state == "idle":
                    self._launch()
                elif self._state == "paused":
                    self._state = "running"
                    self._cond.notify_all()
                return True
            raise self._refuse("step", "it has ended or is stopping")

    def stop(self) -> bool:
        """Finish cleanly after the current stage. False if already stopping or ended."""
        emit = False
        with self._cond:
            if self._state == "idle":
                self._state = "stopped"
                self.end_reason = "stopped before it started"
                self._cond.notify_all()
                emit = True
            elif self._state in ("running", "waiting", "paused"):
                self._stop_requested = True
                self._state = "stopping"
                self._cond.notify_all()
                return True
            else:
                return False
        if emit:
            self.events.emit("stopped", self.name, reason=self.end_reason,
                             trials=self.trials_done)
        return True

    def wait(self, timeout: float | None = None) -> str:
        """Block until the session is paused or has ended (or ``timeout`` s); returns the state.

        Waiting for RPC devices counts as running (it ends by itself, or fails after the
        runner's ``wait_timeout``)."""
        with self._cond:
            self._cond.wait_for(
                lambda: self._state not in ("running", "waiting", "stopping"), timeout=timeout)
            return self._state

    def set_rules(self, rules: RuleSet, *, task: Any = None) -> Future:
        """Use new schedule rules / postprocs / mutator probabilities from the next stage on.

        The rules are checked now (:class:`RuleError` names the bad rule and parameter); the
        design spaces are regenerated by the worker; database and cost model are kept.
        ``task`` (an index or name) limits them to one task of a model (default: every task).
        """
        if not isinstance(rules, RuleSet):
            raise TypeError(f"rules must be a RuleSet, not {type(rules).__name__}")
        rules = rules.copy().validate()
        index = None if task is None else self.task_index(task)
        with self._cond:
            if self._state in _ENDED or self._state == "stopping":
                raise self._refuse("set_rules", "it has ended")
            if self._state == "idle" and index is None:
                self.rules = rules
                done: Future = Future()
                done.set_result(None)
                return done
            if self._state == "idle":
                self._task_rules[index] = rules
                done = Future()
                done.set_result(None)
                return done
            return self._enqueue("set_rules", (rules, index))

    # -- steering the task scheduler ----------------------------------------------------------

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
            _check_budget("max_trials", max_trials)
        return self._steer("budget", (self.task_index(task), max_trials))

    def set_scheduler(self, kind: Any) -> Future:
        """Switch the task scheduler (``"gradient"`` or ``"round-robin"``) from the next pick on.
        A new ``GradientBased`` starts with its warm-up over the tasks not tuned yet."""
        new = scheduler_mod.create(kind, seed=self.seed)
        return self._steer("scheduler", new)

    def _steer(self, name: str, arg: Any) -> Future:
        with self._cond:
            if self._state in _ENDED or self._state == "stopping":
                raise self._refuse(name, "it has ended")
            if self._state != "idle":
                return self._enqueue(name, arg)
        self._apply_steering(name, arg)
        done: Future = Future()
        done.set_result(None)
        return done

    def _apply_steering(self, name: str, arg: Any) -> None:
        if self._loop.steer(name, arg) and self._state != "idle":
            self.events.emit("tasks", self.name, tasks=self.tasks_info())

    def remeasure(self, trial_or_trace: Any, *, repeats: int = 3, task: Any = None) -> Future:
        """Build and run a schedule again; the new run_secs become a re-measurement of its trial.

        Parameters
        ----------
        trial_or_trace : int | Trial | Trace | Schedule
            A row of :attr:`trials`, a Trial, or a schedule/trace of this workload.
        repeats : int
            Timed repeats.
        task : int | str, optional
            The task it belongs to (default: the trial's task, or the only task).

        Returns
        -------
        future : concurrent.futures.Future
            Resolves to ``{"line", "repeats", "run_secs", "error", "new_trial", "check"}``. A
            schedule the database does not hold (an edit) becomes a trial of its own, its
            result checked (``check``: ``"ok"``, ``"wrong"`` or ``"error"``; a wrong one is a
            ``wrong_result`` trial). Measurements go through the engine one at a time, never
            overlapping a tuning batch.
        """
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
        if task is None and len(self.tasks) > 1:
            task = _task_of(trial_or_trace)
        index = self.task_index(task)
        with self._cond:
            if self._state in ("running", "paused", "stopping") and self._thread is not None:
                return self._enqueue("remeasure", (trial_or_trace, repeats, index))
        future: Future = Future()
        threading.Thread(target=self._remeasure_now,
                         args=(future, trial_or_trace, repeats, index),
                         name="msviz-remeasure", daemon=True).start()
        return future

    def _enqueue(self, name: str, arg: Any) -> Future:
        future: Future = Future()
        self._commands.append((name, arg, future))
        self._cond.notify_all()
        return future

    def _remeasure_now(self, future: Future, what: Any, repeats: int, index: int = 0) -> None:
        try:
            with self._measure_lock:
                tuners = self._tuners
                fresh = not tuners or not all(t.ready for t in tuners)
                if fresh:
                    shared, tuners = self._make_tuners()
                    if self._state == "idle":
                        self._shared, self._tuners = shared, tuners  # start() reuses them
                try:
                    future.set_result(tuners[index].remeasure(what, repeats))
                finally:
                    if fresh and tuners is not self._tuners:
                        self._close_tuners(tuners, shared)  # the session has ended
        except BaseException as err:
            future.set_exception(err)

    # -- the worker -------------------------------------------------------------------------------

    def _task_seed(self, index: int) -> int:
        if index == 0:
            return self.seed  # a single PrimFunc tunes with the session's seed, as before
        return (self.seed - 1 + index * 7919) % (2**31 - 2) + 1

    def _make_tuners(self) -> tuple[SharedParts, list[Tuner]]:
        """The shared parts and one tuner per task, set up (on the calling thread)."""
        shared = SharedParts(work_dir=self.work_dir, target=self.target, knobs=self.knobs,
                             num_threads=self.num_threads,
                             measurer_options=self._measurer_options)
        shared.open(lambda message: self.events.emit("warning", self.name, message=message))
        tuners = []
        try:
            for task in self.tasks:
                tuner = Tuner(workload=task.workload, target=self.target,
                              work_dir=self.work_dir, knobs=self.knobs, strategy=self.strategy,
                              rules=self._task_rules.get(task.index, self.rules),
                              seed=self._task_seed(task.index), num_threads=self.num_threads,
                              max_trials=self.max_trials, trials_per_batch=self.trials_per_batch,
                              measurer_options=self._measurer_options, emit=self.events.emit,
                              task_index=task.index, shared=shared,
                              check=self.check)
                tuners.append(tuner)
                tuner.setup()
        except BaseException:
            self._close_tuners(tuners, shared)
            raise
        return shared, tuners

    @staticmethod
    def _close_tuners(tuners: list[Tuner], shared: SharedParts | None) -> None:
        for tuner in tuners:
            tuner.close()
        if shared is not None:
            shared.close()

    def _work(self) -> None:
        compat.quiet_ipython_printing()
        name = self.name
        final, data = "failed", {}
        try:
            flop = float(self.workload.flop) if self.model is None else float(
                sum(t.weight * t.flop for t in self.tasks))
            self.events.emit("started", name, work_dir=str(self.work_dir), seed=self.seed,
                             preset=self.preset, strategy=self.strategy,
                             target=compat.to_jsonable(self.target.export()),
                             target_kind=str(self.target.kind.name),
                             flop=flop, max_trials=self.max_trials,
                             trials_per_batch=self.trials_per_batch, resumed=self._resume,
                             knobs=vars(self.knobs).copy(),
                             model=self.model.name if self.model is not None else None,
                             num_tasks=len(self.tasks),
                             max_trials_per_task=self.max_trials_per_task,
                             task_scheduler=self.scheduler.kind)
            self.events.emit("tasks", name, tasks=self.tasks_info())
            self._await_devices(first=True)
            with self._measure_lock:
                if not self._tuners or not all(t.ready for t in self._tuners):
                    self._shared, self._tuners = self._make_tuners()
            with self._live_lock:
                if self._live is not None:
                    self._teach_live(self._live)
            self._loop.use_scheduler(self._loop.scheduler)  # its warm-up skips tuned tasks
            for task in self.tasks:
                self._loop.log(f"Initializing Task #{task.index}: {task.name}")
            self._loop.log("Task table before tuning", table=True)
            self._loop.batch = sum(t.batch for t in self._tuners)
            self._checkpoint("stage")
            stages = self._loop.drive(self.max_trials, self.trials_per_batch)
            while True:
                with self._measure_lock:
                    try:
                        kind = next(stages)
                    except StopIteration as end:
                        self.end_reason = end.value
                        break
                self._checkpoint(kind)
                if kind == "batch":
                    self._await_devices()
            final = "finished"
            self._loop.end_all(self.end_reason)
        except _StopRequested:
            final, self.end_reason = "stopped", "stopped on request"
        except BaseException as err:
            final, self.end_reason = "failed", f"{type(err).__name__}: {err}"
            data = {"error": self.end_reason, "traceback": traceback.format_exc()}
        finally:
            try:
                self._close_tuners(self._tuners, self._shared)
            except Exception as err:  # pragma: no cover - keep the first error
                data.setdefault("close_error", f"{type(err).__name__}: {err}")
        if self._tuners:
            self._loop.log(f"Tuning ended ({final}): {self.end_reason}", table=True)
        if self.end_to_end_check and final in ("finished", "stopped") and self.trials_done:
            self._end_to_end_now()
        self._fail_commands()
        timing: dict = {}
        for tuner in self._tuners:
            for key, value in tuner.timing.items():
                timing[key] = timing.get(key, 0.0) + value
        self.events.emit(final, name, reason=self.end_reason, trials=self.trials_done,
                         timing=timing, **data)
        self._set_state(final)

    def _end_to_end_now(self) -> dict:
        from msviz.engine.end_to_end import check_model

        with self._measure_lock:  # never overlaps a measurement
            data = check_model(self.model, self.tasks, self.work_dir, self.target,
                               seed=self.seed)
        self.end_to_end = data
        self._store_end_to_end(data)
        self.events.emit("end_to_end", self.name, **data)
        return data

    def _store_end_to_end(self, data: dict) -> None:
        """Append the result to the sidecar, so ``msviz.open(work_dir)`` (its dashboard and
        report) has it too; the session's own writer when tuning, else a short-lived one."""
        shared = self._shared
        if shared is not None and shared.ready:
            shared.sidecar.write("end_to_end", **data)
            return
        with SidecarWriter(self.work_dir) as writer:
            writer.write("end_to_end", **data)

    def check_model(self) -> dict:
        """Compile the model with the work dir's database and without, run both on the same
        random inputs, compare the outputs and time both; emits ``end_to_end``.

        Returns
        -------
        data : dict
            ``untuned_us``, ``tuned_us``, ``match``, ``max_abs_diff``, ``fallback`` (tasks with
            no tuned record), ``error``. Also kept as :attr:`end_to_end`.
        """
        if self.model is None:
            raise SessionStateError(f"{self.name} is one PrimFunc, not a model: there is no "
                                    "end-to-end build to check")
        return self._end_to_end_now()

    def _fail_commands(self) -> None:
        with self._cond:
            pending, self._commands = list(self._commands), collections.deque()
        for name, arg, future in pending:
            if name == "remeasure":  # still possible: run it on its own
                threading.Thread(target=self._remeasure_now, args=(future, *arg),
                                 daemon=True).start()
            else:
                future.set_exception(SessionStateError(f"{name} not applied: the session ended"))

    def _run_commands(self) -> None:
        while True:
            with self._cond:
                if not self._commands:
                    return
                name, arg, future = self._commands.popleft()
            try:
                with self._measure_lock:
                    result = None
                    if name == "set_rules":
                        rules, index = arg
                        for tuner in self._tuners:
                            if index is None or tuner.task_index == index:
                                tuner.set_rules(rules)
                        if index is None:
                            self.rules = rules
                        else:
                            self._task_rules[index] = rules
                    elif name == "remeasure":
                        what, repeats, index = arg
                        result = self._tuners[index].remeasure(what, repeats)
                    else:
                        self._apply_steering(name, arg)
                future.set_result(result)
            except Exception as err:
                self.events.emit("warning", self.name,
                                 message=f"{name} failed: {type(err).__name__}: {err}")
                future.set_exception(err)

    def _await_devices(self, *, first: bool = False) -> None:
        """Over RPC: say what the tracker holds (a ``devices`` event); with no server under
        the key, wait in state ``"waiting"`` (``waiting_for_devices`` events), pausable and
        stoppable, until one registers or the runner's ``wait_timeout`` passes."""
        from msviz.engine import rpc

        spec, task = self.fleet, self.workload.name
        if spec is None:
            return
        if first and rpc.is_exposed(spec.host):
            self.events.emit("warning", task, message=rpc.exposure_warning(spec.host))
        while True:
            status, error = None, None
            try:
                status = rpc.tracker_status(spec.tracker, spec.key)
            except rpc.TrackerError as err:
                error = str(err)
            self.events.emit("devices", task, **rpc.status_event(status, spec, error))
            if status is not None and status.total > 0:
                return
            with self._cond:
                if self._state == "running":
                    self._state = "waiting"
                    self._cond.notify_all()
            try:
                rpc.wait_for_devices(
                    spec, first=status, error=error,
                    emit=lambda **data: self.events.emit("waiting_for_devices", task, **data),
                    stop=lambda: self._stop_requested or self._pause_requested)
            finally:
                with self._cond:
                    if self._state == "waiting":
                        self._state = "running"
                        self._cond.notify_all()
            if not (self._stop_requested or self._pause_requested):
                continue  # a server registered: emit what the tracker holds now
            self._checkpoint("waiting")  # stops, or pauses until resumed; then look again

    def _checkpoint(self, kind: str) -> None:
        """Between stages: apply commands, stop, or pause (waiting there for commands)."""
        self._run_commands()
        with self._cond:
            if self._stop_requested:
                raise _StopRequested
            pause = self._pause_requested or self._step == "generation" or (
                self._step == "batch" and kind == "batch")
            if not pause:
                return
            self._pause_requested, self._step = False, None
            self._state = "paused"
            self._cond.notify_all()
        self.events.emit("paused", self.name, after=kind, trials=self.trials_done)
        while True:
            self._run_commands()
            with self._cond:
                if self._stop_requested:
                    raise _StopRequested
                if self._state == "running":
                    break
                if not self._commands:
                    self._cond.wait(timeout=0.5)
        self.events.emit("resumed", self.name, step=self._step, trials=self.trials_done)

    # -- results ----------------------------------------------------------------------------------

    def _live_run(self) -> Any:
        with self._live_lock:
            if self._live is None:  # one read of what the work dir holds, before any commit
                from msviz.records.live import LiveRun

                self._live = LiveRun(self.work_dir, task=self.workload.name,
                                     flop=self.workload.flop)
                self._teach_live(self._live)
                told = [e for e in self.events.snapshot() if e.kind == "tasks"]
                if told:  # the model's task IDs and weights, if they were told before
                    self._live.feed(told[-1])
            return self._live

    def _feed_live(self, event: Any) -> None:
        """Keep the trials table: append the rows ``measured``/``remeasured`` events carry."""
        if event.kind not in ("started", "tasks", "picked", "measured", "remeasured"):
            return
        try:
            workload = getattr(self._tuners[event.get("task_index", 0)]
                               if self._tuners else None, "workload_index", None)
            self._live_run().feed(event, workload=workload)
        except Exception as err:  # never lose the table: read the work dir again when asked
            with self._live_lock:
                self._live = None
            self.events.emit("warning", self.name, message=(
                f"the live trials table could not take a {event.kind} event "
                f"({type(err).__name__}: {err}); it will be read from the work dir again"))

    def _teach_live(self, live: Any) -> None:
        """Give the live table each task's name and FLOP (its rows carry the workload index)."""
        if self.model is None or not self._tuners:
            return
        for task, tuner in zip(self.tasks, self._tuners):
            if getattr(tuner, "workload_index", None) is None:
                continue
            for attr, value in (("_task_names", task.name), ("_flops", float(task.flop)),
                                ("_weights", task.weight)):
                table = getattr(live, attr, None)
                if isinstance(table, dict):
                    table.setdefault(tuner.workload_index, value)

    @property
    def run(self) -> Any:
        """The records as a live :class:`msviz.Run`: the work dir read once, then the trials
        of this session's events appended (a refresh costs the same at any size)."""
        return self._live_run()

    @property
    def trials(self) -> Any:
        """The trials so far; equal to ``msviz.open(work_dir).trials`` (same columns, values
        and dtypes) once the session has ended."""
        return self._live_run().trials

    def open(self) -> Any:
        """The work dir as a :class:`msviz.Run` (a fresh read)."""
        from msviz.records.run import Run

        return Run(self.work_dir)

    def best(self) -> Any:
        """The best trial so far (as ``msviz.open(work_dir).best()`` would pick it)."""
        return self._live_run().best()

    def dashboard(self, **options: Any) -> Any:
        """A notebook dashboard following this session (controls, progress, views).

        Imported on call: the engine itself never imports widgets.
        """
        from msviz.widgets import Dashboard

        return Dashboard(self, **options)

    def __repr__(self) -> str:
        return (f"Session({self.name!r}, state={self._state!r}, "
                f"trials={self.trials_done}/{self.max_trials}, work_dir={str(self.work_dir)!r})")

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            if self._state in ("running", "paused"):
                self.stop()
        except Exception:
            pass



def _task_of(what: Any) -> Any:
    """The task name a trial row or Trial carries (None if it names none)."""
    task = getattr(what, "task", None)
    if task is None and hasattr(what, "get"):
        task = what.get("task")
    return task if isinstance(task, str) else None
