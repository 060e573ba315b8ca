"""A session's result checks: each batch's candidates against the untuned workload's outputs.

After a batch's timings (never while the runner times) and before the build artifacts are
removed; the reference run and the comparison are :mod:`msviz.bench.schedule`'s. A wrong
candidate becomes a ``wrong_result`` failure (``run_secs=[1e10]`` in the stock database).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msviz import compat
from msviz.bench.schedule import CheckResult, Reference, last_line, validate_mode
from msviz.engine.measure.results import MeasureResult

__all__ = ["ResultChecker"]


class ResultChecker:
    """Checks a session's candidates after each batch's timings (see the module's doc).

    Parameters
    ----------
    mod : IRModule
        The task's workload.
    target : Target
        The tuning target.
    seed : int
        The session's seed (the random inputs).
    mode : {"best", "measured", "none"}
        What to check (:data:`CHECK_MODES`).
    """

    def __init__(self, mod: Any, target: Any, *, seed: int, mode: str = "best") -> None:
        self.mode = validate_mode(mode)
        self.mod = mod
        self.target = target
        self.seed = int(seed)
        self._reference: Reference | None = None

    @property
    def reference(self) -> Reference:
        if self._reference is None:
            self._reference = Reference(self.mod, self.target, seed=self.seed)
        return self._reference

    def check_artifact(self, artifact: str | None, mod: Any) -> CheckResult:
        """Check a candidate from its build artifact (rebuilt from ``mod`` if there is none)."""
        try:
            func = compat.load_module(artifact) if artifact else compat.fast_build(
                mod, self.target)
        except Exception as err:
            return CheckResult.error(f"the candidate could not be loaded: "
                                     f"{type(err).__name__}: {last_line(err)}")
        return self.reference.check(func)

    def check_batch(self, items: Sequence[tuple], built: Sequence[Any],
                    results: Sequence[MeasureResult], best_secs: float) -> list[MeasureResult]:
        """Check a measured batch; returns its results with wrong ones turned into failures.

        Parameters
        ----------
        items : sequence of (schedule, args_info, info, shash)
            The batch; each checked candidate's ``info`` gains ``check`` (``"ok"``,
            ``"wrong"``, ``"error"``) and ``check_detail``, a wrong one ``measured_run_secs``.
        built : sequence of BuildOutcome
            The batch's builds (their artifacts are loaded, so check before the cleanup).
        results : sequence of MeasureResult
            The runner's results.
        best_secs : float
            The best mean run time before this batch (``"best"`` mode checks what beats it).
        """
        out = list(results)
        if self.mode == "none":
            return out
        ran = [i for i, r in enumerate(results) if r.ok]
        if self.mode == "best":
            latency = {i: sum(results[i].run_secs) / len(results[i].run_secs) for i in ran}
            ran = sorted((i for i in ran if latency[i] < best_secs), key=latency.__getitem__)
        for i in ran:
            result = self.check_artifact(built[i].artifact, items[i][0].mod)
            info = items[i][2]
            info["check"], info["check_detail"] = result.outcome, result.detail
            if result.outcome == "wrong":
                info["measured_run_secs"] = list(results[i].run_secs or ())
                out[i] = MeasureResult(None, f"wrong result: {result.detail}", "wrong")
            elif self.mode == "best":
                break  # the fastest candidate that is not wrong: the slower ones cannot win
        return out
