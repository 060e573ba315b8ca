"""PED-ANOVA decision importance against values worked out by hand."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from msviz.analysis import importance as I

# Ten trials, latency 1..10; with quantile 0.2 the winners are trials 1 and 2.
LOSS = list(range(1, 11))
A = ["x"] * 5 + ["y"] * 5  # the winners both chose x
B = ["p", "q"] * 5  # winners and all trials alike: p and q half and half
C = ["u", "v", "w", "u", "v", "w", "u", "v", "w", "u"]  # winners u, v; all u 4, v 3, w 3


def _divergence(top: list[F], local: list[F]) -> F:
    return sum(((t - p) ** 2 / p for t, p in zip(top, local)), F(0))


# By hand (prior weight 1; a kernel puts 1 + 1/k on its value and 1/k elsewhere, normalized;
# the mixture weighs kernels by count and the uniform prior by 1):
# A: top counts (2, 0) -> k=2 kernels (x and prior): x-kernel (3/4, 1/4), weights (2/3, 1/3)
#    -> p_top = (2/3, 1/3); all (5, 5) -> k=3: kernels (4/5, 1/5), (1/5, 4/5), weights
#    (5/11, 5/11, 1/11) -> p_all = (1/2, 1/2); divergence 1/2 (1/3)^2 + 1/2 (1/3)^2 = 1/9.
D_A = F(1, 9)
# C: top (1, 1, 0) -> kernels (2/3, 1/6, 1/6), (1/6, 2/3, 1/6), weights 1/3 each with the
#    prior -> p_top = (7/18, 7/18, 4/18); all (4, 3, 3) -> kernels (5/7, 1/7, 1/7) ...,
#    weights (4, 3, 3, 1)/11 -> p_all = (85/231, 73/231, 73/231).
D_C = _divergence([F(7, 18), F(7, 18), F(4, 18)], [F(85, 231), F(73, 231), F(73, 231)])


def test_pearson_divergence_by_hand() -> None:
    assert I.pearson_divergence([2, 0], [5, 5]) == pytest.approx(float(D_A), abs=1e-12)
    assert I.pearson_divergence([1, 1], [5, 5]) == pytest.approx(0.0, abs=1e-12)
    assert I.pearson_divergence([1, 1, 0], [4, 3, 3]) == pytest.approx(float(D_C), abs=1e-12)


def test_ped_anova_by_hand() -> None:
    got = I.ped_anova({"a": A, "b": B, "c": C}, LOSS, quantile=0.2, min_top=2)
    total = D_A + D_C
    assert list(got) == ["a", "b", "c"]
    assert got["a"] == pytest.approx(float(D_A / total))
    assert got["b"] == pytest.approx(0.0, abs=1e-12)
    assert got["c"] == pytest.approx(float(D_C / total))


def test_ped_anova_edge_cases() -> None:
    # one choice only: 0; too few trials to tell winners apart: equal shares
    assert I.ped_anova({"a": A, "k": ["k"] * 10}, LOSS, quantile=0.2, min_top=2) == {
        "a": 1.0, "k": 0.0}
    assert I.ped_anova({"a": ["x", "y"], "b": ["p", "q"]}, [1.0, 2.0]) == {"a": 0.5, "b": 0.5}
    # a listed choice nobody took still counts in the smoothing: (2, 0, 0) vs (5, 5, 0)
    with_z = I.ped_anova({"a": A, "b": B}, LOSS, quantile=0.2, min_top=2,
                         choices={"a": ["x", "y", "z"]})
    assert with_z == {"a": 1.0, "b": pytest.approx(0.0, abs=1e-12)}
    with pytest.raises(ValueError, match="parameter 'a' has 2 values for 10 trials"):
        I.ped_anova({"a": ["x", "y"]}, LOSS)


def test_top_mask() -> None:
    # the fastest 10% of 10 trials is 1, at least 2; ties with the cutoff are kept
    assert I.top_mask([5, 1, 3, 3, 9], 0.1, 2).tolist() == [False, True, True, True, False]
    assert I.top_mask(LOSS, 0.5, 2).tolist() == [True] * 5 + [False] * 5
    with pytest.raises(ValueError, match="quantile must be in"):
        I.top_mask(LOSS, 1.5)
