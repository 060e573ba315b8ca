"""Builders by name, as ``scheduler.create`` makes task schedulers: ``create("local")`` or a
MetaSchedule ``Builder`` as it is."""

from __future__ import annotations

from typing import Any

from msviz import compat

__all__ = ["BUILDERS", "create"]

#: The builders msviz makes by name.
BUILDERS = ("local",)


def create(kind: Any = "local", *, max_workers: int, timeout: float) -> Any:
    """A MetaSchedule builder.

    Parameters
    ----------
    kind : str | Builder
        ``"local"``: ``LocalBuilder`` with msviz's fast build function (no 13-20 s import of the
        tensor intrinsics in every worker); a ``Builder`` object is used as it is.
    max_workers : int
        Build processes.
    timeout : float
        Seconds per candidate.
    """
    if isinstance(kind, str):
        if kind == "local":
            return compat.local_builder(max_workers=max_workers, timeout_sec=timeout)
        raise ValueError(f"unknown builder {kind!r}: use one of {', '.join(BUILDERS)} or a "
                         "MetaSchedule Builder")
    return kind
