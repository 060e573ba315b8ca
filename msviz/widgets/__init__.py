"""Notebook widgets: thin renderers of the view infos, updated from a session's events."""

from msviz.widgets.common import defer_iri_grammars

defer_iri_grammars()  # before anything imports plotly's FigureWidget (2-3 s saved per kernel)

from msviz.widgets.adapter import UIAdapter  # noqa: E402
from msviz.widgets.code_view import CodeView  # noqa: E402
from msviz.widgets.common import Selection  # noqa: E402
from msviz.widgets.dashboard import Dashboard  # noqa: E402
from msviz.widgets.design_space_view import DesignSpaceView  # noqa: E402
from msviz.widgets.evolution_view import EvolutionView  # noqa: E402
from msviz.widgets.plots import PlotPanel  # noqa: E402
from msviz.widgets.rules_editor import RulesEditor  # noqa: E402
from msviz.widgets.trace_view import TraceView  # noqa: E402
from msviz.widgets.trial_table import TrialTable  # noqa: E402

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
