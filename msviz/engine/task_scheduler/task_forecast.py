"""Each task's forecast: its best latency against the seconds spent on it, with an uncertainty
band, and the model's weighted latency after more seconds of tuning.

Users budget tuning in seconds, so the question a task scheduler answers is "which task buys
the most model latency with the next few seconds?". Like DynaTune (Yu et al., ICLR 2021), this
models each task's best latency against the seconds spent on it, with an uncertainty band; the
``"forecast"`` task scheduler, :class:`~msviz.engine.task_scheduler.forecast.Forecasting` in
:mod:`msviz.engine.task_scheduler.forecast`, gives the next batch to the task with the best
optimistic gain (an upper confidence bound) per second. Pure: no TVM, no threads, no randomness.

The model, per task with best latency ``b`` (ms, the least valid entry of its history ``h``)
and ``n = len(h)`` joined batches:

* Joined batch ``i`` (0-based, ``i >= 1``) changes the best by the log-ratio
  ``r = min(0, ln(h[i] / h[i-1]))``; pairs with an entry at or above ``INVALID_MS`` are skipped.
  If the best followed a power law of the batches, ``b ~ batches ** s`` (``s <= 0``), then
  ``r = s * ln((i + 1) / i)``: so each log-ratio gives a slope ``s = r / ln(1 + 1/i)``
  (:func:`slopes`), comparable between tasks at different stages.
* Empirical Bayes: every task's slopes are pooled into a prior: mean ``m0`` and variance ``s2``
  (the sample variance; :data:`DEFAULT_SLOPE`, :data:`DEFAULT_VAR` while the pool is too
  small). A task's own slopes, weighted ``decay ** age`` (age 0: its latest; recent batches
  weigh more, as a curve bends), give ``c = sum(weights)`` and a weighted mean ``sbar``; its
  mean is shrunk to the pool as in a normal-normal update with the pool worth ``prior_count``
  batches: ``m = (prior_count * m0 + c * sbar) / (prior_count + c)``, predictive variance
  ``s2 * (1 + 1 / (prior_count + c))``. A task with one batch (no slope yet) gets the pool's.
* The next batch's log-ratio is ``R ~ N(mu, v)``: ``mu = g * m``, ``v = g**2 * s2 * (1 + 1 /
  (prior_count + c))``, ``g = ln(1 + 1/n)``. Since a best can only go down, the best after it
  is ``b * exp(min(R, 0))``: its mean is ``b * (exp(mu + v/2) Phi(-(mu + v)/sd) + Phi(mu/sd))``
  and its ``band`` central interval ``b * exp(min(mu -+ z sd, 0))``, ``z = Phi^-1((1 + band)
  / 2)``.
* After ``k`` more batches (``k = seconds / batch_s``, not necessarily whole) the same formulas
  with ``K * mu`` and ``K * v``, where ``K = ln(1 + k/n) / ln(1 + 1/n)``
  (:func:`effective_batches`: the power law's diminishing returns; ``K = 1`` at ``k = 1``,
  ``K ~ k`` while ``k << n``). The log latency is a drifting random walk in ``K``, clipped at
  ``b`` at the end (the running minimum is not modelled), so the band widens as ``sqrt(K)``.
* A batch's seconds: the mean of the task's own batch costs (the differences of its
  ``seconds_history``, counted from zero), else the mean over every task's (1 s if none).

The same concept drawn: :mod:`msviz.views.forecast`.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from msviz.engine.task_scheduler.scheduler import TaskState, is_valid_ms

__all__ = [
    "DEFAULT_BATCH_S",
    "DEFAULT_SLOPE",
    "DEFAULT_VAR",
    "Curve",
    "Forecast",
    "ModelForecast",
    "Pool",
    "band_z",
    "batch_costs",
    "best_latency",
    "curve",
    "effective_batches",
    "forecast_task",
    "model_forecast",
    "pool_of",
    "slopes",
]

#: The prior slope while no task has two valid batches: ``b ~ batches ** -0.3`` (the second
#: batch removes 19%, the eleventh 3%).
DEFAULT_SLOPE = -0.3
#: The prior variance of a slope while fewer than two slopes are known (sd 0.3).
DEFAULT_VAR = 0.09
#: The smallest variance used (a pool of equal log-ratios, e.g. all 0, has none).
VAR_FLOOR = 1e-6
#: The steepest slope a batch is taken to show: a best latency that halves as the batches
#: double. A single lucky drop (10 -> 2.5 us in one batch: slope -2) would otherwise be carried
#: on as a power law over hundreds of batches.
MIN_SLOPE = -1.0
#: A forecast carried over a horizon (:func:`curve`, :func:`model_forecast`) saturates toward this
#: share of the task's best now and never passes it: tuning curves flatten, power laws do not.
HORIZON_FLOOR = 0.25
#: A batch's seconds while no batch cost is known.
DEFAULT_BATCH_S = 1.0
#: The shortest batch assumed (a score divides by it).
MIN_BATCH_S = 1e-6

_NORMAL = NormalDist()


# -- the data -------------------------------------------------------------------------------------


def _valid(ms: float) -> bool:
    return is_valid_ms(ms) and ms > 0


def slopes(history_ms: Sequence[float]) -> list[float]:
    """Per joined batch ``i >= 1`` of a best-latency history, the power-law slope of its
    log-ratio: ``min(0, ln(h[i] / h[i-1])) / ln(1 + 1/i)``, not below :data:`MIN_SLOPE`; a
    pair with an invalid entry (``>= INVALID_MS``) gives none."""
    return [max(MIN_SLOPE, min(0.0, math.log(b / a)) / math.log1p(1 / i))
            for i, (a, b) in enumerate(itertools.pairwise(history_ms), start=1)
            if _valid(a) and _valid(b)]


def batch_costs(seconds_history: Sequence[float]) -> list[float]:
    """Each joined batch's seconds: the differences of the cumulative ``seconds_history``
    (counted from zero); negative or non-finite differences are dropped."""
    out, last = [], 0.0
    for s in seconds_history:
        cost = s - last
        if math.isfinite(cost) and cost >= 0:
            out.append(cost)
        last = s
    return out


@dataclass(frozen=True)
class Pool:
    """The prior every task's forecast is shrunk to (see :func:`pool_of`).

    Parameters
    ----------
    mean, var : float
        Of a batch's slope (see :func:`slopes`), over every task's batches.
    count : int
        Slopes pooled.
    batch_s : float
        A batch's mean seconds over every task's known batches.
    prior_count : float
        How many batches the pool is worth against a task's own.
    decay : float
        The weight of a task's batch per batch of age (1: all equal).
    """

    mean: float = DEFAULT_SLOPE
    var: float = DEFAULT_VAR
    count: int = 0
    batch_s: float = DEFAULT_BATCH_S
    prior_count: float = 2.0
    decay: float = 0.9


def pool_of(tasks: Sequence[TaskState], *, prior_count: float = 2.0,
            decay: float = 0.9) -> Pool:
    """Pool every task's slopes (unweighted) and batch costs into a :class:`Pool`.

    The mean is :data:`DEFAULT_SLOPE` with no slope, the variance the sample variance
    (``ddof=1``) from two on (:data:`DEFAULT_VAR` before), at least :data:`VAR_FLOOR`.
    """
    if prior_count <= 0:
        raise ValueError(f"prior_count must be > 0, not {prior_count}")
    if not 0 < decay <= 1:
        raise ValueError(f"decay must be in (0, 1], not {decay}")
    values = [v for t in tasks for v in slopes(t.best_history_ms)]
    costs = [c for t in tasks for c in batch_costs(t.seconds_history)]
    count = len(values)
    mean = math.fsum(values) / count if count else DEFAULT_SLOPE
    var = (math.fsum((v - mean) ** 2 for v in values) / (count - 1) if count >= 2
           else DEFAULT_VAR)
    return Pool(mean=mean, var=max(var, VAR_FLOOR), count=count,
                batch_s=math.fsum(costs) / len(costs) if costs else DEFAULT_BATCH_S,
                prior_count=float(prior_count), decay=float(decay))


# -- one task's forecast --------------------------------------------------------------------------


@dataclass(frozen=True)
class Forecast:
    """A task's forecast for its next batch.

    Parameters
    ----------
    best_ms : float
        Its best latency now.
    batch_s : float
        The expected seconds of its next batch.
    expected_ms : float
        The expected best after the next batch.
    low_ms, high_ms : float
        The ``band`` central interval of that best (``high_ms <= best_ms``).
    gain_us : float
        The expected reduction of the model's weighted latency: ``weight * (best - expected)``,
        in microseconds.
    optimistic_gain_us : float
        The same with ``low_ms``: the optimistic end of the band.
    score : float
        ``optimistic_gain_us / batch_s``: what the scheduler ranks tasks by.
    log_ratio, log_sd : float
        The next batch's log-ratio: mean and standard deviation.
    slope : float
        The task's slope (the power law's exponent): the pool's shrunk to its own.
    own_weight : float
        How much of ``slope`` is the task's own batches' (the rest is the pool's).
    """

    best_ms: float
    batch_s: float
    expected_ms: float
    low_ms: float
    high_ms: float
    gain_us: float
    optimistic_gain_us: float
    score: float
    log_ratio: float
    log_sd: float
    slope: float
    own_weight: float


def band_z(band: float) -> float:
    """The normal quantile of a central ``band`` (``Phi^-1((1 + band) / 2)``); raises
    ``ValueError`` unless ``0 < band < 1``."""
    if not 0 < band < 1:
        raise ValueError(f"band must be in (0, 1), not {band}")
    return _NORMAL.inv_cdf(0.5 + band / 2)


def _clipped(best: float, mu: float, var: float, z: float) -> tuple[float, float, float]:
    """The mean, low and high of ``best * exp(min(R, 0))`` with ``R ~ N(mu, var)``."""
    if var <= 0:
        value = best * math.exp(min(mu, 0.0))
        return value, value, value
    sd = math.sqrt(var)
    mean = (math.exp(mu + var / 2) * _NORMAL.cdf(-(mu + var) / sd) + _NORMAL.cdf(mu / sd))
    return (min(best * mean, best), best * math.exp(min(mu - z * sd, 0.0)),
            best * math.exp(min(mu + z * sd, 0.0)))


def _floored(best: float, values: tuple[float, float, float]) -> tuple[float, float, float]:
    """``values`` (mean, low, high) saturated toward :data:`HORIZON_FLOOR` x ``best``: a
    log-reduction ``x <= 0`` becomes ``-L (1 - exp(x / L))`` with ``L = -ln(HORIZON_FLOOR)``,
    about ``x`` while small, never past ``-L``; monotone, so the band keeps its order."""
    limit = -math.log(HORIZON_FLOOR)

    def saturate(value: float) -> float:
        x = min(0.0, math.log(value / best)) if value > 0 else -math.inf
        return best * math.exp(-limit * (1 - math.exp(x / limit)))

    return saturate(values[0]), saturate(values[1]), saturate(values[2])


def _posterior(history_ms: Sequence[float], pool: Pool) -> tuple[float, float, float, float]:
    """A task's slope (mean, predictive variance), its own batches' share of that mean, and the
    next batch's stage factor ``ln(1 + 1/n)``."""
    own = slopes(history_ms)
    weights = [pool.decay ** (len(own) - 1 - j) for j in range(len(own))]
    c = math.fsum(weights)
    sbar = math.fsum(w * r for w, r in zip(weights, own)) / c if c else 0.0
    share = c / (pool.prior_count + c)
    return ((1 - share) * pool.mean + share * sbar, pool.var * (1 + 1 / (pool.prior_count + c)),
            share, math.log1p(1 / max(len(history_ms), 1)))


def best_latency(state: TaskState) -> float | None:
    """A task's best valid latency (ms), None without one."""
    valid = [h for h in state.best_history_ms if _valid(h)]
    return min(valid) if valid else None


def forecast_task(state: TaskState, pool: Pool, band: float = 0.8) -> Forecast:
    """A task's forecast for its next batch (see the module's docstring).

    Raises
    ------
    ValueError
        If the task has no valid best latency yet.
    """
    z = band_z(band)
    best = best_latency(state)
    if best is None:
        raise ValueError("the task has no valid best latency to forecast from")
    slope, slope_var, share, g = _posterior(state.best_history_ms, pool)
    mu, var = g * slope, g * g * slope_var
    costs = batch_costs(state.seconds_history)
    batch_s = max(math.fsum(costs) / len(costs) if costs else pool.batch_s, MIN_BATCH_S)
    expected, low, high = _clipped(best, mu, var, z)
    gain = state.weight * (best - expected) * 1e3
    optimistic = state.weight * (best - low) * 1e3
    return Forecast(best_ms=best, batch_s=batch_s, expected_ms=expected, low_ms=low,
                    high_ms=high, gain_us=gain, optimistic_gain_us=optimistic,
                    score=optimistic / batch_s, log_ratio=mu, log_sd=math.sqrt(var),
                    slope=slope, own_weight=share)


def effective_batches(k: float, joined: int) -> float:
    """``K = ln(1 + k/n) / ln(1 + 1/n)``: how many next batches ``k`` more batches of a task of
    ``n`` joined batches are worth, if its best follows a power law of its batches (the sum of
    ``ln((n + j) / (n + j - 1)) / ln((n + 1) / n)`` over ``j = 1 .. k``); ``k`` if ``n = 0``."""
    if joined <= 0 or k <= 0:
        return max(k, 0.0)
    return math.log1p(k / joined) / math.log1p(1 / joined)


@dataclass(frozen=True)
class Curve:
    """A task's forecast best latency (ms) over the seconds from now (0: now)."""

    seconds: list[float]
    mean_ms: list[float]
    low_ms: list[float]
    high_ms: list[float]


def curve(state: TaskState, pool: Pool, horizon_s: float, band: float = 0.8,
          points: int = 21) -> Curve:
    """A task's forecast carried over ``horizon_s`` seconds of its own batches.

    At ``t`` seconds, ``k = t / batch_s`` batches, worth ``K`` next batches
    (:func:`effective_batches`): the next-batch formulas with ``K * mu`` and ``K * v`` (the band
    widens as ``sqrt(K)``); ``points`` evenly spaced times from 0 on.
    """
    if points < 2:
        raise ValueError(f"points must be >= 2, not {points}")
    if not horizon_s > 0:
        raise ValueError(f"horizon_s must be > 0, not {horizon_s}")
    f = forecast_task(state, pool, band)
    z, var = band_z(band), f.log_sd ** 2
    out = Curve([], [], [], [])
    for j in range(points):
        t = horizon_s * j / (points - 1)
        k = effective_batches(t / f.batch_s, len(state.best_history_ms))
        mean, low, high = _floored(f.best_ms, _clipped(f.best_ms, k * f.log_ratio, k * var, z))
        for values, v in ((out.seconds, t), (out.mean_ms, mean), (out.low_ms, low),
                          (out.high_ms, high)):
            values.append(v)
    return out


# -- the whole model ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelForecast:
    """The model's weighted latency (``sum(weight * best)``, us) after ``horizon_s`` seconds.

    ``batches`` is how many batches each task is given; ``unknown`` the tasks left out of the
    sums (no valid best latency yet).
    """

    horizon_s: float
    now_us: float
    mean_us: float
    low_us: float
    high_us: float
    batches: tuple[int, ...]
    unknown: tuple[int, ...]


def model_forecast(tasks: Sequence[TaskState], pool: Pool, horizon_s: float,
                   band: float = 0.8, *, max_batches: int = 100_000) -> ModelForecast:
    """The model's weighted latency after ``horizon_s`` more seconds of tuning.

    Assumes: each task never tried (empty history) first gets one batch of ``pool.batch_s``
    seconds; then the seconds go, batch by batch, to the alive task whose next batch has the
    largest optimistic gain per second along its own :func:`curve` (gains diminish as a power
    law's), while a batch fits; every forecast holds (no new data). Tasks are independent: each
    side of the band is the per-task half-widths added in quadrature (clipped at ``now_us``).
    Tasks without a valid best latency are left out of the sums (``unknown``).
    """
    z = band_z(band)
    alive = [not t.done and not t.skipped for t in tasks]
    remaining = horizon_s - pool.batch_s * sum(
        1 for t, a in zip(tasks, alive) if a and not t.best_history_ms)
    forecasts = [forecast_task(t, pool, band) if best_latency(t) is not None else None
                 for t in tasks]

    def at(i: int, k: int) -> tuple[float, float, float]:
        f, big_k = forecasts[i], effective_batches(k, len(tasks[i].best_history_ms))
        return _floored(f.best_ms,
                        _clipped(f.best_ms, big_k * f.log_ratio, big_k * f.log_sd ** 2, z))

    def low_at(i: int, k: int) -> float:
        return at(i, k)[1]

    def entry(i: int, k: int) -> tuple[float, int, int]:
        gain = tasks[i].weight * (low_at(i, k) - low_at(i, k + 1)) * 1e3
        return (-gain / forecasts[i].batch_s, i, k)

    batches = [0] * len(tasks)
    heap = [entry(i, 0) for i, f in enumerate(forecasts) if f is not None and alive[i]]
    heapq.heapify(heap)
    for _ in range(max_batches):
        while heap and forecasts[heap[0][1]].batch_s > remaining:
            heapq.heappop(heap)  # its batch does not fit (and never will: remaining shrinks)
        if not heap or heap[0][0] >= 0:
            break
        _, i, k = heapq.heappop(heap)
        batches[i], remaining = k + 1, remaining - forecasts[i].batch_s
        heapq.heappush(heap, entry(i, k + 1))
    now = mean = down = up = 0.0
    for i, f in enumerate(forecasts):
        if f is None:
            continue
        w = tasks[i].weight * 1e3
        m, low, high = at(i, batches[i])
        now, mean = now + w * f.best_ms, mean + w * m
        down, up = down + (w * (m - low)) ** 2, up + (w * (high - m)) ** 2
    return ModelForecast(horizon_s=horizon_s, now_us=now, mean_us=mean,
                         low_us=mean - math.sqrt(down), high_us=min(now, mean + math.sqrt(up)),
                         batches=tuple(batches),
                         unknown=tuple(i for i, f in enumerate(forecasts) if f is None))
