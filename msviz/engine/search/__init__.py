"""The search: msviz's step-able port of ``EvolutionarySearch``, MetaSchedule's ``ReplayTrace``,
the preset knobs, and the port as a ``PySearchStrategy`` for stock tuning."""

from msviz.engine.search.candidates import Candidate, Stage
from msviz.engine.search.evolution import EvolutionarySearch
from msviz.engine.search.generation import Generation
from msviz.engine.search.presets import PRESETS, SearchKnobs, knobs_for
from msviz.engine.search.py_strategy import MsvizSearchStrategy, search_strategy
from msviz.engine.search.replay import ReplayTrace

__all__ = [
    "PRESETS",
    "Candidate",
    "EvolutionarySearch",
    "Generation",
    "MsvizSearchStrategy",
    "ReplayTrace",
    "SearchKnobs",
    "Stage",
    "knobs_for",
    "search_strategy",
]
