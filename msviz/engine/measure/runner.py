"""Runners by name, as ``scheduler.create`` makes task schedulers: ``create("local")``,
``create("rpc")`` (the ``TVM_TRACKER_*`` environment), :func:`msviz.rpc`'s spec, or a
MetaSchedule ``Runner`` as it is; and whether a CUDA device can run kernels here."""

from __future__ import annotations

import functools
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from msviz import compat
from msviz.engine.measure import rpc
from msviz.engine.measure.worker_pool import name_deaths

__all__ = ["EVALUATOR_RANGES", "RUNNERS", "create", "cuda_available", "evaluator_config",
           "remakeable"]

#: The runners msviz makes by name.
RUNNERS = ("local", "rpc")


#: The values msviz times kernels with: ``EvaluatorConfig`` field -> (lowest, highest). A run
#: of ``number`` 0 never ends a repeat, ``repeat`` 0 has no time to report, and a
#: ``min_repeat_ms`` past ten minutes outlasts any runner timeout.
EVALUATOR_RANGES = {"number": (1, 100_000), "repeat": (1, 1_000), "min_repeat_ms": (0, 600_000)}


def evaluator_config(config: Any = None) -> Any:
    """MetaSchedule's ``EvaluatorConfig`` from None (its defaults), a dict or itself, checked.

    Raises
    ------
    TypeError
        A dict's unknown key (the keys are named), a value of the wrong type, or neither a dict
        nor an ``EvaluatorConfig``.
    ValueError
        A value outside :data:`EVALUATOR_RANGES`, naming it and its range.
    """
    cls = compat.ms.runner.EvaluatorConfig
    if config is None:
        return cls()
    if isinstance(config, Mapping):
        unknown = sorted(set(config) - set(cls._fields), key=str)
        if unknown:
            raise TypeError(f"evaluator_config has no {', '.join(map(repr, unknown))}; its keys: "
                            f"{', '.join(cls._fields)}")
        config = cls(**config)
    if not isinstance(config, cls):
        raise TypeError(f"evaluator_config must be a dict or an EvaluatorConfig, not "
                        f"{type(config).__name__}")
    for name, (low, high) in EVALUATOR_RANGES.items():
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"evaluator_config {name} must be an int from {low} to {high:,}, "
                            f"not {type(value).__name__} {value!r}")
        if not low <= value <= high:
            raise ValueError(f"evaluator_config {name}={value} is out of range: it must be from "
                             f"{low} to {high:,}")
    if not isinstance(config.enable_cpu_cache_flush, (bool, np.bool_)):
        raise TypeError(f"evaluator_config enable_cpu_cache_flush must be True or False, not "
                        f"{config.enable_cpu_cache_flush!r}")
    return config


def remakeable(kind: Any) -> bool:
    """Whether :func:`create` can make a fresh runner of this kind (to replace a dead pool)."""
    return isinstance(kind, (str, rpc.RPCSpec))


def create(kind: Any, target: Any, *, timeout: float, evaluator: Any = None) -> Any:
    """A MetaSchedule runner.

    Parameters
    ----------
    kind : str | RPCSpec | Runner
        ``"local"`` (``LocalRunner``, its worker on the target's kernel threads), ``"rpc"``,
        an :class:`~msviz.engine.measure.rpc.RPCSpec`, or a ``Runner`` used as it is.
    target : Target
        What the kernels were built for.
    timeout : float
        Seconds per candidate (over RPC: the session timeout).
    evaluator : EvaluatorConfig | dict, optional
        How to time a kernel.
    """
    if kind == "rpc":
        kind = rpc.from_env()
    evaluator = evaluator_config(evaluator)
    if kind == "local":
        threads = compat.kernel_threads(target)
        return name_deaths(compat.ms.runner.LocalRunner(
            timeout_sec=timeout, evaluator_config=evaluator,
            initializer=None if threads is None
            else functools.partial(compat.set_kernel_threads, threads)))
    if isinstance(kind, rpc.RPCSpec):
        return kind.make_runner(evaluator, session_timeout=timeout,
                                servers=rpc.servers_under(kind, default=1))
    if isinstance(kind, str):
        raise ValueError(f"unknown runner {kind!r}: use one of {', '.join(RUNNERS)} or a "
                         "MetaSchedule Runner")
    return kind


def cuda_available() -> str | None:
    """None if a CUDA device can run kernels here, else why not."""
    return compat.cuda_available()
