"""The code view: a trial's TVMScript, trace, lowered TIR or generated source, and a diff of
any two trials."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from msviz import trace as T
from msviz.trace import side_by_side_html
from msviz.trace.code import SpecialInstructions, special_instructions
from msviz.widgets.common import MARK_STYLE, ErrorArea, Selection, code_html

__all__ = ["CODE_KINDS", "CodeView"]

#: What the view can show: label -> (kind, pygments language).
CODE_KINDS = {
    "TVMScript": ("script", "python"),
    "Trace (Python)": ("trace", "python"),
    "Lowered TIR": ("lowered", "python"),
    "LLVM IR": ("ll", "llvm"),
    "Assembly": ("asm", "nasm"),
    "CUDA source": ("cuda", "cuda"),
}


def code_text(trial: Any, kind: str, target: Any) -> str:
    """The text of one code kind for a trial (``Trial``, ``Replay`` or ``Schedule``): lowered
    and generated for the trial's own target (``target`` for a bare Schedule)."""
    target = T.target_of(trial, target)
    if kind == "script":
        return T.tvmscript(trial)
    if kind == "trace":
        return T.trace_python(trial)
    if kind == "lowered":
        return T.lowered_tir(trial, target)
    if kind == "cuda":
        return T.generated_source(trial, target, "cuda")
    return T.generated_source(trial, target, kind)


def special_html(special: SpecialInstructions) -> str:
    """One line naming the special instructions found (highlighted in the code)."""
    if not special.counts:
        return ("<span style='color:#777'>(no special instructions: no VNNI / AMX dot "
                "products)</span>")
    found = ", ".join(f"<code>{html.escape(k)}</code> x{v}" for k, v in special.counts.items())
    return (f"<span class='msviz-special' style='{MARK_STYLE};display:inline;padding:0 4px'>"
            f"special instructions: {found} ({len(special.lines)} lines highlighted)</span>")


def excerpt_html(text: str, special: SpecialInstructions, *, limit: int = 6) -> str:
    """The first lines that use a special instruction, with their line numbers, so they show
    without scrolling the whole listing (plain text: the numbers confuse the asm lexer)."""
    if not special.lines:
        return ""
    lines = text.splitlines()
    shown = "\n".join(f"{i + 1:>6}: {lines[i].strip()}" for i in special.lines[:limit])
    more = len(special.lines) - limit
    note = f" (and {more} more, highlighted below)" if more > 0 else " (highlighted below)"
    return (f"<div class='msviz-special-excerpt' style='border-left:4px solid #e0a800;"
            f"padding-left:6px;margin:4px 0'><i>lines using them{note}</i>"
            f"{code_html(shown, 'text', max_height='140px')}</div>")


class CodeView(W.VBox):
    """Code of the selected trial and a diff between two trials.

    Parameters
    ----------
    get_trial : callable
        ``get_trial(i)`` -> the trial at row ``i`` (``Run.trial`` or ``Session.trial``).
    selection : Selection, optional
        Shared selection; the view follows it.
    target : str | Target
        Target to lower and build for (``"llvm"`` or ``"cuda"``).
    """

    def __init__(self, get_trial: Callable[[int], Any], *, selection: Selection | None = None,
                 target: Any = "llvm") -> None:
        self.get_trial = get_trial
        self.target = target
        self.selection = selection or Selection()
        cuda = str(getattr(target, "kind", target)).startswith("cuda") or target == "cuda"
        kinds = [k for k in CODE_KINDS if (k == "CUDA source") == cuda or k in (
            "TVMScript", "Trace (Python)", "Lowered TIR")]
        self.kind = W.Dropdown(options=kinds, value="TVMScript", description="Show")
        self.title = W.HTML()
        self.code = W.HTML()
        self.diff_a = W.BoundedIntText(value=0, min=0, max=10**9, description="Diff trial")
        self.diff_b = W.BoundedIntText(value=0, min=0, max=10**9, description="against")
        self.diff_button = W.Button(description="Diff", icon="columns")
        self.diff = W.HTML()
        self.error = ErrorArea()
        self.kind.observe(lambda _c: self.show(self.selection.trial), names="value")
        self.diff_button.on_click(lambda _b: self.show_diff(self.diff_a.value, self.diff_b.value))
        self.selection.observe(lambda c: self.show(c["new"]), names="trial")
        super().__init__([
            W.HBox([self.kind, self.title]), self.code,
            W.HBox([self.diff_a, self.diff_b, self.diff_button]), self.diff, self.error,
        ])
        self.show(self.selection.trial)

    def show(self, index: int) -> None:
        """Show trial ``index`` (its code in the chosen kind); -1 clears the view."""
        if index < 0:
            self.title.value = ""
            self.code.value = ("<i>Select a trial (click a row in the Trials tab) to see its "
                               "code.</i>")
            return
        kind, language = CODE_KINDS[self.kind.value]
        with self.error.guard(self) as guard:
            trial = self.get_trial(index)
            text = code_text(trial, kind, self.target)
        if guard.failed:
            return
        self.title.value = f"<b>trial {index}</b>"
        marks: tuple[int, ...] = ()
        excerpt = ""
        if kind in ("asm", "ll"):
            special = special_instructions(text)
            marks = special.lines
            self.title.value += " " + special_html(special)
            excerpt = excerpt_html(text, special)
        self.code.value = excerpt + code_html(text, language, mark_lines=marks)
        self.diff_b.value = self.diff_a.value
        self.diff_a.value = index

    def show_diff(self, a: int, b: int) -> None:
        """Side-by-side diff of trials ``a`` and ``b`` in the chosen code kind."""
        kind, _ = CODE_KINDS[self.kind.value]
        with self.error.guard(self) as guard:
            texts = [code_text(self.get_trial(i), kind, self.target) for i in (a, b)]
            table = side_by_side_html(texts[0], texts[1], names=(f"trial {a}", f"trial {b}"))
        if guard.failed:
            return
        self.diff.value = f'<div class="msviz-diff" style="font-size:11px">{table}</div>'
