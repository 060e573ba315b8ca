"""Result checking: does a candidate compute what the untuned workload computes?

MetaSchedule measures how fast a candidate runs, never whether its output is right; a schedule
whose tensorization does not fit the data layout (the unpacked int8 dense with the VNNI
intrinsic) "tunes" to a fast kernel that computes the wrong answer. msviz runs each checked
candidate on seeded random inputs and compares every argument afterwards with what the
reference computed on the same inputs: the untuned workload (its unscheduled PrimFunc) built by
TVM for the same target (for a GPU target: its host CPU, as an unscheduled PrimFunc has no
thread bindings). Integers must be equal; floats within ``|got - expected| <= atol + rtol *
|expected|`` (defaults by dtype, :func:`default_tolerance`).

A reduction's result depends on the order it sums in: a tiled or tensorized schedule sums in
another order than the untuned loop nest, and in a narrow float type each partial sum is rounded.
Over K terms the rounding error grows like ``sqrt(K)`` times the unit roundoff times the size of
the partial sums (an H200's fp16 tensor-core matmul of K = 1024 differs from the CPU's
sequential fp16 sum by up to 0.58 at values near 19, in 12% of the elements beyond 1e-2). So
where the workload reduces over K > 1 terms, the absolute tolerance is at least
``ROUNDING_SIGMAS * u * sqrt(K) * rms(expected)`` (:func:`rounding_atol`), the root mean square of
the expected values standing for the partial sums' size. A schedule that drops or repeats part of
a reduction still differs far beyond it (one tile of 16 terms of 1024 left out: an error of
the order of ``rms(expected) / 8`` in every element).

A session checks after a batch's timings (never while the runner times) and before the build
artifacts are removed, reusing them (``msviz.engine.measure.check.ResultChecker``). A candidate
that computes a wrong answer is committed to the stock database with MetaSchedule's failure marker
``run_secs=[1e10]``, so it is never the best, neither for msviz nor for
``compile_tir``/``compile_relax``; the times the runner measured stay in the sidecar
(``measured_run_secs``), and the cost model learns it as a failure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from msviz import compat

__all__ = [
    "CHECK_MODES",
    "CheckResult",
    "Reference",
    "check_schedule",
    "compare",
    "default_tolerance",
    "random_inputs",
    "reduction_length",
    "rounding_atol",
    "validate_mode",
]

#: What a session checks: ``"best"`` every candidate that would become the best so far (the
#: fastest of a batch that beat the best, then the next fastest while they are wrong),
#: ``"measured"`` every candidate that ran, ``"none"`` nothing.
CHECK_MODES = ("best", "measured", "none")

#: (rtol, atol) by float dtype; integer and boolean outputs must be equal.
_FLOAT_TOLERANCE = {
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "float32": (1e-4, 1e-4),
    "float64": (1e-7, 1e-7),
}


#: How many standard deviations of the summation's rounding error the tolerance allows (the
#: largest of a million elements lies about 5 deviations out).
ROUNDING_SIGMAS = 8.0

#: Beyond this share of the values' size the summation's rounding leaves nothing to compare:
#: the check says it cannot decide rather than pass every answer.
MAX_ROUNDING_SHARE = 0.5

#: Unit roundoff of float types NumPy may not hold (``finfo(dtype).eps / 2`` for the others).
_UNIT_ROUNDOFF = {"bfloat16": 2.0 ** -8, "float8_e4m3fn": 2.0 ** -4, "float8_e5m2": 2.0 ** -3}


def _unit_roundoff(dtype: str) -> float:
    if dtype in _UNIT_ROUNDOFF:
        return _UNIT_ROUNDOFF[dtype]
    try:
        return float(np.finfo(np.dtype(dtype)).eps) / 2.0
    except TypeError:
        return 2.0 ** -4  # another narrow format: as coarse as float8


def rounding_atol(dtype: str, reduction: int, expected: np.ndarray) -> float:
    """The absolute error a reduction of ``reduction`` terms may carry in ``dtype`` from its
    summation order alone: ``ROUNDING_SIGMAS * u * sqrt(reduction) * rms(expected)`` (0 for
    no reduction or no finite values)."""
    if reduction <= 1 or expected.size == 0:
        return 0.0
    values = expected.astype(np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return 0.0
    rms = float(np.sqrt(np.mean(values * values)))
    return ROUNDING_SIGMAS * _unit_roundoff(str(dtype)) * math.sqrt(reduction) * rms


def reduction_length(mod: Any) -> int:
    """The most terms any block of ``mod`` sums into one element: the product of its reduction
    iterators' extents (1 where nothing reduces; a non-constant extent counts as 1)."""
    longest = 1
    for _, func in mod.functions_items():
        if not isinstance(func, compat.tir.PrimFunc):
            continue
        for block in compat.sblocks(func):
            terms = 1
            for iv in block.iter_vars:
                if int(iv.iter_type) == 2:  # commutative reduction
                    terms *= int(getattr(iv.dom.extent, "value", 1))
            longest = max(longest, terms)
    return longest


def validate_mode(mode: Any) -> str:
    """``mode`` if it is one of :data:`CHECK_MODES`, else a ValueError naming them."""
    if mode not in CHECK_MODES:
        raise ValueError(f"check must be one of {', '.join(map(repr, CHECK_MODES))}, "
                         f"not {mode!r}")
    return mode


def default_tolerance(dtype: str) -> tuple[float, float]:
    """``(rtol, atol)`` for outputs of ``dtype``: ``(0, 0)`` (exact) for integers and booleans."""
    dtype = str(dtype)
    if dtype in _FLOAT_TOLERANCE:
        return _FLOAT_TOLERANCE[dtype]
    if dtype.startswith(("float", "bfloat")):
        return (1e-2, 1e-2)  # float8 and other narrow formats
    return (0.0, 0.0)


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one result check.

    Attributes
    ----------
    ok : bool
        The candidate's outputs equal the reference's (within the tolerance for floats).
    max_abs_diff : float
        Largest ``|got - expected|`` over all arguments (``inf`` for a NaN where a number was
        expected, ``nan`` when nothing could be compared).
    detail : str
        The max abs diff and where, how many elements differ, the tolerance; or the error.
    outcome : {"ok", "wrong", "error"}
        ``"error"``: the check itself could not run (no device here, the reference or the
        candidate failed to build or load); the candidate is then neither right nor wrong.
    """

    ok: bool
    max_abs_diff: float
    detail: str
    outcome: str = "ok"

    @classmethod
    def error(cls, detail: str) -> CheckResult:
        return cls(False, math.nan, detail, "error")


def _arg_specs(mod: Any) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, shape, dtype) of each argument of the module's entry PrimFunc, in order."""
    infos = compat.ArgInfo.from_entry_func(mod, remove_preproc=True)
    func = next(iter(mod.functions.values())) if len(mod.functions) == 1 else mod["main"]
    names = [str(getattr(p, "name", None) or getattr(p, "name_hint", None) or f"arg{i}")
             for i, p in enumerate(func.params)]
    specs = []
    for i, info in enumerate(infos):
        name = names[i] if i < len(names) else f"arg{i}"
        specs.append((name, tuple(int(s) for s in info.shape), str(info.dtype)))
    return specs


def random_inputs(mod: Any, seed: int) -> list[np.ndarray]:
    """Seeded random values for every argument of ``mod``'s entry function (outputs too).

    Floats uniform in [-1, 1); 8-bit integers over their whole range (what int8 kernels get);
    wider integers in [-64, 64) ([0, 64) unsigned), so sums cannot overflow; booleans 0/1.
    """
    rng = np.random.default_rng(int(seed))
    out = []
    for name, shape, dtype in _arg_specs(mod):
        if dtype.startswith(("float", "bfloat")):
            try:
                np_dtype = np.dtype(dtype)
            except TypeError:
                raise ValueError(f"argument {name} has dtype {dtype}, which NumPy cannot hold: "
                                 "pass inputs=... yourself") from None
            out.append(rng.uniform(-1.0, 1.0, shape).astype(np_dtype))
        elif dtype == "bool":
            out.append(rng.integers(0, 2, shape).astype(bool))
        elif dtype in ("int8", "uint8"):
            info = np.iinfo(dtype)
            out.append(rng.integers(int(info.min), int(info.max) + 1, shape).astype(dtype))
        elif dtype.startswith("uint"):
            out.append(rng.integers(0, 64, shape).astype(dtype))
        elif dtype.startswith("int"):
            out.append(rng.integers(-64, 64, shape).astype(dtype))
        else:
            raise ValueError(f"argument {name} has dtype {dtype}: msviz cannot make random "
                             "inputs for it; pass inputs=... yourself")
    return out


def _inputs_for(mod: Any, inputs: Any, seed: int) -> list[np.ndarray]:
    """``inputs`` (a sequence in argument order, or a dict by argument name; missing ones
    random) checked against the arguments' shapes and dtypes."""
    specs = _arg_specs(mod)
    arrays = random_inputs(mod, seed)
    if inputs is None:
        return arrays
    names = [name for name, _, _ in specs]
    if isinstance(inputs, Mapping):
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise ValueError(f"inputs name unknown argument(s) {', '.join(unknown)}; the "
                             f"arguments are {', '.join(names)}")
        given = {names.index(k): v for k, v in inputs.items()}
    elif isinstance(inputs, Sequence):
        if len(inputs) > len(specs):
            raise ValueError(f"{len(inputs)} inputs given for {len(specs)} arguments "
                             f"({', '.join(names)})")
        given = dict(enumerate(inputs))
    else:
        raise TypeError(f"inputs must be a list of arrays or a dict by argument name, not "
                        f"{type(inputs).__name__}")
    for i, value in given.items():
        name, shape, dtype = specs[i]
        array = np.asarray(value)
        if array.shape != shape:
            raise ValueError(f"input {name} has shape {array.shape}; the argument's is {shape}")
        arrays[i] = array.astype(dtype)
    return arrays


def compare(got: Sequence[np.ndarray], expected: Sequence[np.ndarray], names: Sequence[str],
            *, rtol: float | None = None, atol: float | None = None,
            reduction: int = 1) -> CheckResult:
    """Compare every argument after a candidate's run with the reference's.

    ``rtol``/``atol`` override the dtype defaults (:func:`default_tolerance`) for float
    arguments; integers must be equal. ``reduction``: how many terms the workload sums into an
    element (:func:`reduction_length`); unless ``atol`` is given, a float argument's absolute
    tolerance is at least what summing that many terms in another order may round to
    (:func:`rounding_atol`).
    """
    worst = 0.0
    wrong: list[str] = []
    tolerances = set()
    for name, g, e in zip(names, got, expected, strict=True):
        if g.shape != e.shape:
            return CheckResult(False, math.inf, f"{name} has shape {g.shape}, expected "
                               f"{e.shape}", "wrong")
        if g.size == 0:
            continue
        if np.issubdtype(e.dtype, np.floating):
            r0, a0 = default_tolerance(str(e.dtype))
            r = r0 if rtol is None else float(rtol)
            a = a0 if atol is None else float(atol)
            summed = rounding_atol(str(e.dtype), reduction, e) if atol is None else 0.0
            spread = ROUNDING_SIGMAS * _unit_roundoff(str(e.dtype)) * math.sqrt(max(
                reduction, 1))
            if atol is None and spread > MAX_ROUNDING_SHARE:
                return CheckResult.error(
                    f"{name} cannot be checked: a sum of {reduction} {e.dtype} terms may round "
                    f"by up to {spread:.2g}x the size of its values in another order; pass "
                    "atol=... to compare anyway")
            if summed > a:
                a = summed
                tolerances.add(f"rtol={r:g} atol={a:.3g} ({e.dtype} sums of {reduction} terms)")
            else:
                tolerances.add(f"rtol={r:g} atol={a:g}")
            g64, e64 = g.astype(np.float64), e.astype(np.float64)
            bad = ~np.isclose(g64, e64, rtol=r, atol=a, equal_nan=True)
            with np.errstate(invalid="ignore"):
                diff = np.abs(g64 - e64)
            diff[np.isnan(g64) & np.isnan(e64)] = 0.0
            diff[np.isnan(diff)] = math.inf
        else:
            diff = np.abs(g.astype(np.int64) - e.astype(np.int64)).astype(np.float64)
            bad = diff != 0
        at = np.unravel_index(int(np.argmax(diff)), diff.shape)
        top = float(diff[at])
        worst = max(worst, top)
        if bad.any():
            first = np.unravel_index(int(np.argmax(np.where(bad, diff, -1.0))), diff.shape)
            where = ", ".join(map(str, first))
            wrong.append(
                f"{name} differs in {int(bad.sum())} of {bad.size} elements "
                f"({100.0 * bad.mean():.1f}%); max abs diff {float(diff[first]):.6g} at "
                f"{name}[{where}] (got {g[first].item()!r}, expected {e[first].item()!r})")
    tol = "; ".join(sorted(tolerances)) or "exact"
    if wrong:
        return CheckResult(False, worst, "; ".join(wrong) + f" [{tol}]", "wrong")
    return CheckResult(True, worst, f"matches the untuned workload: max abs diff {worst:.3g} "
                       f"[{tol}]", "ok")


def _reference_target(target: Any) -> Any:
    """Where the untuned workload is built: the target itself on a CPU, else its host."""
    if compat.device_type(target) == "cpu":
        return target
    return target.host if target.host is not None else compat.make_target("llvm")


def parallel_reference(mod: Any) -> Any:
    """``mod`` with the outer spatial loops of each top-level loop nest fused and made
    parallel: every element computed as before (its sum in the same order), on every core.

    An unscheduled workload runs its loops on one thread: a convolution's reference took
    seconds in a model's first batches. Per nest, the longest run of outer loops that TVM
    lets run in parallel is taken (none where its outermost loop reduces); a function or nest
    the schedule cannot change is left as it was."""
    try:
        sch = compat.Schedule(mod)
        names = [gv.name_hint for gv, func in mod.functions_items()
                 if isinstance(func, compat.tir.PrimFunc)]
    except Exception:
        return mod
    for name in names:
        try:
            sch.work_on(name)
            blocks = [sch.get(b).name_hint for b in sch.get_child_blocks(sch.get_sblock("root"))]
        except Exception:
            continue
        for block in blocks:
            loops = len(sch.get_loops(sch.get_sblock(block)))
            for k in range(loops, 0, -1):  # the most outer loops first
                trial = sch.copy()
                try:
                    outer = trial.get_loops(trial.get_sblock(block))[:k]
                    trial.parallel(trial.fuse(*outer) if k > 1 else outer[0])
                except Exception:
                    continue
                sch = trial
                break
    return sch.mod


def _run(func: Any, arrays: Sequence[np.ndarray], device: Any) -> list[np.ndarray]:
    tensors = [compat.to_tensor(np.array(a, copy=True), device) for a in arrays]
    func(*tensors)
    return [t.numpy() for t in tensors]


class Reference:
    """The untuned workload built once, and its outputs on seeded inputs (computed once).

    Parameters
    ----------
    mod : IRModule
        The workload (one PrimFunc, unscheduled).
    target : Target
        The tuning target (the reference runs on the target's device when it is a CPU, else
        on its host).
    seed : int
        Seed of the random inputs.
    inputs : list or dict, optional
        Inputs instead of random ones (see :func:`check_schedule`).
    """

    def __init__(self, mod: Any, target: Any, *, seed: int = 0, inputs: Any = None) -> None:
        self.mod = mod
        self.target = target
        self.names = [name for name, _, _ in _arg_specs(mod)]
        self.inputs = _inputs_for(mod, inputs, seed)
        self.reduction = reduction_length(mod)
        self._expected: list[np.ndarray] | None = None
        self._error: str | None = None

    @property
    def expected(self) -> list[np.ndarray]:
        """Every argument after the untuned workload ran (RuntimeError if it could not)."""
        if self._expected is None and self._error is None:
            try:
                ref_target = _reference_target(self.target)
                func = compat.compile_module(parallel_reference(self.mod), ref_target)
                self._expected = _run(func, self.inputs, compat.device_of(ref_target))
            except Exception as err:
                self._error = f"the untuned workload could not be built or run as the " \
                              f"reference: {type(err).__name__}: {last_line(err)}"
        if self._error is not None:
            raise RuntimeError(self._error)
        return self._expected  # type: ignore[return-value]

    def check(self, func: Any, *, rtol: float | None = None,
              atol: float | None = None) -> CheckResult:
        """Run a built candidate (a callable runtime module) on the inputs and compare."""
        try:
            expected = self.expected
        except RuntimeError as err:
            return CheckResult.error(str(err))
        try:
            got = _run(func, self.inputs, compat.device_of(self.target))
        except Exception as err:
            return CheckResult.error(f"the candidate could not run here: "
                                     f"{type(err).__name__}: {last_line(err)}")
        return compare(got, expected, self.names, rtol=rtol, atol=atol,
                       reduction=self.reduction)


def last_line(err: BaseException) -> str:
    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def check_schedule(mod: Any, workload_mod: Any, target: Any, *, inputs: Any = None,
                   rtol: float | None = None, atol: float | None = None,
                   seed: int = 0) -> CheckResult:
    """Build a scheduled module and the untuned workload, run both, compare.

    Parameters
    ----------
    mod : IRModule
        The candidate (a schedule's ``mod``).
    workload_mod : IRModule
        The untuned workload it was scheduled from.
    target : Target
        What to build both for.
    inputs : list or dict, optional
        Arrays for the arguments in order, or by argument name; the others (all when None)
        seeded random (:func:`random_inputs`). Output arguments may be given too: both runs
        start from the same values.
    rtol, atol : float, optional
        Float tolerance (dtype defaults when None).
    seed : int
        Seed of the random inputs.
    """
    reference = Reference(workload_mod, target, seed=seed, inputs=inputs)
    try:
        func = compat.fast_build(mod, target)
    except Exception as err:
        return CheckResult.error(f"the candidate could not be built: {type(err).__name__}: "
                                 f"{last_line(err)}")
    return reference.check(func, rtol=rtol, atol=atol)
