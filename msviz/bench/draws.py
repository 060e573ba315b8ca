"""A built model timed in fresh processes ("draws"), so that one process's luck is not the result.

On small shared machines a build's speed is bimodal from one process to the next: the same build
times ~1x in one fresh process and ~2x in the next, and stays so for that process's life. One
process's timing can then be off by 2x; the least of a few fresh processes is not (the benchmarks
take it the same way). :func:`run_draws` exports the builds once (``export_library``), saves the
inputs, and runs :mod:`msviz.bench.draw_jobs` as a script in ``draws`` fresh Python processes,
one after the other (never two at once: they would share the cores); each loads the builds and
runs the same list of jobs, and hands back their results as JSON:

* ``{"kind": "time", "build": name, "number": n, "repeat": r}``: one untimed run, then
  ``time_evaluator`` (``number`` runs, ``repeat`` times; fewer for a build whose first run says
  they would take over :data:`TIMING_BUDGET_S`, unless ``"budget": false``; optional
  ``min_repeat_ms``, default 0); gives ``us`` (the median repeat, µs a run),
  ``number``, ``repeat``.
* ``{"kind": "calls", "build": name, "runs": r}``: each VM call timed through the instrument hook
  (:func:`time_calls`); gives ``times`` (per symbol, µs of each call), ``hook_us``, ``runs``.

Each result also has ``pid``, the process that ran it.

That script imports TVM and numpy only (not msviz: a fresh process costs about a second of
imports, msviz would double it). What to make of the draws (the least, the spread, a flag only
where every draw agrees) is the caller's: :func:`msviz.bench.model_check.end_to_end_times`,
:func:`msviz.bench.model_profile.combine_draws`.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from msviz.bench import draw_jobs
from msviz.bench.draw_jobs import NOOP_CALL, TIMING_BUDGET_S, time_calls, timing_runs
from msviz.errors import MsvizWarning

__all__ = ["DEFAULT_DRAWS", "DRAW_TIMEOUT_S", "MAX_DRAWS", "NOOP_CALL", "SLOW_FACTOR",
           "TIMING_BUDGET_S", "DrawError", "check_draws", "run_draws", "time_calls",
           "timing_runs", "without_scope_warnings"]

#: Fresh processes a model is timed in by default (the least of them is kept): 3, or
#: ``$MSVIZ_DRAWS`` when set (read at import; the test suite runs the tutorials with 1).
def _draws_from_env(text: str) -> int:
    """``$MSVIZ_DRAWS`` as a count of draws: 3 when unset; a value that is not an int in 1..20
    is named in a warning and 3 is used (an import never fails on it)."""
    if not text.strip():
        return 3
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 20:
        warnings.warn(f"MSVIZ_DRAWS={text!r} is not an int in 1..20: 3 draws are used",
                      MsvizWarning, stacklevel=2)
        return 3
    return value


DEFAULT_DRAWS = _draws_from_env(os.environ.get("MSVIZ_DRAWS", ""))
#: Seconds one draw (one fresh process: imports, loading the builds, every job) may take.
DRAW_TIMEOUT_S = 600.0
#: The most draws a caller may ask for (``MSVIZ_DRAWS`` takes 1..20 too).
MAX_DRAWS = 20
#: A timing this many times the least of its kind (the same build, other draws or rounds) is
#: taken to have fallen in the machine's slow mode: on these 2-core VMs every kernel of every
#: build runs ~1.4x (Zen 4) to ~2x (Zen 5) slower together for a while, across processes.
SLOW_FACTOR = 1.25


class DrawError(RuntimeError):
    """A draw (a fresh process timing the builds) failed; the message ends with its error."""


def check_draws(draws: Any, most: int | None = MAX_DRAWS) -> int:
    """``draws`` as an int in 1 .. ``most`` (None: no upper bound), else ValueError: a count
    asked of a user is bounded, so that a slip (``draws=10**6``) is refused at once, not
    run for days."""
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws must be an int >= 1 (fresh processes timing the model), "
                         f"got {draws!r}")
    if most is not None and draws > most:
        raise ValueError(f"draws must be at most {most} (fresh processes timing the model, "
                         f"each up to {DRAW_TIMEOUT_S:g} s), got {draws!r}")
    return draws


def run_draws(builds: Mapping[str, Any], inputs: Sequence[Any], func_name: str, device: str,
              jobs: Sequence[Mapping[str, Any]], *, draws: int = DEFAULT_DRAWS,
              timeout_s: float = DRAW_TIMEOUT_S, script: Any = None,
              extra: Mapping[str, Any] | None = None, per_draw: bool = False
              ) -> list[list[dict]]:
    """Run ``jobs`` on ``builds`` in ``draws`` fresh processes, one after the other.

    Parameters
    ----------
    builds : mapping of str to Executable
        The builds (``compile_relax`` / ``tvm.compile`` results) by the names the jobs use.
    inputs : sequence of numpy.ndarray
        The arguments of ``func_name``.
    func_name : str
        The model's entry function.
    device : str
        The device to run on (``"cpu"``, ``"cuda"``: :func:`msviz.compat.device_type`), id 0.
    jobs : sequence of dict
        See the module's docstring.
    draws : int
        Fresh processes (with ``per_draw``: ``len(jobs)``).
    timeout_s : float
        Seconds one draw may take.
    script : str | Path, optional
        The child script (default :mod:`msviz.bench.draw_jobs`; another one takes the same spec,
        e.g. :mod:`msviz.bench.runtime_jobs`).
    extra : mapping, optional
        More fields of the spec, for that script.
    per_draw : bool
        ``jobs`` is one list of jobs per draw (a child loads only what its jobs use).

    Returns
    -------
    results : list of list of dict
        Per draw, each job's result.

    Raises
    ------
    DrawError
        A draw failed (its exit status and the last line of its error output) or timed out.
    """
    import numpy as np  # heavy

    plans = [list(j) for j in jobs] if per_draw else [list(jobs)] * check_draws(draws)
    draws = check_draws(len(plans), most=None)
    with tempfile.TemporaryDirectory(prefix="msviz-draws-") as tmp:
        root = Path(tmp)
        paths = {}
        with without_scope_warnings(root / "export.err"):
            for i, (name, exe) in enumerate(builds.items()):
                paths[name] = str(root / f"build{i}.so")
                exe.export_library(paths[name])
        np.savez(root / "inputs.npz", **{f"arg{i}": np.asarray(x) for i, x in enumerate(inputs)})
        spec = {"builds": paths, "inputs": str(root / "inputs.npz"), "func_name": func_name,
                "device": device, "device_id": 0, **dict(extra or {})}
        # the child sees the modules this process sees (TVM may come from a path set at run time)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        out = []
        script = Path(script or draw_jobs.__file__).resolve()  # by path: no msviz import
        for i, plan in enumerate(plans):
            result = root / f"draw{i}.json"
            (root / f"spec{i}.json").write_text(json.dumps({**spec, "jobs": plan}))
            cmd = [sys.executable, str(script), str(root / f"spec{i}.json"), str(result)]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                      timeout=timeout_s, check=False)
            except subprocess.TimeoutExpired as err:
                raise DrawError(f"draw {i + 1} of {draws} took over {timeout_s:g} s") from err
            if proc.returncode != 0 or not result.is_file():
                lines = [x for x in (proc.stderr or "").strip().splitlines() if x.strip()]
                raise DrawError(f"draw {i + 1} of {draws} failed (exit {proc.returncode}): "
                                f"{lines[-1] if lines else 'no error output'}")
            out.append(json.loads(result.read_text()))
        return out


@contextlib.contextmanager
def without_scope_warnings(path: Path) -> Any:
    """TVM 0.27's ``VMExecutable`` logs a C++ warning ("Scope Saving:...") for each memory scope
    it saves, straight to file descriptor 2: what is written there meanwhile goes to ``path``,
    then back to the real stderr without those lines."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no file descriptor 2: nothing to quiet
        yield
        return
    try:
        with open(path, "wb") as tmp:
            os.dup2(tmp.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
        kept = [line for line in Path(path).read_bytes().splitlines(keepends=True)
                if b"Scope Saving:" not in line]
        if kept:
            os.write(2, b"".join(kept))
    finally:
        os.close(saved)


