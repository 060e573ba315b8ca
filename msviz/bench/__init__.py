"""The bench: builds kernels and models, runs them, checks their outputs and times them. A
schedule's outputs against the untuned workload's on seeded random inputs, a tuned model end to
end against its untuned build, timed draws in fresh processes, a model profiled call by call,
two builds compared in paired rounds. It knows no lock and no session: the engine's measuring
room (:mod:`msviz.engine.measure.service`, the same bench one room up) calls it one measurement at
a time."""

from msviz.bench.model_check import check_model, fallback_tasks
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
