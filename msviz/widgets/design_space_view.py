"""The design-space view: each space's trace, decision sites, size and IRModule; after a rule
edit, which spaces appeared or disappeared."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as W

from msviz.trace.spaces import generate_design_spaces
from msviz.views.design_spaces import DesignSpaceInfo, design_space_info, space_changes
from msviz.widgets.common import ErrorArea, code_html

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
    """

    def __init__(self, workload: Any, *, target: Any = "llvm", rules: Any = None,
                 compute: bool = True) -> None:
        self.workload, self.target = workload, target
        self.info = DesignSpaceInfo(())
        self.changes: Any = None
        self.summary = W.HTML()
        self.space = W.Dropdown(options=[], description="Space")
        self.detail = W.HTML()
        self.error = ErrorArea()
        self.space.observe(lambda _c: self._draw(), names="value")
        super().__init__([self.summary, self.space, self.detail, self.error])
        if compute:
            self.show_rules(rules)

    def show_rules(self, rules: Any) -> None:
        """Generate the spaces under ``rules`` and mark what changed since the last rules."""
        try:
            new = design_space_info(generate_design_spaces(self.workload, self.target, rules))
        except Exception as err:
            self.error.show(self, err)
            return
        self.error.clear()
        self.changes = space_changes(self.info, new) if self.info.spaces else None
        self.info = new
        with self.hold_sync():
            self.space.options = [(f"space {s.index} (size {s.size:,})", s.index)
                                  for s in new.spaces]
            self.space.value = new.spaces[0].index if new.spaces else None
        rows = "".join(
            f"<tr><td>{s.index}</td><td>{len(s.sites)}</td><td>{s.size:,}</td>"
            f"<td>{html.escape(', '.join(sorted({k for _, k, _ in s.sites})))}</td></tr>"
            for s in new.spaces)
        note = ""
        if self.changes is not None:
            note = (f"<p>after the rule edit: {len(self.changes.appeared)} space(s) appeared "
                    f"{list(self.changes.appeared)}, {len(self.changes.disappeared)} "
                    f"disappeared {list(self.changes.disappeared)}, {len(self.changes.kept)} "
                    "kept</p>")
        self.summary.value = (
            f"<b>{len(new.spaces)} design space(s)</b>{note}<table class='msviz-spaces'>"
            "<tr><th>space</th><th>sites</th><th>size</th><th>kinds</th></tr>"
            f"{rows}</table>")
        self._draw()

    def _draw(self) -> None:
        spaces = {s.index: s for s in self.info.spaces}
        s = spaces.get(self.space.value)
        if s is None:
            self.detail.value = ""
            return
        sites = "".join(f"<li>#{i} {html.escape(k)}: {n:,} choices</li>" for i, k, n in s.sites)
        self.detail.value = (f"<ul>{sites}</ul><b>Trace</b>{code_html(s.trace)}"
                             f"<b>IRModule</b>{code_html(s.script)}")
