"""The design-space view: each space's trace, decision sites, size and IRModule; after a rule
edit, which spaces appeared or disappeared."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from msviz.space_generator import design_spaces_and_warnings
from msviz.views.design_spaces import DesignSpaceInfo, design_space_info, space_changes
from msviz.whynot.answer import why_not
from msviz.widgets.common import ErrorArea, code_html
from msviz.widgets.trace_view import measured_text
from msviz.widgets.why_not_view import WhyNotView

__all__ = ["DesignSpaceView"]


class DesignSpaceView(W.VBox):
    """Design spaces of a workload under a RuleSet; :meth:`show_rules` after an edit.

    Parameters
    ----------
    workload : Workload | IRModule | str
        What the rules are applied to.
    target : str | Target
        Target of the rules.
    rules : RuleSet, optional
        Default: the target's defaults.
    generate : callable, optional
        ``generate(rules)`` -> ``(spaces, warnings)`` or a Future of them (a session's
        :meth:`~msviz.Session.design_spaces`, which its worker answers between stages); default:
        generated here, for a finished run.
    on_measure : callable, optional
        What the "Why not?" panel's Measure calls (a session's re-measure); default: built,
        checked and timed here.
    """

    def __init__(self, workload: Any, *, target: Any = "llvm", rules: Any = None,
                 compute: bool = True, generate: Any = None, on_measure: Any = None) -> None:
        self.workload, self.target, self.rules = workload, target, rules
        self.generate = generate or (
            lambda rules: design_spaces_and_warnings(self.workload, self.target, rules))
        self.info = DesignSpaceInfo(())
        self.changes: Any = None
        self.summary = W.HTML()
        self.space = W.Dropdown(options=[], description="Space")
        self.detail = W.HTML()
        self.error = ErrorArea()
        self.space.observe(lambda _c: self._draw(), names="value")
        self.why_not = WhyNotView(lambda **want: why_not(
            self.workload, target=self.target, rules=self.rules, **want),
            on_measure=on_measure, describe=measured_text)
        super().__init__([self.summary, self.space, self.detail, self.error, self.why_not])
        if compute:
            self.show_rules(rules)

    def show_rules(self, rules: Any) -> None:
        """Generate the spaces under ``rules`` and mark what changed since the last rules."""
        self.rules = rules
        with self.error.guard(self) as guard:
            result = self.generate(rules)
        if guard.failed:
            return
        if hasattr(result, "add_done_callback"):  # the session's worker answers between stages
            self.summary.value = ("<i>generating the design spaces in the session's worker "
                                  "(between stages)…</i>")
            result.add_done_callback(self._generated)
            return
        self._show(result)

    def _generated(self, future: Any) -> None:
        with self.error.guard(self) as guard:
            result = future.result()
        if not guard.failed:
            self._show(result)

    def _show(self, result: tuple) -> None:
        with self.error.guard(self) as guard:
            new = design_space_info(*result)
        if guard.failed:
            return
        self.changes = space_changes(self.info, new) if self.info.spaces else None
        self.info = new
        with self.hold_sync():
            self.space.options = [(f"space {s.index} (size {s.size:,})", s.index)
                                  for s in new.spaces]
            self.space.value = new.spaces[0].index if new.spaces else None
        self.summary.value = summary_html(new, self.changes)
        self._draw()

    def _draw(self) -> None:
        spaces = {s.index: s for s in self.info.spaces}
        s = spaces.get(self.space.value)
        if s is None:
            self.detail.value = ""
            return
        sites = "".join(f"<li>#{i} {html.escape(k)}: {n:,} choices</li>" for i, k, n in s.sites)
        uses = ""
        if s.intrinsics:
            uses = ("<p>uses tensor intrinsic " + ", ".join(
                f"<code>{html.escape(i)}</code>" for i in s.intrinsics) + ": its blocks are "
                "blockized and annotated <code>meta_schedule.auto_tensorize</code>; the "
                "<code>RewriteTensorize</code> postproc replaces them with the intrinsic</p>")
        self.detail.value = (f"{uses}<ul>{sites}</ul><b>Trace</b>{code_html(s.trace)}"
                             f"<b>IRModule</b>{code_html(s.script)}")


#: Style of a space that uses a tensor intrinsic, and of a warning.
TENSORIZED_STYLE = "background:#efe6ff"
WARNING_STYLE = "color:#8a5300;background:#fff4e0;padding:4px 8px;margin:4px 0"


def summary_html(info: DesignSpaceInfo, changes: Any = None) -> str:
    """The table of spaces (tensorized ones marked with their intrinsic) and the warnings."""
    rows = "".join(
        f"<tr style='{TENSORIZED_STYLE if s.intrinsics else ''}'><td>{s.index}</td>"
        f"<td>{len(s.sites)}</td><td>{s.size:,}</td>"
        f"<td>{html.escape(', '.join(sorted({k for _, k, _ in s.sites})))}</td>"
        f"<td>{html.escape(', '.join(s.intrinsics)) or '-'}</td></tr>"
        for s in info.spaces)
    warnings = "".join(f"<div class='msviz-warning' style='{WARNING_STYLE}'>&#9888; "
                       f"{html.escape(w)}</div>" for w in info.warnings)
    used = len(info.tensorized)
    head = f"<b>{len(info.spaces)} design space(s)</b>"
    if used:
        head += f", {used} use a tensor intrinsic"
    note = ""
    if changes is not None:
        note = (f"<p>after the rule edit: {len(changes.appeared)} space(s) appeared "
                f"{list(changes.appeared)}, {len(changes.disappeared)} "
                f"disappeared {list(changes.disappeared)}, {len(changes.kept)} kept</p>")
    return (f"{head}{note}{warnings}<table class='msviz-spaces'>"
            "<tr><th>space</th><th>sites</th><th>size</th><th>kinds</th>"
            f"<th>tensor intrinsic</th></tr>{rows}</table>")
