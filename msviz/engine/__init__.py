"""The tuning engine: a Session (its settings one SessionConfig) in a worker thread
(``control``), the step-able search (``search``), which task tunes next (``task_scheduler``),
each task's tuning (``tuning``) and the measuring service (``measure``: the one way msviz builds
and runs kernels, under its process-wide lock), told as events."""

from msviz.engine.config import SessionConfig
from msviz.engine.events import EVENT_KINDS, Event, EventLog
from msviz.engine.measure import MeasuringService
from msviz.engine.search import PRESETS, EvolutionarySearch, SearchKnobs
from msviz.engine.session import STATES, Session, SessionStateError
from msviz.engine.tuning import InfrastructureError
from msviz.space_generator import RuleError, RuleSet, RuleSpec

__all__ = [
    "EVENT_KINDS",
    "PRESETS",
    "STATES",
    "Event",
    "EventLog",
    "EvolutionarySearch",
    "InfrastructureError",
    "MeasuringService",
    "RuleError",
    "RuleSet",
    "RuleSpec",
    "SearchKnobs",
    "Session",
    "SessionConfig",
    "SessionStateError",
]
