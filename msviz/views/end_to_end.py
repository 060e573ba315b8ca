"""The end-to-end check of a tuned model: the compiled model run untuned and tuned on the same
random inputs (:func:`msviz.bench.model_check.check_model`), its ``end_to_end`` event as an
info and as one line of HTML. :mod:`msviz.views.tasks` draws it beside the model's latency.
"""

from __future__ import annotations

import html
from typing import Any, NamedTuple

__all__ = ["EndToEndInfo", "end_to_end_html", "end_to_end_info"]


class EndToEndInfo(NamedTuple):
    """The compiled model run untuned and tuned on the same random inputs."""

    untuned_us: float | None
    tuned_us: float | None
    speedup: float | None  # untuned / tuned
    match: bool | None  # outputs equal within tolerance
    max_abs_diff: float | None
    fallback: tuple[str, ...]  # tasks with no tuned record: their untuned kernel was used
    error: str | None
    # the times are the least of this many fresh processes (a check recorded before: one)
    draws: int = 1
    untuned_spread: float | None = None  # the slowest draw over the least
    tuned_spread: float | None = None
    # the draws (0-based) in which both builds ran in the machine's slow mode
    slow_draws: tuple[int, ...] = ()


def _get(obj: Any, key: str, default: Any = None) -> Any:
    """A field of an event (``Event.get``) or of a plain dict."""
    return default if obj is None else obj.get(key, default)
def end_to_end_info(event: Any) -> EndToEndInfo:
    """The end-to-end result of an ``end_to_end`` event (or its data as a dict): each time the
    least of its draws (fresh processes; :func:`msviz.bench.model_check.check_model`) and their
    spread, one draw for a check recorded before there were draws."""
    untuned, tuned = _get(event, "untuned_us"), _get(event, "tuned_us")
    speedup = untuned / tuned if untuned is not None and tuned else None
    diff = _get(event, "max_abs_diff")
    return EndToEndInfo(
        _float(untuned), _float(tuned), speedup, _get(event, "match"), _float(diff),
        tuple(str(n) for n in _get(event, "fallback") or ()), _get(event, "error"),
        int(_get(event, "draws") or 1), _float(_get(event, "untuned_spread")),
        _float(_get(event, "tuned_spread")),
        tuple(int(i) for i in _get(event, "slow_draws") or ()))


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def end_to_end_html(info: EndToEndInfo | None) -> str:
    """The end-to-end result in one line ("" before there is one)."""
    if info is None:
        return ""
    if info.error:
        return (f"<div class='msviz-e2e' style='color:#b00020'><b>End to end</b>: "
                f"{html.escape(info.error)}</div>")
    parts = []
    if info.untuned_us is not None:
        parts.append(f"untuned {info.untuned_us:.3f} µs")
    if info.tuned_us is not None:
        parts.append(f"tuned {info.tuned_us:.3f} µs")
    if info.speedup is not None:
        parts.append(f"speed-up {info.speedup:.2f}x")
    if info.draws > 1:  # a process can run ~2x slow for its whole life on a shared machine
        spreads = [f"{name} {value:.2f}x" for name, value in (
            ("untuned", info.untuned_spread), ("tuned", info.tuned_spread)) if value is not None]
        parts.append(f"least of {info.draws} fresh processes"
                     + (f" (spread: {', '.join(spreads)})" if spreads else ""))
        if info.slow_draws:
            which = ", ".join(str(i + 1) for i in info.slow_draws)
            parts.append(f"process{'es' if len(info.slow_draws) > 1 else ''} {which} ran in "
                         "the machine's slow mode (both builds slower together)")
    if info.match is not None:
        parts.append("outputs match" if info.match else
                     f"<b style='color:#b00020'>outputs differ</b> (max |diff| "
                     f"{info.max_abs_diff:.3g})")
    if info.fallback:
        parts.append("untuned kernels (no tuned record): "
                     + ", ".join(html.escape(n) for n in info.fallback))
    return f"<div class='msviz-e2e'><b>End to end</b>: {' · '.join(parts)}</div>"
