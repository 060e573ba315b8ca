"""Two builds compared whole, in paired rounds in fresh processes: the paired ratio, its spread,
and a verdict only where the rounds agree."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from msviz.bench.paired import PairedComparison, compare_builds, paired_summary


def test_the_summary_of_hand_made_rounds() -> None:
    rounds = [(0, 100.0, 80.0), (0, 200.0, 150.0), (1, 100.0, 90.0), (1, 110.0, 88.0)]
    got = paired_summary(("stock", "msviz"), rounds)
    ratios = [0.8, 0.75, 0.9, 0.8]
    assert got == PairedComparison(
        names=("stock", "msviz"), a_us=[100.0, 200.0, 100.0, 110.0],
        b_us=[80.0, 150.0, 90.0, 88.0], draw=[0, 0, 1, 1], ratio=pytest.approx(ratios),
        median=pytest.approx(0.8), low=pytest.approx(0.75), high=pytest.approx(0.9),
        draw_medians=pytest.approx([0.775, 0.85]), faster_share=1.0,
        slow_rounds={"stock": 1, "msviz": 1},  # 200 > 1.5 x 100; 150 > 1.5 x 80
        verdict="msviz is faster: 0.800x stock's time (100% of rounds agree)")


def test_slow_rounds_are_counted_per_build() -> None:
    got = paired_summary(("a", "b"), [(0, 100.0, 80.0), (0, 200.0, 150.0)])
    assert got.slow_rounds == {"a": 1, "b": 1}  # 200 > 150 (1.5 x 100); 150 > 120 (1.5 x 80)


def test_rounds_that_disagree_give_no_verdict() -> None:
    rounds = [(0, 100.0, 80.0), (0, 100.0, 85.0), (1, 100.0, 120.0), (1, 100.0, 125.0),
              (2, 100.0, 82.0)]
    got = paired_summary(("a", "b"), rounds)
    assert got.median == pytest.approx(0.85)
    assert got.verdict == ("no verdict: the rounds disagree (b faster in 60% of them, "
                           "per-process medians 0.825, 1.225, 0.820)")
    same = paired_summary(("a", "b"), [(0, 100.0, 101.0), (0, 100.0, 99.5), (1, 100.0, 101.0),
                                       (1, 100.0, 99.0)])
    assert same.verdict.startswith("no verdict: b and a are within 2% of each other")
    slower = paired_summary(("a", "b"), [(0, 100.0, 150.0), (0, 100.0, 145.0),
                                         (1, 100.0, 140.0), (1, 100.0, 142.0)])
    assert slower.verdict == "a is faster: b takes 1.435x its time (100% of rounds agree)"


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="no rounds"):
        paired_summary(("a", "b"), [])
    with pytest.raises(ValueError, match="two build names"):
        paired_summary(("a",), [(0, 1.0, 1.0)])
    with pytest.raises(ValueError, match="rounds must be an int >= 1"):
        compare_builds({"a": None, "b": None}, [], "main", rounds=0)
    with pytest.raises(ValueError, match="builds must hold two builds"):
        compare_builds({"a": None}, [], "main")


def _matmul_builds() -> tuple[dict, list, float]:
    """A Relax matmul built untuned and with a hand-scheduled (parallel, vectorised) kernel;
    and the ratio of their times measured here, separately (the independent figure)."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend import nn

    from msviz import compat

    class Dense(nn.Module):
        def __init__(self) -> None:
            self.fc = nn.Linear(256, 256, bias=False)

        def forward(self, x: nn.Tensor) -> nn.Tensor:
            return self.fc(x)

    mod, spec = Dense().export_tvm(spec={"forward": {"x": nn.spec.Tensor((64, 256), "float32")}})
    rng = np.random.default_rng(0)
    params = {n: tvm.runtime.tensor(rng.standard_normal([int(s) for s in p.shape]).astype(
        "float32")) for n, p in spec}
    mod = relax.transform.LegalizeOps()(relax.transform.BindParams("forward", params)(mod))
    target = compat.make_target("llvm")
    plain = tvm.compile(mod, target=target)
    sch = tvm.s_tir.Schedule(mod)
    sch.work_on("matmul")
    block = sch.get_child_blocks(sch.get_sblock("root"))[0]  # the matmul
    i, j, k = sch.get_loops(block)
    jo, ji = sch.split(j, [None, 16])
    sch.reorder(i, jo, k, ji)
    sch.parallel(i)
    sch.vectorize(ji)
    fast = tvm.compile(sch.mod, target=target)
    x = rng.standard_normal((64, 256)).astype("float32")
    dev = tvm.cpu()
    times = {}
    for name, exe in (("plain", plain), ("fast", fast)):
        vm = relax.VirtualMachine(exe, dev)
        vm["forward"](tvm.runtime.tensor(x))
        times[name] = statistics.median(vm.time_evaluator("forward", dev, number=20, repeat=5)(
            tvm.runtime.tensor(x)).results)
    return {"plain": plain, "fast": fast}, [x], times["fast"] / times["plain"]


def test_a_faster_build_is_found_faster_in_paired_rounds() -> None:
    builds, inputs, separate = _matmul_builds()
    got = compare_builds(builds, inputs, "forward", rounds=3, draws=2, number=5, repeat=2,
                         min_repeat_ms=0)
    assert (got.names, len(got.ratio), got.draw) == (("plain", "fast"), 6, [0, 0, 0, 1, 1, 1])
    assert separate < 0.8  # the hand schedule is faster (measured apart, in this process)
    assert 0.5 * separate < got.median < 2 * separate  # the paired figure agrees with it
    assert got.verdict.startswith("fast is faster: ")
    frame = got.frame()
    assert list(frame.columns) == ["draw", "plain_us", "fast_us", "ratio"]
    assert np.allclose(frame["ratio"], frame["fast_us"] / frame["plain_us"])


def test_too_few_rounds_or_processes_give_no_verdict() -> None:
    """A verdict from one round, or from one process, is a coin toss (issue 53)."""
    one = paired_summary(("a", "b"), [(0, 100.0, 150.0)])
    assert one.median == pytest.approx(1.5)
    assert one.verdict.startswith("no verdict: too few rounds (1 round(s) in 1 process(es)")
    one_process = paired_summary(("a", "b"), [(0, 100.0, 150.0)] * 6)
    assert one_process.verdict.startswith("no verdict: too few rounds (6 round(s) in 1 process")
    enough = paired_summary(("a", "b"), [(0, 100.0, 150.0)] * 2 + [(1, 100.0, 150.0)] * 2)
    assert enough.verdict.startswith("a is faster")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 0.0])
def test_a_timing_that_is_no_time_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="not a finite time > 0"):
        paired_summary(("a", "b"), [(0, 100.0, 90.0), (1, bad, 90.0)])
