"""Is a tuned kernel right? A schedule's outputs against the untuned workload's on seeded random
inputs, and a tuned model's end to end against its untuned build."""

from msviz.bench.model import check_model, fallback_tasks
from msviz.bench.schedule import (
    CHECK_MODES,
    CheckResult,
    Reference,
    check_schedule,
    compare,
    default_tolerance,
    random_inputs,
    validate_mode,
)

__all__ = [
    "CHECK_MODES",
    "CheckResult",
    "Reference",
    "check_model",
    "check_schedule",
    "compare",
    "default_tolerance",
    "fallback_tasks",
    "random_inputs",
    "validate_mode",
]
