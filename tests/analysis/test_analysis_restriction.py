"""Rule edits made on a copy of the rules (the proposal from real trials is tested with a tuned
session in tests/engine/test_restriction.py)."""

from __future__ import annotations

from msviz.analysis.restriction import RuleChange, apply_changes
from msviz.space_generator import RuleSet


def test_apply_changes_edits_a_copy() -> None:
    base = RuleSet.default({"kind": "llvm", "num-cores": 2})
    changes = [
        RuleChange("MultiLevelTiling", "max_innermost_factor", 64, 16, "winners"),
        RuleChange("ParallelizeVectorizeUnroll", "unroll_max_steps", [0, 16, 64, 512], [64],
                   "winners"),
        RuleChange("MutateUnroll", "probability", 0.03, 0.0, "one option left"),
        RuleChange("RandomComputeLocation", "", None, None, "all at the root"),
    ]
    got = apply_changes(base, changes)
    specs = {s.name: s for s in got.schedule_rules}
    assert specs["MultiLevelTiling"].params["max_innermost_factor"] == 16
    assert specs["ParallelizeVectorizeUnroll"].params["unroll_max_steps"] == [64]
    assert got.mutator_probs["MutateUnroll"] == 0.0
    assert "RandomComputeLocation" not in specs
    # the base is untouched
    before = {s.name: s for s in base.schedule_rules}
    assert before["MultiLevelTiling"].params["max_innermost_factor"] == 64
    assert "RandomComputeLocation" in before and base.mutator_probs["MutateUnroll"] > 0
    assert str(changes[0]) == "MultiLevelTiling.max_innermost_factor: 64 -> 16: winners"
    assert str(changes[3]) == "remove RandomComputeLocation: all at the root"
