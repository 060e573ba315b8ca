"""The "Why not?" panel: ask for a transformation MetaSchedule did not produce, see what blocks
it (a renderer of :class:`~msviz.whynot.answer.WhyNot`), and measure the forced schedule."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import ipywidgets as W

from msviz.engine.measure.requests import measure_forced as measure
from msviz.whynot.answer import WANTS, WhyNot
from msviz.widgets.common import ErrorArea, code_html

__all__ = ["WhyNotView", "parse_want", "why_not_html"]

#: What the text box takes for each kind of want (its placeholder).
EXAMPLES = {
    "tensorize": "dot_16x4_vnni",
    "tile": "j: 2, 2, 2, 16",
    "decision": "18: 2   (site index or subject: value)",
    "unroll": "32",
    "compute_at": "PadInput, co_1   (block, loop)",
    "parallel": "j_1",
    "vectorize": "j_3   (or True: any loop)",
}


def parse_want(kind: str, text: str) -> Any:
    """The value of a want typed in the panel, e.g. ``parse_want("tile", "j: 2, 2, 2, 16")``
    is ``{"j": [2, 2, 2, 16]}``.

    Raises
    ------
    ValueError
        Naming the want and what it takes.
    """
    text = text.strip()
    if kind not in WANTS:
        raise ValueError(f"unknown want {kind!r}; one of {', '.join(WANTS)}")
    if not text:
        raise ValueError(f"{kind} needs a value, e.g. {EXAMPLES[kind]}")
    try:
        if kind == "tile":
            out = {}
            for part in text.split(";"):
                loop, factors = part.split(":")
                out[loop.strip()] = [int(f) for f in factors.replace("[", "").replace(
                    "]", "").split(",")]
            return out
        if kind == "unroll":
            return int(text)
        if kind == "compute_at":
            block, loop = (p.strip() for p in text.split(","))
            return (block, loop)
        if kind == "decision":
            site, value = text.split(":", 1)
            key: Any = int(site) if site.strip().isdigit() else site.strip()
            return (key, json.loads(value.split("(")[0].strip()))
    except ValueError as err:
        raise ValueError(f"{kind}: cannot read {text!r} (write it as {EXAMPLES[kind]}): "
                         f"{err}") from None
    if kind == "vectorize" and text.lower() == "true":
        return True
    return text


#: Colours of the answer's head line.
_OK, _BLOCKED = "#1b7f3b", "#a3261c"


def why_not_html(info: WhyNot | None) -> str:
    """The answer as HTML: possible or what blocks it, the reason, the differences, the steps
    run, TVM's message, the IR fragment and the forced schedule."""
    if info is None:
        return "<i>Ask why a transformation never appears: pick what you want, then Ask.</i>"
    want = ", ".join(f"{k}={v!r}" for k, v in info.want.items())
    space = "the trial's trace" if info.space is None else f"design space {info.space}"
    if info.possible:
        head = (f"<b style='color:{_OK}'>&#10003; possible</b>: <code>{html.escape(want)}</code>"
                f" (in {space})")
    else:
        head = (f"<b style='color:{_BLOCKED}'>&#10007; blocked by "
                f"<code class='msviz-blocked-by'>{html.escape(info.blocked_by)}</code></b>: "
                f"<code>{html.escape(want)}</code> (in {space})")
    parts = [f"<div class='msviz-why-head'>{head}</div>",
             f"<p class='msviz-why-reason'>{html.escape(info.reason)}</p>"]
    if info.differences:
        items = "".join(f"<li>{html.escape(d)}</li>" for d in info.differences)
        parts.append(f"<b>Block vs the intrinsic's description</b><ul>{items}</ul>")
    if info.steps:
        chips = " &rarr; ".join(
            f"<span style='padding:0 4px;border-radius:3px;background:"
            f"{'#e3f4e8' if ok == 'ok' else '#fde2e0' if ok == 'failed' else '#eee'}'>"
            f"{html.escape(name)}</span>" for name, ok in info.steps)
        parts.append(f"<div class='msviz-why-steps' style='font-size:11px'>{chips}</div>")
    if info.tvm_message:
        parts.append(f"<p><b>TVM</b>: <code>{html.escape(info.tvm_message)}</code></p>")
    if info.ir:
        parts.append(f"<details open><summary>IR it failed on</summary>"
                     f"{code_html(info.ir, max_height='240px')}</details>")
    if info.schedule:
        parts.append(f"<details><summary>Forced schedule (TVMScript)</summary>"
                     f"{code_html(info.schedule, max_height='320px')}</details>")
    return "".join(parts)


def measured_html(result: dict) -> str:
    """One line on a local :func:`~msviz.whynot.answer.measure`."""
    if result.get("error"):
        return html.escape(f"failed: {result['error']}")
    check = {"ok": "result checked: right", "wrong": "WRONG result",
             "error": "result check could not run"}[result["check"]]
    return html.escape(f"measured the forced schedule: {result['latency_us']:.1f} us; {check} "
                       f"({result['detail']})")


class WhyNotView(W.VBox):
    """Ask "why not?" about a workload or a trial; Measure builds, checks and times the forced
    schedule.

    Parameters
    ----------
    ask : callable
        ``ask(**want) -> WhyNot`` (``trial.why_not``, or ``msviz.why_not`` bound to a workload).
    on_measure : callable, optional
        ``on_measure(replay)`` with ``replay.schedule`` the forced schedule (a session's
        re-measure, as the trace view's edits); default: built, checked and timed here.
    describe : callable, optional
        ``describe(result)`` -> one line on what ``on_measure``'s Future resolved to.
    """

    def __init__(self, ask: Callable[..., WhyNot], *,
                 on_measure: Callable[[Any], Any] | None = None,
                 describe: Callable[[Any], str] = str) -> None:
        self.ask_fn, self.on_measure, self.describe = ask, on_measure, describe
        self.info: WhyNot | None = None
        self.kind = W.Dropdown(options=list(WANTS), value="tensorize", description="Why not",
                               layout=W.Layout(width="220px"),
                               style={"description_width": "60px"})
        self.value = W.Text(value="", placeholder=EXAMPLES["tensorize"],
                            layout=W.Layout(width="320px"))
        self.ask_button = W.Button(description="Ask", icon="question")
        self.measure_button = W.Button(description="Measure", icon="play", disabled=True,
                                       button_style="primary")
        self.answer = W.HTML(why_not_html(None))
        self.status = W.HTML()
        self.error = ErrorArea()
        self.add_class("msviz-why-not")
        self.ask_button.add_class("msviz-why-ask")
        self.measure_button.add_class("msviz-why-measure")
        self.kind.observe(lambda c: setattr(self.value, "placeholder", EXAMPLES[c["new"]]),
                          names="value")
        self.ask_button.on_click(lambda _b: self.ask())
        self.measure_button.on_click(lambda _b: self.measure())
        super().__init__([
            W.HTML("<b>Why not?</b> force a transformation and see what blocks it"),
            W.HBox([self.kind, self.value, self.ask_button, self.measure_button]),
            self.error, self.answer, self.status,
        ])

    def ask(self, **want: Any) -> WhyNot | None:
        """Ask for ``want`` (default: what the dropdown and text box say); show the answer."""
        self.status.value = ""
        with self.error.guard(self) as guard:
            want = want or {self.kind.value: parse_want(self.kind.value, self.value.value)}
            self.answer.value = "<i>forcing it: design spaces, replay, postprocs…</i>"
            info = self.ask_fn(**want)
        if guard.failed:
            self.answer.value = why_not_html(self.info)
            return None
        self.info = info
        self.answer.value = why_not_html(info)
        self.measure_button.disabled = info.forced is None
        return info

    def measure(self) -> Any:
        """Build, check and time the forced schedule (through ``on_measure`` when given)."""
        if self.info is None or self.info.forced is None:
            return None
        with self.error.guard(self, clear=False) as guard:
            if self.on_measure is not None:
                result = self.on_measure(SimpleNamespace(schedule=self.info.forced))
            else:
                result = measure(self.info)
        if guard.failed:
            return None
        if hasattr(result, "add_done_callback"):  # a session's Future
            self.status.value = "measuring the forced schedule..."
            result.add_done_callback(lambda f: setattr(
                self.status, "value", html.escape(self.describe(f.result()))))
        else:
            self.status.value = measured_html(result)
        return result
