"""The target of a tuning record: one text per target, and whether two targets are the same.

A record stores its target as a JSON dict (``{"kind": "llvm", "mcpu": ..., "num-cores": 2,
...}``); two dicts can spell one target differently (key order, defaults left out). TVM's own
text of the Target built from the dict (``str(Target)``) is the same for the same target, so it
is the key msviz groups and merges records by. Two targets are the same when they are
structurally equal, as TVM compares its attribute objects.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from msviz import compat

__all__ = ["record_target", "same_target", "target_text"]


@functools.lru_cache(maxsize=256)
def _text_of_json(raw: str) -> str:
    return str(compat.target_from_json(json.loads(raw)))


def target_text(target: Any) -> str:
    """TVM's text of a target: the same for every spelling of one target.

    Parameters
    ----------
    target : str | dict | tvm.target.Target
        A record's target JSON text (as the record file holds it), its dict, or a Target.

    Raises
    ------
    ValueError
        When TVM cannot build a Target from it (unknown kind or attribute, not JSON).
    """
    try:
        if isinstance(target, str):
            return _text_of_json(target)
        if isinstance(target, dict):
            return _text_of_json(json.dumps(target, sort_keys=True))
        return str(target)
    except Exception as err:  # TVM raises its own error types for a bad attribute
        message = str(err).strip().splitlines()
        raise ValueError(f"not a target TVM can read ({message[-1] if message else err!r})"
                         ) from None


def record_target(target: Any) -> Any:
    """The ``tvm.target.Target`` a user names: a Target, a record's dict or JSON text, or
    anything :func:`msviz.compat.make_target` reads (``"llvm"``: this machine's CPU)."""
    if isinstance(target, str) and target.lstrip().startswith("{"):
        return compat.target_from_json(json.loads(target))
    if isinstance(target, dict):
        return compat.target_from_json(target)
    return compat.make_target(target)


def same_target(a: Any, b: Any) -> bool:
    """Whether two Targets are the same target (structurally equal: kind, attributes, host)."""
    return bool(compat.structural_equal(a, b))
