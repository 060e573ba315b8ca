"""Why-not: force a transformation MetaSchedule did not produce (a tile, a decision, an unroll, a
compute-at, a parallel or vectorized loop, a tensor intrinsic) on a trial's trace or a fresh
design space, and say which schedule rule, sampling instruction, primitive or postproc stops it.
Schedules only: measuring a forced schedule is the engine's
(:func:`msviz.engine.measure.requests.measure_forced`)."""

from msviz.whynot.answer import WANTS, WhyNot, why_not

__all__ = ["WANTS", "WhyNot", "why_not"]
