"""Notebook widgets: thin renderers of the view infos, updated from a session's events."""

from msviz.widgets.adapter import UIAdapter
from msviz.widgets.code_view import CodeView
from msviz.widgets.common import Selection
from msviz.widgets.dashboard import Dashboard
from msviz.widgets.design_space_view import DesignSpaceView
from msviz.widgets.evolution_view import EvolutionView
from msviz.widgets.plots import PlotPanel
from msviz.widgets.rules_editor import RulesEditor
from msviz.widgets.trace_view import TraceView
from msviz.widgets.trial_table import TrialTable

__all__ = [
    "CodeView",
    "Dashboard",
    "DesignSpaceView",
    "EvolutionView",
    "PlotPanel",
    "RulesEditor",
    "Selection",
    "TraceView",
    "TrialTable",
    "UIAdapter",
]
