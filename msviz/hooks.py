"""What a higher layer lends a lower one: the dashboard the widgets draw.

``Session.dashboard()`` and ``Run.dashboard()`` live in layers that never import widgets; they
call :func:`dashboard`, which calls the factory the package root registers
(:func:`msviz.dashboard`, which imports the widgets on first use).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msviz.errors import MsvizError

__all__ = ["dashboard", "register_dashboard"]

_dashboard: Callable[..., Any] | None = None


def register_dashboard(factory: Callable[..., Any]) -> None:
    """Make ``factory(source, **options)`` the dashboard of Sessions and Runs."""
    global _dashboard
    _dashboard = factory


def dashboard(source: Any, **options: Any) -> Any:
    """The registered dashboard of ``source`` (a Session or a Run)."""
    if _dashboard is None:
        raise MsvizError("no dashboard is registered: import msviz (its root registers "
                         "msviz.dashboard)")
    return _dashboard(source, **options)
