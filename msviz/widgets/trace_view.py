"""The trace view: instructions with sampling sites highlighted and explained; each editable
decision is a dropdown of its valid choices; an edit replays the trace and shows the diff."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from msviz.trace import (
    decision_sites,
    side_by_side_html,
    target_of,
    trace_rows,
    with_decisions,
)
from msviz.trace.tensorize import tensorize_info
from msviz.widgets.common import ErrorArea, Selection, code_html
from msviz.widgets.why_not_view import WhyNotView

__all__ = ["TraceView", "measured_text"]

#: What the view says while no trial is selected.
NO_TRIAL = "<i>Select a trial (click a row in the Trials tab) to see and edit its trace.</i>"


#: Style of the rows that take part in tensorization (blockize, tensorize, the annotations).
TENSORIZE_STYLE = "background:#efe6ff;font-weight:600"

#: Style of a sampling row whose recorded decision is outside its sampler's range.
OUT_OF_RANGE_STYLE = "background:#ffe0e0;font-weight:600"

#: Value of the dropdown option that keeps a recorded decision outside the valid choices.
RECORDED = -1


def trace_table_html(rows: Any, tensorize: Any = None, sites: Any = ()) -> str:
    """The trace rows as an HTML table; sampling rows highlighted, explanations as tooltips.

    ``tensorize`` (a :class:`~msviz.trace.tensorize.TensorizeInfo`) marks its steps, each with
    a badge naming the intrinsic. ``sites`` (:class:`~msviz.trace.DecisionSite`) mark the
    sampling rows whose decision is outside the sampler's range, with a badge saying why.
    """
    steps = {s.index: s for s in tensorize.steps} if tensorize is not None else {}
    flagged = {s.index: s.out_of_range for s in sites if s.out_of_range}
    out = ['<table class="msviz-trace" style="font-size:12px;border-collapse:collapse">']
    for row in rows.itertuples():
        step = steps.get(row.index)
        reason = flagged.get(row.index, "")
        style = OUT_OF_RANGE_STYLE if reason else TENSORIZE_STYLE if step is not None else (
            "background:#fff6d6;font-weight:600" if row.sampling else (
                "color:#777" if row.postproc else ""))
        badge = ""
        if step is not None:
            label = step.kind.lower() + (f" {step.intrin}" if step.intrin else "")
            badge = (f' <span class="msviz-tensorize" style="background:#6b3fa0;color:white;'
                     f'border-radius:3px;padding:0 4px;font-size:11px">'
                     f"{html.escape(label)}</span>")
        if reason:
            badge += (' <span class="msviz-out-of-range" style="background:#c62828;color:white;'
                      'border-radius:3px;padding:0 4px;font-size:11px">'
                      f"outside the sampler's range: {html.escape(reason)}</span>")
        tip = str(row.explanation) + (f"\nOutside the sampler's range: {reason}" if reason else "")
        out.append(
            f'<tr style="{style}" title="{html.escape(tip)}">'
            f'<td style="padding:1px 6px;text-align:right">{row.index}</td>'
            f'<td style="padding:1px 6px"><code>{html.escape(str(row.python))}</code>{badge}'
            "</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def out_of_range_html(sites: Any) -> str:
    """A warning listing the sites whose recorded decision is outside the sampler's range."""
    flagged = [s for s in sites if s.out_of_range]
    if not flagged:
        return ""
    items = "".join(
        f"<li>#{s.index} {html.escape(s.kind)}"
        + (f" of <code>{html.escape(s.subject)}</code>" if s.subject else "")
        + f": {html.escape(_decision_text(s.decision))}: {html.escape(s.out_of_range)}"
        + (f" ({html.escape(s.note)})" if s.note else "") + "</li>"
        for s in flagged)
    what = "decision is" if len(flagged) == 1 else f"{len(flagged)} decisions are"
    return (f'<div class="msviz-out-of-range" style="color:#c62828">&#9888; This trace\'s '
            f"{what} outside the sampler's range (MetaSchedule would not sample "
            f'{"it" if len(flagged) == 1 else "them"}):<ul style="margin:2px 0">{items}</ul>'
            "</div>")


def _decision_text(decision: Any) -> str:
    return str(list(decision)) if isinstance(decision, tuple) else str(decision)


def intrinsics_html(tensorize: Any) -> str:
    """Each tensor intrinsic a trace uses: its description and implementation as TVMScript."""
    if tensorize is None or not tensorize.intrinsics:
        return ""
    parts = []
    for intrin in tensorize.intrinsics:
        instr = ", ".join(intrin.instructions)
        parts.append(
            f'<details class="msviz-intrinsic" open><summary><b>Tensor intrinsic '
            f"<code>{html.escape(intrin.name)}</code></b>"
            + (f" (compiles to <code>{html.escape(instr)}</code>)" if instr else "")
            + "</summary><div style='display:flex;gap:8px'><div style='flex:1;min-width:0'>"
            "<i>description</i> (what a block must match)"
            f"{code_html(intrin.description, max_height='260px')}</div>"
            "<div style='flex:1;min-width:0'><i>implementation</i> (what replaces it)"
            f"{code_html(intrin.implementation, max_height='260px')}</div></div></details>")
    return "".join(parts)


def measured_text(data: dict) -> str:
    """One line on a finished :meth:`Session.remeasure` (its future's result)."""
    where = f"record line {data['line']}"
    what = f"a new trial ({where})" if data.get("new_trial") else where
    if data.get("check") == "wrong":
        return f"wrong result: {what} computes another answer than the workload; never the best"
    if data.get("error"):
        first = str(data["error"]).strip().splitlines()
        return f"failed: {what}: {first[0] if first else 'no message'}"
    secs = data.get("run_secs") or []
    latency = f"{1e6 * sum(secs) / len(secs):.1f} us" if secs else "no time"
    check = {"ok": "result checked: right", "error": "result check could not run",
             None: "result not checked"}.get(data.get("check"), "")
    verb = "measured" if data.get("new_trial") else "re-measured"
    return f"{verb} {what}: {latency}" + (f"; {check}" if data.get("new_trial") else "")


class TraceView(W.VBox):
    """The trace of the selected trial, with its decisions editable.

    Parameters
    ----------
    get_trial : callable
        ``get_trial(i)`` -> the trial at row ``i``.
    selection : Selection, optional
        Shared selection; the view follows it.
    target : str | Target
        Target whose postprocessors a replay applies.
    on_measure : callable, optional
        ``on_measure(replay)`` sends an edited schedule to be measured (a session's
        re-measure); the "Measure" button is disabled without it.
    """

    def __init__(self, get_trial: Callable[[int], Any], *, selection: Selection | None = None,
                 target: Any = "llvm", on_measure: Callable[[Any], Any] | None = None) -> None:
        self.get_trial = get_trial
        self.target = target
        self.on_measure = on_measure
        self.selection = selection or Selection()
        self.trial: Any = None
        self.sites: list = []
        self.replay: Any = None
        self.title = W.HTML()
        self.warning = W.HTML()
        self.table = W.HTML()
        self.intrinsics = W.HTML()
        self.tensorize: Any = None
        self.editors = W.VBox()
        self.reset_button = W.Button(description="Reset", icon="undo")
        self.measure_button = W.Button(description="Measure", icon="play", disabled=True,
                                       button_style="primary")
        self.status = W.HTML()
        self.status.add_class("msviz-measure-status")
        self.diff = W.HTML()
        self.error = ErrorArea()
        self.why_not = WhyNotView(self._why_not, on_measure=on_measure, describe=measured_text)
        self.reset_button.on_click(lambda _b: self.show(self.selection.trial))
        self.measure_button.on_click(lambda _b: self.measure())
        self.selection.observe(lambda c: self.show(c["new"]), names="trial")
        # the status under the buttons: what Measure did shows where it was pressed
        left = W.VBox([self.warning, self.editors, W.HBox([self.reset_button, self.measure_button]),
                       self.status], layout=W.Layout(min_width="420px", flex="0 0 420px"))
        super().__init__([
            self.title, W.HBox([left, W.Box([self.table], layout=W.Layout(flex="1 1 auto"))]),
            self.intrinsics, self.error, self.diff, self.why_not,
        ])
        self.show(self.selection.trial)

    # -- reading ---------------------------------------------------------------------------------

    def show(self, index: int) -> None:
        """Show trial ``index``: its instructions and one editor per decision site."""
        self.replay, self.diff.value, self.status.value = None, "", ""
        self.measure_button.disabled = True
        if index < 0:
            self.trial, self.sites = None, []
            self.editors.children, self.table.value, self.warning.value = (), "", ""
            self.tensorize, self.intrinsics.value = None, ""
            self.title.value = NO_TRIAL
            return
        with self.error.guard(self) as guard:
            self.trial = self.get_trial(index)
            self.sites = decision_sites(self.trial)
            rows = trace_rows(self.trial)
            self.tensorize = tensorize_info(self.trial)
        if guard.failed:
            self.warning.value = ""
            return
        used = ", ".join(i.name for i in self.tensorize.intrinsics)
        self.title.value = f"<b>Trace of trial {index}</b> ({len(rows)} instructions, " \
            f"{len(self.sites)} decision sites" + (
                f"; tensorized with <code>{html.escape(used)}</code>" if used else "") + ")"
        self.table.value = trace_table_html(rows, self.tensorize, self.sites)
        self.warning.value = out_of_range_html(self.sites)
        self.intrinsics.value = intrinsics_html(self.tensorize)
        editors = []
        for site in self.sites:
            label = f"#{site.index} {site.kind.replace('Sample', '')}"
            if site.out_of_range:
                label += " \u26a0"
            if not site.editable:
                why = f"; outside the sampler's range: {site.out_of_range}" \
                    if site.out_of_range else ""
                editors.append(W.HTML(f"{html.escape(label)}: {site.decision} (not editable"
                                      f"{html.escape(why)})"))
                continue
            options = [(lab, i) for i, lab in enumerate(site.labels)]
            if site.decision in site.choices:
                current = site.choices.index(site.decision)
            else:  # offered as recorded, so that showing the trace changes none of it
                current = RECORDED
                options.insert(0, (f"{_decision_text(site.decision)} (recorded, out of range)",
                                   RECORDED))
            tip = f"{site.subject}: {site.count} valid choices"
            if site.out_of_range:
                tip += f"; the recorded decision is outside them: {site.out_of_range}"
            box = W.Dropdown(options=options, value=current, description=label, tooltip=tip,
                             style={"description_width": "140px"},
                             layout=W.Layout(width="410px"))
            box.site_index = site.index  # type: ignore[attr-defined]
            box.observe(lambda _c: self.apply_edits(), names="value")
            editors.append(box)
        self.editors.children = editors

    def _why_not(self, **want: Any) -> Any:
        if self.trial is None:
            raise ValueError("select a trial first: its trace is where the want is forced")
        return self.trial.why_not(**want)

    # -- editing ---------------------------------------------------------------------------------

    def edits(self) -> dict[int, Any]:
        """The decisions changed in the editors: instruction index -> new decision."""
        out = {}
        by_index = {s.index: s for s in self.sites}
        for box in self.editors.children:
            if isinstance(box, W.Dropdown):
                site = by_index[box.site_index]
                if box.value == RECORDED:
                    continue
                choice = site.choices[box.value]
                if choice != site.decision:
                    out[site.index] = choice
        return out

    def apply_edits(self) -> Any:
        """Replay the trace with the edited decisions; show the TVMScript diff or the error."""
        edits = self.edits()
        self.status.value = ""
        if not edits:
            self.replay, self.diff.value = None, ""
            self.measure_button.disabled = True
            return None
        with self.error.guard(self) as guard:
            target = target_of(self.trial, self.target)  # the trial's own postprocs
            self.replay = with_decisions(self.trial, edits, target=target)
        if guard.failed:
            self.replay, self.diff.value = None, ""
            self.measure_button.disabled = True
            return None
        table = side_by_side_html(self.trial, self.replay, names=("recorded", "edited"))
        self.diff.value = f'<div class="msviz-diff" style="font-size:11px">{table}</div>'
        self.measure_button.disabled = self.on_measure is None
        return self.replay

    def measure(self) -> Any:
        """Send the edited schedule to ``on_measure`` and show what came back."""
        if self.replay is None or self.on_measure is None:
            return None
        with self.error.guard(self, clear=False) as guard:
            result = self.on_measure(self.replay)
        if guard.failed:
            return None
        self.status.value = "measuring the edited schedule..."
        if hasattr(result, "add_done_callback"):  # a session's Future: say how it went
            result.add_done_callback(self._measured)
        return result

    def _measured(self, future: Any) -> None:
        with self.error.guard(self, clear=False):
            self.status.value = html.escape(measured_text(future.result()))
