"""The fp32 peak kept from several measurements (msviz/bench/peak.py ``best_fp32_peak``): one
taken in the machine's slow mode is too low, and made kernels run "above the peak"."""

from __future__ import annotations

import pytest

from msviz.bench.peak import best_fp32_peak

SLOW = {"gflops": 236.0, "avx512_gflops": 236.0, "avx2_gflops": 150.0, "threads": 2,
        "cpu": "Intel(R) Xeon(R) Processor", "error": None}
FAST = {**SLOW, "gflops": 340.0, "avx512_gflops": 340.0, "avx2_gflops": 210.0}
FAILED = {**SLOW, "gflops": None, "avx512_gflops": None, "avx2_gflops": None,
          "error": "the FMA peak measurement failed: boom"}


def test_the_largest_sample_is_kept_with_every_sample() -> None:
    assert best_fp32_peak([SLOW, FAST, SLOW]) == {**FAST, "samples_gflops": [236.0, 340.0, 236.0]}


def test_a_failed_sample_is_skipped_and_all_failed_says_why() -> None:
    assert best_fp32_peak([FAILED, SLOW]) == {**SLOW, "samples_gflops": [None, 236.0]}
    assert best_fp32_peak([FAILED]) == {**FAILED, "samples_gflops": [None]}
    with pytest.raises(ValueError, match="at least one sample"):
        best_fp32_peak([])
