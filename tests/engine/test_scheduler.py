"""The task schedulers against gradients and picks worked out by hand from gradient_based.cc."""

from __future__ import annotations

import pytest

from msviz.engine.task_scheduler.kinds import create
from msviz.engine.task_scheduler.scheduler import (
    GradientBased,
    LinearCongruentialEngine,
    Pick,
    RoundRobin,
    TaskState,
    format_task_table,
    gradient,
)


def test_gradient_by_hand() -> None:
    # n=4 >= w+1: g1 = (10 - 5) / 3, g2 = 5 / 4; (0.2 g1 + 0.8 g2) * weight 2
    assert gradient([10.0, 8.0, 6.0, 5.0], 2.0) == pytest.approx((0.2 * 5 / 3 + 0.8 * 1.25) * 2)
    assert gradient([4.0], 1.0) == pytest.approx(0.8 * 4.0)  # n=1: g1 = 0, g2 = 4
    assert gradient([6.0, 3.0], 1.0) == pytest.approx(0.8 * 1.5)  # n=2 < w+1: g1 = 0
    # window 1: g1 = (6 - 3) / 1
    assert gradient([6.0, 3.0], 1.0, window_size=1) == pytest.approx(0.2 * 3 + 0.8 * 1.5)
    assert gradient([], 5.0) == -1e9  # no batch joined yet
    assert gradient([1e9], 3.0) == -1e9  # every trial failed


def test_gradient_based_warm_up_then_largest_gradient() -> None:
    sched = GradientBased(seed=1)
    tasks = [TaskState(1.0), TaskState(2.0), TaskState(1.0)]
    picks = [sched.next_task(tasks) for _ in range(3)]
    assert [p.task for p in picks] == [0, 1, 2]
    assert {p.reason for p in picks} == {"round-robin warm-up"}
    tasks[0].best_history_ms = [4.0]  # 0.8 * 4 * 1 = 3.2
    tasks[1].best_history_ms = [2.0]  # 0.8 * 2 * 2 = 3.2 (a tie: the first one wins)
    tasks[2].best_history_ms = [1e9]  # -1e9
    pick = sched.next_task(tasks)
    assert pick == Pick(0, [pytest.approx(3.2), pytest.approx(3.2), -1e9], "largest gradient")
    tasks[1].best_history_ms = [3.0]  # 4.8 now
    assert sched.next_task(tasks).task == 1


def test_gradient_based_random_pick_when_all_equal() -> None:
    # all gradients equal: alive[SampleInt(rand, 0, 3)] with TVM's LCG (a = 48271, m = 2^31 - 1)
    # and libstdc++'s down-scaling: state 40000 * 48271 mod m, divided by (m - 1) // 3.
    sched = GradientBased(seed=40000)
    sched.round_robin_rounds = 3
    tasks = [TaskState(1.0, [2.0]) for _ in range(3)]
    expected = (40000 * 48271) % (2**31 - 1) // ((2**31 - 2) // 3)
    assert expected == 2
    pick = sched.next_task(tasks)
    assert (pick.task, pick.reason) == (2, "all gradients equal: random pick")


def test_lcg_matches_tvm_normalize_seed_and_sequence() -> None:
    rng = LinearCongruentialEngine(0)  # NormalizeSeed: 0 -> 1
    assert rng.state == 1
    assert [rng(), rng()] == [48271, 48271 * 48271 % (2**31 - 1)]
    assert LinearCongruentialEngine(2**31 - 1).state == 1  # seed % m == 0 -> 1
    assert LinearCongruentialEngine(5).sample_int(3, 4) == 3  # one value: no draw
    with pytest.raises(ValueError, match="non-negative"):
        LinearCongruentialEngine(-3)


def test_steering_forced_pinned_skipped_done() -> None:
    sched = GradientBased(seed=1)
    sched.round_robin_rounds = 3
    tasks = [TaskState(1.0, [4.0]), TaskState(1.0, [1.0]), TaskState(1.0, [2.0])]
    forced = sched.next_task(tasks, forced=2)
    assert (forced.task, forced.reason, forced.forced) == (2, "forced by user", True)
    assert forced.gradients == [pytest.approx(3.2), pytest.approx(0.8), pytest.approx(1.6)]
    tasks[1].pinned = True
    assert sched.next_task(tasks).reason == "pinned" and sched.next_task(tasks).task == 1
    tasks[1].pinned = False
    tasks[0].skipped = True  # the largest gradient, but skipped
    pick = sched.next_task(tasks)
    assert pick.task == 2 and pick.gradients[0] is None
    tasks[2].done = True
    assert sched.next_task(tasks, forced=2).task == 1  # a done task cannot be forced
    tasks[1].done = True
    assert sched.next_task(tasks) == Pick(None, [None, None, None], "every task is done")


def test_warm_up_skips_skipped_tasks() -> None:
    sched = GradientBased(seed=1)
    tasks = [TaskState(), TaskState(skipped=True), TaskState()]
    assert [sched.next_task(tasks).task for _ in range(2)] == [0, 2]


def test_round_robin() -> None:
    sched = create("round-robin")
    assert isinstance(sched, RoundRobin)
    tasks = [TaskState(), TaskState(), TaskState()]
    assert [sched.next_task(tasks).task for _ in range(4)] == [0, 1, 2, 0]
    tasks[1].done = True
    assert [sched.next_task(tasks).task for _ in range(3)] == [2, 0, 2]
    with pytest.raises(ValueError, match="task scheduler must be one of"):
        create("greedy")


def test_task_table_as_stock_table_printer() -> None:
    rows = [
        {"index": 0, "name": "a", "flop": 100.0, "weight": 2, "gflops": 0.5, "latency_us": 200.0,
         "weighted_latency_us": 400.0, "trials": 3, "done": True},
        {"index": 1, "name": "bb", "flop": 7.0, "weight": 1, "gflops": None, "latency_us": None,
         "weighted_latency_us": None, "trials": 0, "done": False},
    ]
    # support::TablePrinter: each cell right-aligned in width + 1, a space after, "|" between;
    # the separator is sum(widths) + 3 * columns - 1 = 73 + 26 dashes
    expected = "\n".join([
        " ID | Name | FLOP | Weight | Speed (GFLOPS) | Latency (us) | Weighted Latency (us) "
        "| Trials | Done ",
        "-" * 99,
        "  0 |    a |  100 |      2 |         0.5000 |     200.0000 |              400.0000 "
        "|      3 |    Y ",
        "  1 |   bb |    7 |      1 |            N/A |          N/A |                   N/A "
        "|      0 |      ",
        "-" * 99,
        "Total trials: 3",
        "Total latency (us): 400.0000",
        "",
    ])
    assert format_task_table(rows) == expected
