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
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from msviz import compat
from msviz.engine.events import EventLog
from msviz.engine.presets import knobs_for
from msviz.engine.rules import RuleSet
from msviz.engine.tuner import Tuner
from msviz.errors import MsvizError, WorkDirError
from msviz.records import database as db_files

__all__ = ["STATES", "Session", "SessionStateError"]

STATES = ("idle", "running", "waiting", "paused", "stopping", "finished", "stopped", "failed")
_ENDED = ("finished", "stopped", "failed")
_STEPS = ("batch", "generation")


class SessionStateError(MsvizError, RuntimeError):
    """A control call that makes no sense in the session's current state."""


class _StopRequested(Exception):
    pass


class Session:
    """Tune one workload with MetaSchedule in a background thread.

    Parameters
    ----------
    workload : str | PrimFunc | IRModule | Workload
        A catalogue name (``"GMM-0"``), TVMScript, a PrimFunc or an IRModule with one PrimFunc.
    target : str | dict | Target
        ``"llvm"`` (the host CPU, its cores) or ``"cuda"``, a tag, a dict or a Target.
    work_dir : str | Path, optional
        Where the stock JSON database, the sidecar and the logs go (a new temp dir if None).
    max_trials : int
        Trials in total, counting those the work dir already holds when resuming. A candidate
        that could not be measured for infrastructure reasons (``error_kind="infra"``) is stored
        but does not count; 3 such batches in a row fail the session with
        :class:`msviz.engine.InfrastructureError`.
    trials_per_batch : int
        Candidates measured per batch.
    strategy : {"evolutionary", "replay"}
        msviz's step-able port of ``EvolutionarySearch``, or MetaSchedule's ``ReplayTrace``.
    rules : RuleSet, optional
        Schedule rules, postprocs and mutator probabilities (the target's defaults if None).
    seed : int, optional
        Seed of the search (random if None).
    preset : {"msviz", "stock"}
        Knob defaults; ``"stock"`` reproduces MetaSchedule's exactly.
    resume : bool
        Continue what ``work_dir`` holds (required when it already holds records).
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
                 evaluator_config: Any = None, **knobs: Any) -> None:
        from msviz.workloads import resolve

        if strategy not in ("evolutionary", "replay"):
            raise ValueError(f"strategy must be 'evolutionary' or 'replay', not {strategy!r}")
        for name, value in (("max_trials", max_trials), ("trials_per_batch", trials_per_batch)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.knobs = knobs_for(preset, **knobs)
        self.preset = preset
        self.workload = resolve(workload)
        self.target = compat.make_target(target)
        self.rules = (rules or RuleSet.default(str(self.target.kind.name))).copy().validate()
        self.work_dir = Path(work_dir) if work_dir is not None else Path(
            tempfile.mkdtemp(prefix="msviz-"))
        records = self.work_dir / db_files.RECORD_FILE
        if not resume and records.is_file() and records.stat().st_size > 0:
            raise WorkDirError(
                f"{self.work_dir} already holds tuning records: pass resume=True to continue "
                "them, or choose another work_dir")
        self._resume = resume
        self.seed = int(seed) if seed is not None else int.from_bytes(os.urandom(4), "little") \
            % (2**31 - 2) + 1
        self.max_trials = max_trials
        self.trials_per_batch = trials_per_batch
        self.strategy = strategy
        self.num_threads = num_threads or len(os.sched_getaffinity(0))
        self._measurer_options = {
            "builder": builder, "runner": runner, "builder_timeout": builder_timeout,
            "runner_timeout": runner_timeout, "evaluator_config": evaluator_config,
            "max_workers": None,
        }
        from msviz.engine.rpc import fleet_of

        #: The tracker and key when measuring over RPC (an RPCSpec), else None.
        self.fleet = fleet_of(runner)
        self.events = EventLog()
        self._cond = threading.Condition(threading.RLock())
        self._state = "idle"
        self._pause_requested = False
        self._step: str | None = None
        self._stop_requested = False
        self._commands: collections.deque = collections.deque()
        self._thread: threading.Thread | None = None
        self._tuner: Tuner | None = None
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
    def trials_done(self) -> int:
        """Trials of this task in the work dir that count toward ``max_trials`` (committed ones;
        infrastructure failures are stored but do not count)."""
        return self._tuner.trials_done if self._tuner is not None else 0

    @property
    def best_secs(self) -> float:
        """Mean run time of the fastest successful trial so far (inf if none)."""
        return self._tuner.best_secs if self._tuner is not None else float("inf")

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
            self.events.emit("stopped", self.workload.name, reason=self.end_reason,
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

    def set_rules(self, rules: RuleSet) -> Future:
        """Use new schedule rules / postprocs / mutator probabilities from the next stage on.

        The rules are checked now (:class:`RuleError` names the bad rule and parameter); the
        design spaces are regenerated by the worker; database and cost model are kept.
        """
        if not isinstance(rules, RuleSet):
            raise TypeError(f"rules must be a RuleSet, not {type(rules).__name__}")
        rules = rules.copy().validate()
        with self._cond:
            if self._state in _ENDED or self._state == "stopping":
                raise self._refuse("set_rules", "it has ended")
            if self._state == "idle":
                self.rules = rules
                done: Future = Future()
                done.set_result(None)
                return done
            return self._enqueue("set_rules", rules)

    def remeasure(self, trial_or_trace: Any, *, repeats: int = 3) -> Future:
        """Build and run a schedule again; the new run_secs become a re-measurement of its trial.

        Parameters
        ----------
        trial_or_trace : int | Trial | Trace | Schedule
            A row of :attr:`trials`, a Trial, or a schedule/trace of this workload.
        repeats : int
            Timed repeats.

        Returns
        -------
        future : concurrent.futures.Future
            Resolves to ``{"line", "repeats", "run_secs", "error"}``. Measurements go through the
            engine one at a time, never overlapping a tuning batch.
        """
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
        with self._cond:
            if self._state in ("running", "paused", "stopping") and self._thread is not None:
                return self._enqueue("remeasure", (trial_or_trace, repeats))
        future: Future = Future()
        threading.Thread(target=self._remeasure_now, args=(future, trial_or_trace, repeats),
                         name="msviz-remeasure", daemon=True).start()
        return future

    def _enqueue(self, name: str, arg: Any) -> Future:
        future: Future = Future()
        self._commands.append((name, arg, future))
        self._cond.notify_all()
        return future

    def _remeasure_now(self, future: Future, what: Any, repeats: int) -> None:
        try:
            with self._measure_lock:
                tuner = self._tuner
                fresh = tuner is None or not tuner.ready
                if fresh:
                    tuner = self._make_tuner()
                    tuner.setup()
                    if self._state == "idle":
                        self._tuner = tuner  # start() will reuse it
                try:
                    future.set_result(tuner.remeasure(what, repeats))
                finally:
                    if fresh and tuner is not self._tuner:
                        tuner.close()  # the session has ended: free its workers again
        except BaseException as err:
            future.set_exception(err)

    # -- the worker -------------------------------------------------------------------------------

    def _make_tuner(self) -> Tuner:
        return Tuner(workload=self.workload, target=self.target, work_dir=self.work_dir,
                     knobs=self.knobs, strategy=self.strategy, rules=self.rules, seed=self.seed,
                     num_threads=self.num_threads, max_trials=self.max_trials,
                     trials_per_batch=self.trials_per_batch,
                     measurer_options=self._measurer_options, emit=self.events.emit)

    def _work(self) -> None:
        compat.quiet_ipython_printing()
        task = self.workload.name
        final, data = "failed", {}
        try:
            self.events.emit("started", task, work_dir=str(self.work_dir), seed=self.seed,
                             preset=self.preset, strategy=self.strategy,
                             target=compat.to_jsonable(self.target.export()),
                             target_kind=str(self.target.kind.name),
                             flop=float(self.workload.flop), max_trials=self.max_trials,
                             trials_per_batch=self.trials_per_batch, resumed=self._resume,
                             knobs=vars(self.knobs).copy())
            self._await_devices(first=True)
            with self._measure_lock:
                tuner = self._tuner
                if tuner is None or not tuner.ready:
                    tuner = self._tuner = self._make_tuner()
                    tuner.setup()
            self._checkpoint("stage")
            stages = tuner.stages()
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
        except _StopRequested:
            final, self.end_reason = "stopped", "stopped on request"
        except BaseException as err:
            final, self.end_reason = "failed", f"{type(err).__name__}: {err}"
            data = {"error": self.end_reason, "traceback": traceback.format_exc()}
        finally:
            tuner = self._tuner
            if tuner is not None:
                try:
                    tuner.close()
                except Exception as err:  # pragma: no cover - keep the first error
                    data.setdefault("close_error", f"{type(err).__name__}: {err}")
        self._fail_commands()
        timing = dict(self._tuner.timing) if self._tuner is not None else {}
        self.events.emit(final, task, reason=self.end_reason, trials=self.trials_done,
                         timing=timing, **data)
        self._set_state(final)

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
                    if name == "set_rules":
                        self._tuner.set_rules(arg)
                        self.rules = arg
                        result = None
                    else:
                        result = self._tuner.remeasure(*arg)
                future.set_result(result)
            except Exception as err:
                self.events.emit("warning", self.workload.name,
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
        self.events.emit("paused", self.workload.name, after=kind, trials=self.trials_done)
        while True:
            self._run_commands()
            with self._cond:
                if self._stop_requested:
                    raise _StopRequested
                if self._state == "running":
                    break
                if not self._commands:
                    self._cond.wait(timeout=0.5)
        self.events.emit("resumed", self.workload.name, step=self._step, trials=self.trials_done)

    # -- results ----------------------------------------------------------------------------------

    def _live_run(self) -> Any:
        with self._live_lock:
            if self._live is None:  # one read of what the work dir holds, before any commit
                from msviz.records.live import LiveRun

                self._live = LiveRun(self.work_dir, task=self.workload.name,
                                     flop=self.workload.flop)
            return self._live

    def _feed_live(self, event: Any) -> None:
        """Keep the trials table: append the rows ``measured``/``remeasured`` events carry."""
        if event.kind not in ("started", "picked", "measured", "remeasured"):
            return
        try:
            self._live_run().feed(event, workload=getattr(self._tuner, "workload_index", None))
        except Exception as err:  # never lose the table: read the work dir again when asked
            with self._live_lock:
                self._live = None
            self.events.emit("warning", self.workload.name, message=(
                f"the live trials table could not take a {event.kind} event "
                f"({type(err).__name__}: {err}); it will be read from the work dir again"))

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
        return (f"Session({self.workload.name!r}, state={self._state!r}, "
                f"trials={self.trials_done}/{self.max_trials}, work_dir={str(self.work_dir)!r})")

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            if self._state in ("running", "paused"):
                self.stop()
        except Exception:
            pass

