"""Design-space generation: schedule rules, postprocs and mutators as a RuleSet, the tensor
intrinsics a target takes, and the spaces they generate for a workload."""

from msviz.space_generator.generate import design_spaces_and_warnings, generate_design_spaces
from msviz.space_generator.rules import RuleError, RuleSet, RuleSpec

__all__ = [
    "RuleError",
    "RuleSet",
    "RuleSpec",
    "design_spaces_and_warnings",
    "generate_design_spaces",
]
