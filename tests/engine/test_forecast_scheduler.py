"""The forecast task scheduler against forecasts, picks and reasons worked out by hand."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from msviz.engine.task_scheduler.forecast import Forecasting
from msviz.engine.task_scheduler.kinds import SCHEDULERS, create
from msviz.engine.task_scheduler.scheduler import (
    GradientBased,
    Pick,
    TaskState,
)
from msviz.engine.task_scheduler.task_forecast import (
    DEFAULT_SLOPE,
    DEFAULT_VAR,
    Pool,
    batch_costs,
    curve,
    effective_batches,
    forecast_task,
    model_forecast,
    pool_of,
    slopes,
)

Z80 = 1.2815515655446004  # the standard normal's 90% quantile: an 80% central band


def phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def by_hand(best: float, mu: float, var: float, z: float = Z80) -> tuple[float, float, float]:
    """Mean, low, high of best * exp(min(R, 0)), R ~ N(mu, var), written out independently."""
    sd = math.sqrt(var)
    below = math.exp(mu + var / 2) * phi((0 - mu - var) / sd)  # E[e^R; R < 0]
    above = 1 - phi((0 - mu) / sd)  # P(R >= 0): the best stays
    return best * (below + above), best * min(1.0, math.exp(mu - z * sd)), \
        best * min(1.0, math.exp(mu + z * sd))


def sat(best: float, values: tuple[float, ...]) -> tuple[float, ...]:
    """A horizon's saturation toward a quarter of ``best``, by hand: the log-reduction x of
    each value becomes -ln4 (1 - 4 ** (x / ln4) ... written as exp)."""
    big = math.log(4.0)
    return tuple(best * math.exp(-big * (1 - math.exp(math.log(v / best) / big)))
                 for v in values)


def test_a_horizon_saturates_at_a_quarter_of_the_best() -> None:
    assert sat(8.0, (8.0,)) == (8.0,)
    assert sat(8.0, (1e-9,))[0] == pytest.approx(2.0, rel=1e-6)  # never below 8 / 4
    assert sat(8.0, (7.9,))[0] == pytest.approx(7.9, rel=1e-3)  # a small step barely moves


def test_slopes_and_batch_costs() -> None:
    # batch 2 -> 3 halves: ln(1/2) / ln(3/2) = -1.71, steeper than the steepest kept (-1);
    # 3 -> 4: no change; a pair with an invalid entry: none
    assert math.log(0.5) / math.log(3 / 2) < -1.7
    assert slopes([1e9, 8.0, 4.0, 4.0]) == pytest.approx([-1.0, 0.0])
    assert slopes([1e9, 8.0, 6.0]) == pytest.approx([math.log(0.75) / math.log(3 / 2)])
    assert slopes([8.0, 4.0]) == pytest.approx([-1.0])  # halving from batch 1 to 2: n ** -1
    assert slopes([5.0]) == [] and slopes([]) == []
    assert batch_costs([2.0, 5.0, 5.0, 4.0, 6.0]) == [2.0, 3.0, 0.0, 2.0]  # -1 dropped


def test_mean_of_clipped_lognormal_against_quadrature() -> None:
    # by_hand's closed form against a numerical integral over the normal density
    mu, var = -0.05, 0.02
    r = np.linspace(mu - 12 * math.sqrt(var), mu + 12 * math.sqrt(var), 400_001)
    density = np.exp(-(r - mu) ** 2 / (2 * var)) / math.sqrt(2 * math.pi * var)
    integral = float(np.sum(np.exp(np.minimum(r, 0)) * density) * (r[1] - r[0]))
    assert by_hand(1.0, mu, var)[0] == pytest.approx(integral, rel=1e-7)


def test_pool_and_forecast_by_hand() -> None:
    a = TaskState(2.0, [8.0, 4.0, 3.0], name="conv2d", seconds_history=[3.0, 5.0, 9.0])
    b = TaskState(1.0, [10.0, 9.0], seconds_history=[])
    c = TaskState(1.0, [6.0])  # one batch: no slope
    pool = pool_of([a, b, c])
    s_a = [math.log(4 / 8) / math.log(2), math.log(3 / 4) / math.log(3 / 2)]
    s_b = [math.log(9 / 10) / math.log(2)]
    assert pool.count == 3
    assert pool.mean == pytest.approx(statistics.fmean(s_a + s_b))
    assert pool.var == pytest.approx(statistics.variance(s_a + s_b))
    assert pool.batch_s == pytest.approx((3 + 2 + 4) / 3)  # only a's costs are known

    f = forecast_task(a, pool)
    weights = [0.9, 1.0]  # decay 0.9: the latest slope weighs 1
    n = sum(weights)
    own = (0.9 * s_a[0] + s_a[1]) / n
    slope = (2 * pool.mean + n * own) / (2 + n)
    g = math.log(4 / 3)  # the 4th batch after 3
    mu, var = g * slope, g * g * pool.var * (1 + 1 / (2 + n))
    mean, low, high = by_hand(3.0, mu, var)
    assert f.best_ms == 3.0 and f.batch_s == pytest.approx(3.0)
    assert f.slope == pytest.approx(slope) and f.own_weight == pytest.approx(n / (2 + n))
    assert (f.expected_ms, f.low_ms, f.high_ms) == pytest.approx((mean, low, high))
    assert f.high_ms <= f.best_ms and f.low_ms < f.expected_ms < f.best_ms
    assert f.gain_us == pytest.approx(2.0 * (3.0 - mean) * 1e3)
    assert f.optimistic_gain_us == pytest.approx(2.0 * (3.0 - low) * 1e3)
    assert f.score == pytest.approx(f.optimistic_gain_us / 3.0)

    # one batch: the pool's slope, at stage ln(2), and the pooled batch seconds
    fc = forecast_task(c, pool)
    assert (fc.slope, fc.own_weight) == (pytest.approx(pool.mean), 0.0)
    assert fc.log_ratio == pytest.approx(math.log(2) * pool.mean)
    assert fc.log_sd == pytest.approx(math.log(2) * math.sqrt(pool.var * 1.5))
    assert fc.batch_s == pytest.approx(3.0)


def test_defaults_without_data() -> None:
    pool = pool_of([TaskState(1.0, [4.0]), TaskState()])
    assert pool == Pool(DEFAULT_SLOPE, DEFAULT_VAR, 0, 1.0)
    f = forecast_task(TaskState(1.0, [4.0]), pool, band=0.5)
    mu, var = math.log(2) * DEFAULT_SLOPE, math.log(2) ** 2 * DEFAULT_VAR * 1.5
    assert (f.expected_ms, f.low_ms, f.high_ms) == pytest.approx(
        by_hand(4.0, mu, var, z=0.6744897501960817))
    with pytest.raises(ValueError, match="no valid best"):
        forecast_task(TaskState(1.0, [1e9]), pool)
    with pytest.raises(ValueError, match="band"):
        forecast_task(TaskState(1.0, [4.0]), pool, band=1.0)


def test_warm_up_in_task_order_skipping_skipped() -> None:
    sched = Forecasting()
    tasks = [TaskState(), TaskState(skipped=True), TaskState(), TaskState(1.0, [5.0])]
    first = sched.next_task(tasks)
    assert (first.task, first.reason) == (0, "first batch: never tried")
    tasks[0].best_history_ms.append(1e9)  # tried, every candidate failed: no longer "never"
    assert sched.next_task(tasks).task == 2
    tasks[2].best_history_ms.append(3.0)
    pick = sched.next_task(tasks)
    assert pick.task == 3 and pick.reason.startswith("task 3: expected")  # 5 ms beats 3 ms
    assert pick.gradients[0] is None and pick.gradients[1] is None
    assert pick.gradients[3] > pick.gradients[2] > 0
    assert sched.calibration(tasks) == (0, 0)


def test_no_valid_latency_anywhere() -> None:
    tasks = [TaskState(1.0, [1e9], done=True), TaskState(1.0, [1e9], name="dense")]
    assert Forecasting().next_task(tasks) == Pick(
        1, [None, None], "no task has a valid latency: task 1 dense")


def test_steep_cheap_beats_flat_expensive() -> None:
    flat = TaskState(1.0, [5.0, 5.0, 5.0, 5.0], seconds_history=[10.0, 20.0, 30.0, 40.0])
    steep = TaskState(1.0, [5.0, 4.0, 3.2, 2.56], seconds_history=[1.0, 2.0, 3.0, 4.0])
    assert Forecasting().next_task([flat, steep]).task == 1
    assert Forecasting().next_task([steep, flat]).task == 0
    # the same curve: the cheaper batches win, either way round
    same = [4.0, 3.0, 2.5]
    cheap = TaskState(1.0, list(same), seconds_history=[1.0, 2.0, 3.0])
    dear = TaskState(1.0, list(same), seconds_history=[5.0, 10.0, 15.0])
    assert Forecasting().next_task([dear, cheap]).task == 1
    assert Forecasting().next_task([cheap, dear]).task == 0


def test_weight_matters_and_ties_go_to_the_lowest_index() -> None:
    tasks = [TaskState(1.0, [4.0, 3.0]), TaskState(1.0, [4.0, 3.0])]
    pick = Forecasting().next_task(tasks)
    assert pick.task == 0 and pick.gradients[0] == pick.gradients[1]
    tasks[1].weight = 3.0
    pick = Forecasting().next_task(tasks)
    assert pick.task == 1 and pick.gradients[1] == pytest.approx(3 * pick.gradients[0])
    tasks[0].weight = 4.0
    assert Forecasting().next_task(tasks).task == 0


def test_reason_in_words() -> None:
    # every slope is -1 (halving at batch 2): the pool's variance is the floor, 1e-6
    tasks = [TaskState(3.0, [8.0, 4.0], name="conv2d", seconds_history=[1.0, 2.0]),
             TaskState(1.0, [8.0, 4.0], name="dense", seconds_history=[4.0, 8.0]),
             TaskState(1.0, [8.0, 4.0], seconds_history=[9.0, 18.0])]
    pick = Forecasting().next_task(tasks)
    # next: ln(3/2) * -1; 4 ms -> 4 * 2/3 ms: -1333.3 us per unit weight
    assert pick == Pick(0, [pytest.approx(4000 / 1, rel=1e-2), pytest.approx(1333.3 / 4, rel=1e-2),
                            pytest.approx(1333.3 / 9, rel=1e-2)],
                        "task 0 conv2d: expected -4000.0 us of model latency in ~1.0 s; "
                        "next best task 1 dense: -1333.3 us")
    tasks[0].done = tasks[1].done = True
    assert Forecasting().next_task(tasks).reason == \
        "task 2: expected -1333.3 us of model latency in ~9.0 s"


def test_every_task_flat() -> None:
    # no task improved: slope 0 with the floor's variance; the optimistic gain of a 4 ms task
    # (about 4 * ln(4/3) * 1.2816 * 0.00122 ms) is below 0.001 of the model's 8 ms
    tasks = [TaskState(1.0, [4.0, 4.0, 4.0], name="a"), TaskState(1.0, [4.0, 4.0, 4.0])]
    sched = Forecasting()
    f = forecast_task(tasks[0], sched.pool(tasks))
    assert 0 < f.optimistic_gain_us < 8.0 and f.gain_us < f.optimistic_gain_us
    assert sched.flat(tasks) == [0, 1]
    pick = sched.next_task(tasks)
    assert pick.task == 0
    assert pick.reason == (
        "every task's expected gain is below the threshold; task 0 a: expected "
        f"-{f.gain_us:.1f} us of model latency in ~1.0 s; next best task 1: -{f.gain_us:.1f} us")
    assert Forecasting(min_gain_fraction=0).flat(tasks) == []
    tasks[1].skipped = True
    assert sched.flat(tasks) == [0]
    # next to an improving task, the flat one borrows its slope (empirical Bayes): about half
    # of a's slope is the pool's, so a's optimistic gain is ~506 us of the model's 9000 us
    tasks[1] = TaskState(1.0, [8.0, 6.0, 5.0])
    assert sched.flat(tasks) == []
    a = forecast_task(tasks[0], sched.pool(tasks))
    assert a.own_weight == pytest.approx(1.9 / 3.9) and 500 < a.optimistic_gain_us < 510
    strict = Forecasting(min_gain_fraction=0.08)  # 720 us
    assert strict.flat(tasks) == [0]
    assert strict.next_task(tasks).reason.startswith("task 1: expected")


def test_explain_table() -> None:
    tasks = [TaskState(1.0, [4.0, 4.0, 4.0], name="a"), TaskState(1.0, [8.0, 5.0], name="b"),
             TaskState(1.0, [], name="c")]
    rows = Forecasting(min_gain_fraction=0.1).explain(tasks)  # flat below 900 us
    assert [(r["index"], r["name"], r["flat"]) for r in rows] == [
        (0, "a", True), (1, "b", False), (2, "c", False)]
    assert rows[0]["optimistic_gain_us"] < 900 < rows[1]["optimistic_gain_us"]
    assert rows[1]["best_ms"] == 5.0 and rows[1]["score"] > 0
    assert rows[2]["best_ms"] is None and rows[2]["score"] is None
    assert set(rows[0]) == set(rows[2]) >= {"batch_s", "expected_ms", "low_ms", "high_ms",
                                            "gain_us", "optimistic_gain_us", "score"}


def test_calibration_counts_joined_picks() -> None:
    sched = Forecasting()
    tasks = [TaskState(1.0, [8.0, 6.0]), TaskState(1.0, [8.0, 7.0])]
    first = sched.next_task(tasks)
    i = first.task
    f = forecast_task(tasks[i], sched.pool(tasks))
    assert sched.forecast_bands == {(i, 2): (f.low_ms, f.high_ms)}
    assert sched.calibration(tasks) == (0, 0)  # its batch has not joined yet
    tasks[i].best_history_ms.append(f.expected_ms)  # inside
    assert sched.calibration(tasks) == (1, 1)
    second = sched.next_task(tasks)
    j = second.task
    g = forecast_task(tasks[j], sched.pool(tasks))
    tasks[j].best_history_ms.append(g.low_ms * 0.5)  # far better than forecast: outside
    assert sched.calibration(tasks) == (1, 2)
    third = sched.next_task(tasks)
    k = third.task
    h = forecast_task(tasks[k], sched.pool(tasks))
    assert sched.calibration(tasks) == (1, 2)  # not joined: not counted
    tasks[k].best_history_ms.append(h.low_ms)  # the band's end: inside (inclusive)
    assert sched.calibration(tasks) == (2, 3)
    other = tasks[1 - k].best_history_ms
    other.append(other[-1])  # a batch no pick forecast: not counted
    assert sched.calibration(tasks) == (2, 3) and len(sched.forecast_bands) == 3


def test_create_and_kind() -> None:
    assert "forecast" in SCHEDULERS
    sched = create("forecast", seed=7)
    assert isinstance(sched, Forecasting) and sched.kind == "forecast" and sched.seed == 7
    with pytest.raises(ValueError, match="band"):
        Forecasting(band=0)
    with pytest.raises(ValueError, match="decay"):
        Forecasting(decay=0)
    with pytest.raises(ValueError, match="min_gain_fraction"):
        Forecasting(min_gain_fraction=-1)


def test_task_state_keeps_positional_construction() -> None:
    t = TaskState(2.0, [3.0], 5, False, True)
    assert (t.weight, t.best_history_ms, t.trials, t.pinned, t.name, t.seconds_history) == \
        (2.0, [3.0], 5, True, "", [])


def test_steering_through_the_base_class() -> None:
    sched = Forecasting()
    tasks = [TaskState(1.0, [8.0, 4.0]), TaskState(1.0, [8.0, 6.0]), TaskState(1.0, [9.0, 8.0])]
    forced = sched.next_task(tasks, forced=2)
    assert (forced.task, forced.reason, forced.forced) == (2, "forced by user", True)
    assert all(g is not None and g > 0 for g in forced.gradients)
    tasks[1].pinned = True
    pinned = sched.next_task(tasks)
    assert (pinned.task, pinned.reason, pinned.forced) == (1, "pinned", False)
    tasks[1].pinned = False
    best = sched.next_task(tasks).task
    tasks[best].skipped = True
    pick = sched.next_task(tasks)
    assert pick.task != best and pick.gradients[best] is None
    tasks[pick.task].done = True
    left = ({0, 1, 2} - {best, pick.task}).pop()
    assert sched.next_task(tasks, forced=pick.task).task == left  # a done task is not forced
    tasks[left].done = True
    assert sched.next_task(tasks) == Pick(None, [None, None, None], "every task is done")
    assert sched.forecast_bands.keys() <= {(i, 2) for i in range(3)}  # forced/pinned: none


def test_curve_band_widens_and_starts_at_the_forecast() -> None:
    state = TaskState(1.0, [8.0, 6.0, 5.0], seconds_history=[2.0, 4.0, 6.0])
    pool = pool_of([state])
    f = forecast_task(state, pool)
    c = curve(state, pool, horizon_s=4.0, points=3)  # 0, 2 s (one batch), 4 s (two)
    assert c.seconds == [0.0, 2.0, 4.0]
    assert (c.mean_ms[0], c.low_ms[0], c.high_ms[0]) == (5.0, 5.0, 5.0)
    assert (c.mean_ms[1], c.low_ms[1], c.high_ms[1]) == pytest.approx(
        sat(5.0, (f.expected_ms, f.low_ms, f.high_ms)))
    k = math.log(5 / 3) / math.log(4 / 3)  # two more batches after 3: worth K next ones
    assert effective_batches(2, 3) == pytest.approx(k)
    assert (c.mean_ms[2], c.low_ms[2], c.high_ms[2]) == pytest.approx(
        sat(5.0, by_hand(5.0, k * f.log_ratio, k * f.log_sd ** 2)))
    widths = [hi - lo for lo, hi in zip(c.low_ms, c.high_ms)]
    assert widths[0] == 0 < widths[1] < widths[2]
    assert effective_batches(1, 7) == pytest.approx(1.0)
    assert effective_batches(3, 1) == pytest.approx(2.0)  # ln 4 / ln 2
    assert effective_batches(2.5, 0) == 2.5
    with pytest.raises(ValueError, match="points"):
        curve(state, pool, 4.0, points=1)


def test_model_forecast_by_hand() -> None:
    tasks = [TaskState(1.0, [8.0, 4.0], seconds_history=[2.0, 4.0]),
             TaskState(2.0, [6.0, 6.0], done=True),
             TaskState(1.0, [])]  # never tried: its warm-up batch costs the pooled 2 s
    pool = pool_of(tasks)
    out = model_forecast(tasks, pool, horizon_s=7.0)
    assert out.batches == (2, 0, 0) and out.unknown == (2,)  # 7 - 2 s: two 2 s batches fit
    f = forecast_task(tasks[0], pool)
    k = effective_batches(2, 2)
    mean, low, high = sat(4.0, by_hand(4.0, k * f.log_ratio, k * f.log_sd ** 2))
    assert out.now_us == pytest.approx(4000 + 12000)
    assert out.mean_us == pytest.approx(mean * 1e3 + 12000)
    assert out.low_us == pytest.approx(out.mean_us - (mean - low) * 1e3)
    assert out.high_us == pytest.approx(min(out.now_us, out.mean_us + (high - mean) * 1e3))
    assert model_forecast(tasks, pool, horizon_s=1.0).mean_us == pytest.approx(out.now_us)


def test_model_forecast_gives_seconds_where_they_buy_most() -> None:
    tasks = [TaskState(1.0, [8.0, 4.0, 3.0], seconds_history=[1.0, 2.0, 3.0]),
             TaskState(1.0, [8.0, 4.0, 3.0], seconds_history=[10.0, 20.0, 30.0])]
    out = model_forecast(tasks, pool_of(tasks), horizon_s=30.0)
    assert out.batches[0] >= 10 and out.batches[1] <= 2  # the cheap task first, to its floor
    assert out.low_us < out.mean_us < out.high_us <= out.now_us


def simulate(sched, specs, budget_s: float) -> tuple[float, list[int]]:
    """Tune synthetic tasks (weight, a, p, seconds a batch) whose best after n batches is
    min(previous, a * n ** -p * noise), until the next batch would pass budget_s."""
    noise = [np.random.default_rng(i).normal(0.0, 0.05, 500) for i in range(len(specs))]
    tasks = [TaskState(weight=w) for w, *_ in specs]
    spent = 0.0
    while True:
        i = sched.next_task(tasks).task
        _, a, p, cost = specs[i]
        if spent + cost > budget_s:
            break
        spent += cost
        h, s = tasks[i].best_history_ms, tasks[i].seconds_history
        n = len(h) + 1
        h.append(min(h[-1] if h else math.inf, a * n ** -p * math.exp(noise[i][n])))
        s.append((s[-1] if s else 0.0) + cost)
    return sum(t.weight * t.best_history_ms[-1] for t in tasks), [len(t.best_history_ms)
                                                                   for t in tasks]


def test_simulation_beats_gradient_based_when_batch_costs_differ() -> None:
    # two tasks with the same curve, one with batches 8x dearer; a slow-learning dense one
    specs = [(1.0, 10.0, 0.5, 8.0), (1.0, 10.0, 0.5, 1.0), (2.0, 4.0, 0.3, 2.0),
             (1.0, 6.0, 0.05, 4.0)]
    for budget in (60.0, 120.0, 240.0):
        forecast, batches = simulate(Forecasting(), specs, budget)
        gradient, gradient_batches = simulate(GradientBased(), specs, budget)
        assert forecast < gradient, (budget, forecast, gradient, batches, gradient_batches)
        assert batches[1] > batches[0]  # time-aware: the cheap batches of the same curve
