"""What a higher layer lends a lower one: the dashboard the widgets draw, and
:func:`msviz.why_not` for ``Trial.why_not`` (records sit below the analysis layer).

``Session.dashboard()`` and ``Run.dashboard()`` live in layers that never import widgets; they
call :func:`dashboard`, which calls the factory the package root registers
(:func:`msviz.dashboard`, which imports the widgets on first use).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msviz.errors import MsvizError

__all__ = ["dashboard", "register_dashboard", "register_why_not", "why_not"]

_registered: dict[str, Callable[..., Any]] = {}


def _call(name: str, source: Any, **options: Any) -> Any:
    if name not in _registered:
        raise MsvizError(f"no {name} is registered: import msviz (its root registers "
                         f"msviz.{name})")
    return _registered[name](source, **options)


def register_dashboard(factory: Callable[..., Any]) -> None:
    """Make ``factory(source, **options)`` the dashboard of Sessions and Runs."""
    _registered["dashboard"] = factory


def dashboard(source: Any, **options: Any) -> Any:
    """The registered dashboard of ``source`` (a Session or a Run)."""
    return _call("dashboard", source, **options)


def register_why_not(func: Callable[..., Any]) -> None:
    """Make ``func(workload, **options)`` what ``Trial.why_not`` and ``Session.why_not`` call."""
    _registered["why_not"] = func


def why_not(workload: Any, **options: Any) -> Any:
    """The registered :func:`msviz.why_not` of ``workload`` (a Trial, or a session's)."""
    return _call("why_not", workload, **options)
