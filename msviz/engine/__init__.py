"""The tuning engine: a Session in a worker thread, step-able evolutionary search, events."""

from msviz.engine.events import EVENT_KINDS, Event, EventLog
from msviz.engine.evolution import EvolutionarySearch
from msviz.engine.measure import Measurer
from msviz.engine.presets import PRESETS, SearchKnobs
from msviz.engine.rules import RuleError, RuleSet, RuleSpec
from msviz.engine.session import STATES, Session, SessionStateError
from msviz.engine.tuner import InfrastructureError

__all__ = [
    "EVENT_KINDS",
    "PRESETS",
    "STATES",
    "Event",
    "EventLog",
    "EvolutionarySearch",
    "InfrastructureError",
    "Measurer",
    "RuleError",
    "RuleSet",
    "RuleSpec",
    "SearchKnobs",
    "Session",
    "SessionStateError",
]
