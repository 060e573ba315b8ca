"""One tuning, many shapes: tune a few shapes of a family, carry their schedules to every
shape, and dispatch each shape to the fastest.

:class:`ShapeTuning` runs in a background thread (``start``, ``wait``, ``stop``) over a work
root that holds one work dir per shape (``<root>/<label>/``), the dispatch as one stock work
dir (``<root>/dispatch/``: every shape's records, so ``compile_tir`` / ``compile_relax`` of any
listed shape finds its kernels), ``dispatch.txt`` (shape ranges -> the schedules they run) and
``shapes.json`` (:class:`msviz.records.shape_cover.ShapeCover`).

The loop:

1. **pick** a shape: first the family's weighted middle (the size whose weighted sum of
   ``|log2 size - log2 other|`` is least); then the shape with the largest weighted estimated
   regret (below);
2. **tune** it: a :class:`~msviz.engine.session.Session` of ``trials`` trials in its work dir,
   with the shapes tuned before as its tuning library (their records pre-train the shared cost
   model, their schedules seed its first batch: :mod:`msviz.engine.tuning.library_reuse`) and the
   schedules carried to it before as its stored records;
3. **cross-measure**: its ``carry_top`` fastest schedules of each task carried to every other
   shape and measured there (:mod:`msviz.workflows.shapes.cross`);
4. **estimate** each untuned shape's regret: its fastest carried latency over the latency the
   tuned shapes' throughput (FLOPs per µs, interpolated in ``log2 size`` between them, flat
   beyond) predicts for its FLOPs. Stop when ``k`` shapes are tuned, or (``k`` not given) when
   the weighted geometric mean of the regrets is at most ``regret`` or ``max_k`` shapes are
   tuned (default: 3/8 of the family, at least 1).
"""

from __future__ import annotations

import math
import shutil
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from msviz import compat
from msviz.archive.merge import merge
from msviz.engine.arguments import tasks_of
from msviz.engine.measure.service import MeasuringService
from msviz.engine.session import Session
from msviz.errors import MsvizError
from msviz.models.shape_family import ShapeFamily
from msviz.records.run import Run
from msviz.records.shape_cover import (
    COVER_FILE,
    Cell,
    Dispatch,
    ShapeCover,
    TunedShape,
)
from msviz.workflows.shapes import cross
from msviz.workflows.shapes.regret import (
    interpolated_throughput,
    next_shape,
    weighted_latency,
)
from msviz.workflows.shapes.settings import check_cover_numbers, check_root, default_max_k

__all__ = ["ShapeTuning", "default_max_k"]

DISPATCH_DIR = "dispatch"
#: Session settings the cover sets for each shape's session itself.
_SET_BY_THE_COVER = frozenset({"work_dir", "max_trials", "resume", "library", "reuse",
                               "end_to_end_check", "params", "spec"})
#: The dispatch as a small text table (shape ranges -> the shape whose schedules they run).
TABLE_FILE = "dispatch.txt"


class ShapeTuning:
    """Cover a shape family with a few tuned shapes (see the module docstring).

    Parameters
    ----------
    family : ShapeFamily
        From :func:`msviz.shapes`.
    work_dir : str | Path
        The work root (created; a root holding a cover already is refused).
    k : int, optional
        Shapes to tune, exactly (default: chosen by ``regret``, at most ``max_k``).
    regret : float
        The weighted geometric-mean regret to stop at when ``k`` is not given.
    max_k : int, optional
        The most shapes tuned when ``k`` is not given.
    trials : int
        Trials of each tuned shape (each model of a model family).
    carry_top : int
        Fastest schedules of each tuned task carried to every other shape.
    target, trials_per_batch, seed, **options
        As :class:`~msviz.engine.session.Session` takes them (``check``, ``preset``,
        ``evaluator_config``, knobs...), for every tuning and measurement.
    """

    def __init__(self, family: ShapeFamily, *, work_dir: str | Path, k: int | None = None,
                 regret: float = 1.05, max_k: int | None = None, trials: int = 64,
                 carry_top: int = 2, target: Any = "llvm", trials_per_batch: int = 16,
                 seed: int | None = 1, **options: Any) -> None:
        if not isinstance(family, ShapeFamily):
            raise TypeError(f"family must be a ShapeFamily (msviz.shapes), not "
                            f"{type(family).__name__}")
        n = len(family)
        check_cover_numbers(n, k=k, max_k=max_k, regret=regret, trials=trials,
                            carry_top=carry_top, trials_per_batch=trials_per_batch)
        self.root = Path(work_dir)
        if (self.root / COVER_FILE).exists():
            raise MsvizError(f"{self.root} holds a shape cover already; open it with "
                             "msviz.open_shapes, or give another work_dir")
        check_root(self.root, [s.label for s in family.shapes], DISPATCH_DIR)
        self.family, self.k, self.regret = family, k, float(regret)
        self.max_k = max_k if max_k is not None else (k or default_max_k(n))
        self.trials, self.carry_top, self.seed = trials, carry_top, seed
        self.target = compat.make_target(target)
        reserved = sorted(set(options) & _SET_BY_THE_COVER)
        if reserved:
            raise ValueError(f"{', '.join(reserved)} cannot be given to a shape cover: it sets "
                             "them for each shape's session (work_dir is the cover's root)")
        self.options = {"trials_per_batch": trials_per_batch, **options}
        self._check_options()
        #: What happened, in order: ``{"kind", ...}`` (``picked``, ``tuned``, ``crossed``,
        #: ``finished``, ``failed``).
        self.events: list[dict] = []
        self._subscribers: list[Any] = []
        self.session: Session | None = None
        self.cover: ShapeCover | None = None
        self.error: BaseException | None = None
        self.state = "idle"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tasks: dict[str, list] = {}
        self._tuned: list[TunedShape] = []
        self._own: dict[str, dict[int, float]] = {}
        self._cells: dict[tuple[str, str], cross.CrossResult] = {}
        self._cross_seconds = 0.0
        self._t0 = 0.0
        self._measurer: MeasuringService | None = None
        self._lock = threading.RLock()  # the thread's results against snapshot()

    def _check_options(self) -> None:
        """Every session setting checked now, as a session of the first shape checks it (a bad
        knob or timing fails here, not in the tuning thread)."""
        scratch = Path(tempfile.mkdtemp(prefix="msviz-shapes-check-"))
        try:
            Session(self.family.program(self.family.shapes[0].label), target=self.target,
                    work_dir=scratch / "wd", seed=self.seed, end_to_end_check=False,
                    **self.options)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    # -- control ----------------------------------------------------------------------------

    def start(self) -> bool:
        """Start in a background thread; False if already started."""
        if self._thread is not None:
            return False
        self.root.mkdir(parents=True, exist_ok=True)
        self.state = "running"
        self._thread = threading.Thread(target=self._work, name="msviz-shapes", daemon=True)
        self._thread.start()
        return True

    def wait(self, timeout: float | None = None) -> str:
        """Block until it ends (or ``timeout`` s); the state."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.state

    def stop(self) -> None:
        """Stop after the current tuning (its session is stopped too); what was measured is
        kept and the cover written for the shapes measured so far."""
        self._stop.set()
        if self.session is not None and self.session.state in ("running", "paused"):
            self.session.stop()

    def run(self) -> ShapeCover:
        """Start, wait, and return the cover (the error, if it failed)."""
        self.start()
        self.wait()
        if self.error is not None:
            raise self.error
        assert self.cover is not None
        return self.cover

    def subscribe(self, callback: Any) -> None:
        """``callback(event)`` after each event (on the tuning thread)."""
        self._subscribers.append(callback)

    def _emit(self, kind: str, **data: Any) -> None:
        event = {"kind": kind, **data}
        self.events.append(event)
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:  # a view's error must not end the tuning
                pass

    # -- the loop -----------------------------------------------------------------------------

    def _work(self) -> None:
        self._t0 = time.perf_counter()
        try:
            while not self._stop.is_set():
                label, why = self._next()
                if label is None:
                    self._emit("done", why=why)
                    break
                self._emit("picked", shape=label, why=why)
                self._tune(label, why)
                if self._stop.is_set():
                    break
                self._cross_from(label)
            self.cover = self._write("stopped" if self._stop.is_set() else "finished")
            self.state = self.cover.state
            self._emit("finished", state=self.state)
        except BaseException as err:  # the thread's error goes to wait()/run(), not stderr
            self.error = err
            self.state = "failed"
            try:
                self.cover = self._write("failed")
            except Exception:  # nothing measured yet, or the root is gone
                pass
            self._emit("failed", error=f"{type(err).__name__}: {err}")
        finally:
            if self._measurer is not None:
                self._measurer.close()
                self._measurer = None

    def tasks(self, label: str) -> list:
        """The tasks of a shape (one for a workload family)."""
        if label not in self._tasks:
            _, self._tasks[label] = tasks_of(self.family.program(label), self.target)
        return self._tasks[label]

    def _dir(self, label: str) -> Path:
        return self.root / label

    def _session(self, label: str, **settings: Any) -> Session:
        work_dir = self._dir(label)
        return Session(self.family.program(label), target=self.target, work_dir=work_dir,
                       resume=cross.has_records(work_dir), seed=self.seed,
                       end_to_end_check=False, **{**self.options, **settings})

    def _tune(self, label: str, why: str) -> None:
        start = time.perf_counter()
        work_dir = self._dir(label)
        before = cross.record_count(work_dir)
        library = [str(self._dir(t.label)) for t in self._tuned] or None
        n_tasks = len(self.tasks(label))
        first_batches = n_tasks * int(self.options["trials_per_batch"])
        if n_tasks > 1 and first_batches > self.trials:
            self._emit("warning", message=(
                f"{label}: {self.trials} trials are fewer than the first batches of its "
                f"{n_tasks} tasks ({first_batches}): tasks without a trial have no schedule "
                "to carry"))
        session = self._session(label, max_trials=before + self.trials, library=library)
        self.session = session
        session.start()
        if self._stop.is_set():  # stop() came before the session existed
            session.stop()
        session.wait()
        if session.state == "failed":
            raise MsvizError(f"tuning {label} failed: {session.end_reason}")
        seconds = time.perf_counter() - start
        own = cross.own_best(work_dir, self.tasks(label))
        done = TunedShape(label, len(self._tuned), why, round(seconds, 3),
                          cross.record_count(work_dir) - before)
        with self._lock:
            self._own[label] = own
            self._tuned.append(done)
        self._emit("tuned", shape=label, seconds=done.seconds, trials=done.trials)

    def _cross_from(self, source: str) -> None:
        start = time.perf_counter()
        run = Run(self._dir(source))
        for shape in self.family.shapes:
            if shape.label == source or self._stop.is_set():
                continue
            items, failed, error, missing = cross.carry_to(
                source, run, self.tasks(source), self.tasks(shape.label), self.target,
                self.carry_top)
            rows: dict[int, list[dict]] = {}
            if any(items.values()):
                # measures only: every carry checked; no replay or training of stored records
                session = self._session(shape.label, check="measured", skip_db_measured=False)
                self.session = session
                if self._measurer is None:  # one warm builder and runner for every shape
                    self._measurer = MeasuringService.for_config(self.target, session.config)
                rows = cross.measure_on(session, items, self._measurer)
            result = cross.summarize(rows, failed, error, missing)
            with self._lock:
                self._cells[(source, shape.label)] = result
            self._emit("crossed", source=source, shape=shape.label,
                       measured=sum(result.measured.values()),
                       failed=sum(result.failed.values()), error=result.error)
        self._cross_seconds += time.perf_counter() - start

    # -- estimates and picks ---------------------------------------------------------------

    def _weights(self, label: str) -> dict[int, float]:
        return {t.index: float(t.weight) for t in self.tasks(label)}

    def _flop(self, label: str) -> float:
        """The shape's FLOPs (weighted over its tasks); its size where FLOPs are unknown."""
        total = sum(float(t.weight) * float(t.workload.flop) for t in self.tasks(label))
        if math.isfinite(total) and total > 0:
            return total
        return 2.0 ** self.family.log_size(self.family.shape(label))

    def _best_per_task(self, label: str) -> dict[int, float]:
        best = dict(self._own.get(label, {}))
        for (src, dst), result in self._cells.items():
            if dst == label:
                for i, us in result.best_us.items():
                    best[i] = min(best.get(i, math.inf), us)
        return best

    def _latency(self, label: str, per_task: dict[int, float],
                 fill: dict[int, float] | None = None) -> tuple[float | None, int]:
        """:func:`~msviz.workflows.shapes.regret.weighted_latency` of ``label``'s tasks."""
        return weighted_latency(self._weights(label), per_task, fill)

    def _throughput(self, label: str) -> float | None:
        """FLOPs per µs the tuned shapes reach, interpolated to ``label``'s size."""
        points = [(self.family.log_size(self.family.shape(t.label)), self._flop(t.label) / us)
                  for t in self._tuned
                  if (us := self._latency(t.label, self._own.get(t.label, {}))[0])]
        return interpolated_throughput(points, self.family.log_size(self.family.shape(label)))

    def _estimated(self, label: str) -> float | None:
        us, _ = self._latency(label, self._best_per_task(label))
        thr = self._throughput(label)
        if us is None or thr is None:
            return None
        return max(1.0, us / (self._flop(label) / thr))

    def _next(self) -> tuple[str | None, str]:
        tuned = {t.label for t in self._tuned}
        left = [s for s in self.family.shapes if s.label not in tuned]
        estimated = {s.label: self._estimated(s.label) for s in left} if tuned and (
            len(tuned) < (self.k if self.k is not None else self.max_k)) else {}
        return next_shape(self.family, tuned, estimated, k=self.k, max_k=self.max_k,
                          regret=self.regret)

    # -- the result ----------------------------------------------------------------------------

    def snapshot(self) -> ShapeCover | None:
        """The cover so far (state ``"running"``; nothing written), for live views; the
        final cover once it has ended; None before anything was tuned."""
        if self.cover is not None:
            return self.cover
        with self._lock:
            if not self._tuned:
                return None
            return self._cover("running", None)

    def _write(self, state: str) -> ShapeCover:
        with self._lock:
            work_dir = self._write_dispatch()
            cover = self._cover(state, work_dir)
        import json  # light, but only here

        (self.root / COVER_FILE).write_text(json.dumps(cover.to_dict(), indent=1))
        (self.root / TABLE_FILE).write_text(cover.table() + "\n")
        return cover

    def _cover(self, state: str, work_dir: str | None) -> ShapeCover:
        labels = [s.label for s in self.family.shapes]
        tuned = {t.label for t in self._tuned}
        cells: list[Cell] = []
        dispatch: list[Dispatch] = []
        for label in labels:
            best = self._best_per_task(label)
            for t in self._tuned:
                if t.label == label:
                    us, _ = self._latency(label, self._own.get(label, {}), best)
                    cells.append(Cell(t.label, label, us, t.trials))
                    continue
                res = self._cells.get((t.label, label))
                if res is None:
                    continue
                us, missing = self._latency(label, res.best_us, best) if res.best_us else (
                    None, 0)
                cells.append(Cell(t.label, label, us, sum(res.measured.values()),
                                  sum(res.failed.values()), res.error, missing))
            us, _ = self._latency(label, best)
            own_us = self._latency(label, self._own[label])[0] if label in tuned else None
            sources = self._sources(label, best)
            share = max(sources.items(), key=lambda kv: kv[1][1])[0] if sources else None
            dispatch.append(Dispatch(
                label, share, us, own_us,
                us / own_us if us is not None and own_us else None,
                None if label in tuned else self._estimated(label),
                {src: n for src, (n, _) in sources.items()}))
        return ShapeCover(self.family.to_dict(), str(self.target), self.trials,
                          self.regret if self.k is None else None, list(self._tuned), cells,
                          dispatch, round(self._cross_seconds, 3),
                          round(time.perf_counter() - self._t0, 3), work_dir, state,
                          root=str(self.root))

    def _sources(self, label: str, best: dict[int, float]) -> dict[str, tuple[int, float]]:
        """Per source shape: (tasks whose fastest came from it, weighted µs of them)."""
        weights = self._weights(label)
        out: dict[str, tuple[int, float]] = {}
        for i, us in best.items():
            src = label if self._own.get(label, {}).get(i) == us else next(
                (s for (s, d), r in self._cells.items() if d == label and
                 r.best_us.get(i) == us), None)
            if src is None:
                continue
            n, total = out.get(src, (0, 0.0))
            out[src] = (n + 1, total + weights.get(i, 0.0) * us)
        return out

    def _write_dispatch(self) -> str | None:
        dirs = [self._dir(s.label) for s in self.family.shapes
                if cross.has_records(self._dir(s.label))]
        if not dirs:
            return None
        out = self.root / DISPATCH_DIR
        if out.exists():
            shutil.rmtree(out)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            merge(dirs, out, target=self.target)  # one task name in two shapes' dirs warns
        notes = [str(w.message) for w in caught if "task name" not in str(w.message)]
        if notes:
            self._emit("warning", message="; ".join(notes))
        return DISPATCH_DIR
