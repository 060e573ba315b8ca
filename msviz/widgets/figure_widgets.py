"""Reads of the internals of plotly's ``FigureWidget`` (an ipywidgets widget), the one module
of msviz outside :mod:`msviz.compat` that reads a third-party internal: each says which public
API is missing. It lives with its users, the widgets; it imports neither plotly nor ipywidgets
(the widget's class comes from the caller)."""

from __future__ import annotations

from typing import Any

__all__ = ["shown_layout", "unvalidated_figure_widget"]


def unvalidated_figure_widget(factory: Any, layout: dict) -> Any:
    """``factory(layout=layout)`` (a plotly ``FigureWidget``) constructed without validating
    ``layout``, with validation on again after (an unvalidated figure would not send its later
    property changes to the browser).

    Private: plotly has no public way to skip validation for one constructor call (the
    ``_validate`` argument, the figure's and its layout's ``_validate``)."""
    widget = factory(layout=layout, _validate=False)
    widget._validate = widget._layout_obj._validate = True
    return widget


def shown_layout(widget: Any) -> Any:
    """A ``FigureWidget``'s own layout dict, without the deep copy of ``to_plotly_json()``
    (None where it has none).

    Private read: plotly has no public read-only view of a figure's layout (``_layout``)."""
    return getattr(widget, "_layout", None)
