"""A model's coverage by a tuning library: the whole Coverage value against one built by hand
from the test's own reading of the work dirs (see test_library.py for how they are tuned)."""

from __future__ import annotations

import warnings

import pytest

from msviz.errors import MsvizWarning
from msviz.records.coverage import coverage, coverage_text
from msviz.records.coverage_types import Coverage, TaskCoverage
from msviz.records.library import Library
from tests.records.test_library import Tuned, expected_entries, text_of, tuned_library


@pytest.fixture(scope="session")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Tuned:
    return tuned_library(tmp_path_factory)


def _library(tuned: Tuned) -> Library:
    with warnings.catch_warnings():
        warnings.simplefilter("error", MsvizWarning)
        return Library(tuned.team, cache=False)


def _expected(tuned: Tuned, untuned: dict[int, float] | None) -> Coverage:
    """The coverage of the mlp by the team library, from the files: softmax has nothing,
    matmul2_add1 is tuned (runs/exact), matmul1_add_relu shares the Linear's anchor block,
    matmul_add_relu has siblings (the Linear's matmul nearest on the host; its own workload on
    the generic target)."""
    host = text_of(tuned.host)
    (exact,) = expected_entries(tuned.team / "runs" / "exact", "exact")
    (linear,) = expected_entries(tuned.linear_dir, "linear")
    (generic,) = expected_entries(tuned.team / "runs" / "generic", "generic")
    u = untuned or {}
    rows = (
        TaskCoverage(0, "softmax", 1, "T_softmax_maxelem", "none", None, None, None, 0, u.get(0)),
        TaskCoverage(1, "fused_matmul2_add1", 1, "matmul", "exact", exact.best_us, "exact/main",
                     host, 2, u.get(1)),
        TaskCoverage(2, "fused_matmul1_add_relu", 2, "matmul", "anchor", linear.best_us,
                     "linear/fused_matmul_add", host, 2, u.get(2)),
        TaskCoverage(3, "fused_matmul_add_relu", 1, "matmul", "sibling", None,
                     "linear/fused_matmul_add", host, 3, u.get(3)),
    )
    totals: tuple = (None, None, None)
    if untuned is not None:
        total = u[0] + u[1] + 2 * u[2] + u[3]
        totals = (u[0] + exact.best_us + 2 * linear.best_us + u[3], total,
                  (u[1] + 2 * u[2]) / total)
    problems = (f"generic: holds no record of {host} (its records are of {generic.target}): "
                "its workloads count as siblings only",)
    return Coverage("mlp", host, ("linear", "exact", "generic"), rows, *totals, problems)


@pytest.mark.parametrize("untuned", [None, {0: 10.0, 1: 20.0, 2: 30.0, 3: 40.0}])
def test_coverage_is_what_the_files_say(tuned: Tuned, untuned: dict | None) -> None:
    cov = coverage(tuned.tasks, _library(tuned), tuned.host, model="mlp", untuned_us=untuned)
    assert cov == _expected(tuned, untuned)
    assert cov.counts() == {"exact": 1, "anchor": 1, "sibling": 1, "none": 1}


def test_totals_need_every_untuned_time(tuned: Tuned) -> None:
    cov = coverage(tuned.tasks, _library(tuned), tuned.host, untuned_us={0: 1.0, 1: 2.0})
    assert (cov.library_us, cov.untuned_us, cov.covered_share) == (None, None, None)
    assert [t.untuned_us for t in cov.tasks] == [1.0, 2.0, None, None]
    assert cov.model == "model"


def test_a_library_of_one_model_covers_it_whole(tuned: Tuned) -> None:
    cov = coverage(tuned.tasks, Library(tuned.full, cache=False), "llvm", model="mlp")
    assert [t.match for t in cov.tasks] == ["exact"] * 4
    assert [t.source for t in cov.tasks] == [f"mlp/{t.name}" for t in tuned.tasks]
    assert cov.problems == () and cov.library == ("mlp",)


def test_an_empty_library_covers_nothing(tuned: Tuned) -> None:
    cov = coverage(tuned.tasks, Library([]), tuned.host, untuned_us=dict.fromkeys(range(4), 5.0))
    assert cov.counts() == {"exact": 0, "anchor": 0, "sibling": 0, "none": 4}
    assert (cov.library_us, cov.untuned_us, cov.covered_share, cov.library) == (25.0, 25.0, 0.0,
                                                                                ())


def test_coverage_text(tuned: Tuned) -> None:
    untuned = {0: 10.0, 1: 20.0, 2: 30.0, 3: 40.0}
    cov = _expected(tuned, untuned)
    lines = coverage_text(cov).splitlines()
    assert lines[0] == f"coverage of mlp on {cov.target} by 3 source(s)"
    assert lines[1].split() == ["#", "task", "weight", "match", "best", "us", "source"]
    assert [line.split() for line in lines[3:7]] == [
        ["0", "softmax", "1", "none", "-", "-"],
        ["1", "fused_matmul2_add1", "1", "exact", f"{cov.tasks[1].best_us:,.1f}", "exact/main"],
        ["2", "fused_matmul1_add_relu", "2", "anchor", f"{cov.tasks[2].best_us:,.1f}",
         "linear/fused_matmul_add"],
        ["3", "fused_matmul_add_relu", "1", "sibling", "-", "linear/fused_matmul_add"]]
    assert lines[7:] == [
        "", "tasks: 4 (1 exact, 1 anchor, 1 sibling, 1 none)",
        f"estimated latency: {cov.library_us:,.1f} us from the library, 130.0 us untuned",
        "covered share (exact or anchor) of the untuned latency: 61.5%",
        "", "problems:", f"  {cov.problems[0]}"]
    unmeasured = coverage_text(_expected(tuned, None)).splitlines()
    assert "estimated latency: untuned times not measured" in unmeasured
    assert not any(line.startswith("covered share") for line in unmeasured)
