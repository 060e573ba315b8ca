"""The search: msviz's step-able port of ``EvolutionarySearch``, MetaSchedule's ``ReplayTrace``,
made by name with ``create(kind)``, the preset knobs, and the port as a ``PySearchStrategy`` for
stock tuning."""

from msviz.engine.search.candidates import Candidate, Stage
from msviz.engine.search.evolution import EvolutionarySearch
from msviz.engine.search.factory import STRATEGIES, create
from msviz.engine.search.generation import Generation
from msviz.engine.search.presets import PRESETS, SearchKnobs, knobs_for
from msviz.engine.search.py_strategy import MsvizSearchStrategy, search_strategy
from msviz.engine.search.replay_trace import ReplayTrace

__all__ = [
    "PRESETS",
    "STRATEGIES",
    "Candidate",
    "EvolutionarySearch",
    "Generation",
    "MsvizSearchStrategy",
    "ReplayTrace",
    "SearchKnobs",
    "Stage",
    "create",
    "knobs_for",
    "search_strategy",
]
