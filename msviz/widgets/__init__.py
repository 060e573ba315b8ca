"""Notebook widgets: thin renderers of the view infos, updated from a session's events."""

from msviz.widgets.trial_table import TrialTable

__all__ = ["TrialTable"]
