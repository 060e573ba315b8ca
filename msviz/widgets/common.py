"""What the widgets share: the linked trial selection, code highlighting, error display.

The same concept one room down: :mod:`msviz.views.common` is what the view functions share."""

from __future__ import annotations

import functools
import html
import importlib
import importlib.util
import re
import sys
import types
from typing import Any

import ipywidgets as W
import traitlets

from msviz.views._plotly_imports import go, pio
from msviz.widgets.figure_widgets import unvalidated_figure_widget

__all__ = ["ErrorArea", "ErrorGuard", "Selection", "code_html", "figure_widget", "layout_leaves",
           "replace_figure"]


def defer_iri_grammars() -> None:
    """Compile ``rfc3987_syntax``'s grammars when an IRI is first checked, not on import.

    plotly's FigureWidget imports nbformat, which imports jsonschema, which imports
    ``rfc3987_syntax`` (where installed) for its "iri" format check: that import compiles
    lark grammars, 2-3 s before a kernel's first figure widget. A stand-in module loads the
    real one on first use of any of its names, so every check still runs as before. Nothing
    is done once jsonschema's formats or the module are loaded, or if it is not installed.
    """
    name = "rfc3987_syntax"
    if name in sys.modules or "jsonschema._format" in sys.modules:
        return
    if importlib.util.find_spec(name) is None:
        return
    stand_in = types.ModuleType(name)

    def real() -> Any:
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
        return importlib.import_module(name)

    def is_valid_syntax(*args: Any, **kwargs: Any) -> Any:
        return real().is_valid_syntax(*args, **kwargs)

    def getattr_(attr: str) -> Any:
        if attr.startswith("__"):  # the import machinery's probes (``__path__``...)
            raise AttributeError(attr)
        return getattr(real(), attr)

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    stand_in.__getattr__ = getattr_  # type: ignore[method-assign]
    sys.modules[name] = stand_in


#: The plotly template the widgets draw with (set once per figure widget, kept on updates).
TEMPLATE = "plotly_white"


class Selection(traitlets.HasTraits):
    """The trial selected anywhere in a dashboard (-1: none), and the task every tab focuses
    on ("": all tasks). Views link to this one object."""

    trial = traitlets.Int(-1)
    task = traitlets.Unicode("")


#: Background of the lines ``code_html`` marks (``mark_lines``).
MARK_STYLE = "background:#ffe08a;display:inline-block;min-width:100%"


def code_html(text: str, language: str = "python", *, max_height: str = "480px",
              mark_lines: tuple[int, ...] = ()) -> str:
    """Syntax-highlighted code as an HTML block (pygments; plain text if unknown); the
    0-based ``mark_lines`` get a highlighted background."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name

        lexer = get_lexer_by_name(language)
        body = highlight(text, lexer, HtmlFormatter(noclasses=True, nowrap=True))
    except Exception:  # no lexer for this language: show it plain
        body = html.escape(text)
    if mark_lines:
        marked = set(mark_lines)
        body = "\n".join(f'<span class="msviz-mark" style="{MARK_STYLE}">{line}</span>'
                         if i in marked else line for i, line in enumerate(body.split("\n")))
    return (
        f'<pre class="msviz-code" style="max-height:{max_height};overflow:auto;font-size:12px;'
        f'background:#f8f8fa;padding:8px;margin:0">{body}</pre>'
    )


class ErrorArea(W.HTML):
    """Shows ``[ClassName] message`` under a view; empty when there is no error."""

    def show(self, owner: object, err: BaseException | str) -> None:
        text = str(err) if not isinstance(err, str) else err
        self.value = (
            f'<div class="msviz-error" style="color:#b00020;white-space:pre-wrap">'
            f"[{type(owner).__name__}] {html.escape(text)}</div>"
        )

    def clear(self) -> None:
        self.value = ""

    def guard(self, owner: object, *, clear: bool = True) -> ErrorGuard:
        """A context manager that shows an exception raised in its block (and swallows it),
        or clears the area when the block succeeds; ``failed`` says which::

            with self.error.guard(self) as guard:
                info = compute()
            if guard.failed:
                return

        Parameters
        ----------
        owner : object
            The widget whose class name the message starts with.
        clear : bool
            Clear the area on success (off where the area also shows others' errors).
        """
        return ErrorGuard(self, owner, clear=clear)

    @property
    def text(self) -> str:
        """The error shown, as plain text ("" when none)."""
        return html.unescape(re.sub(r"<[^>]+>", "", self.value))


class ErrorGuard:
    """What :meth:`ErrorArea.guard` returns: ``failed`` is True once its block raised."""

    def __init__(self, area: ErrorArea, owner: object, *, clear: bool = True) -> None:
        self.area, self.owner, self.clear = area, owner, clear
        self.failed = False

    def __enter__(self) -> ErrorGuard:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: Any) -> bool:
        if err is None:
            if self.clear:
                self.area.clear()
            return False
        if not isinstance(err, Exception):  # KeyboardInterrupt, SystemExit: not ours
            return False
        self.failed = True
        self.area.show(self.owner, err)
        return True


def figure_widget() -> Any:
    """An empty plotly FigureWidget styled with :data:`TEMPLATE`.

    Constructed unvalidated: validating the template costs ~70 ms a widget (a dashboard has
    a dozen); the template is the registered one's JSON, as validation would have made it.
    Validation is on again after (an unvalidated figure would not send its later property
    changes to the browser).
    """
    return unvalidated_figure_widget(go.FigureWidget, {"template": _template_json()})


@functools.cache
def _template_json() -> dict:
    return pio.templates[TEMPLATE].to_plotly_json()  # type: ignore[no-any-return]


def layout_leaves(layout: dict, prefix: str = "") -> dict[str, Any]:
    """A layout's settings by dotted path (a list, such as ``annotations``, is one setting;
    the template is left out)."""
    out: dict[str, Any] = {}
    for key, value in layout.items():
        if key == "template":
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(layout_leaves(value, path + "."))
        else:
            out[path] = value
    return out


_MISSING = object()
#: Layout settings that are lists: emptied, not set to None, when a figure has none.
_LISTS = ("annotations", "shapes", "images", "sliders", "updatemenus", "selections")


def replace_figure(widget: Any, fig: Any) -> None:
    """Make a FigureWidget show ``fig`` in place (no new widget), in one batched update.

    The widget keeps its own template; ``fig`` comes from a view function (no template). Once
    a layout is shown, only the top-level settings that changed are sent (re-setting a whole
    layout validates the template again: 100+ ms)."""
    with widget.batch_update():
        if len(widget.data) == len(fig.data) and all(
            a.type == b.type for a, b in zip(widget.data, fig.data, strict=True)
        ):
            for old, new in zip(widget.data, fig.data, strict=True):
                old.update(new.to_plotly_json(), overwrite=True)
        else:
            widget.data = ()
            widget.add_traces(list(fig.data))  # at once: 84 add_trace calls took 2x as long
        layout = fig.layout.to_plotly_json()
        shown = getattr(widget, "_msviz_layout", None)
        if shown is None:
            widget.layout = {**layout, "template": widget.layout.template}
        elif shown != layout:
            # whole top-level settings (an axis, the annotations): what they leave out goes
            for key in dict.fromkeys([*shown, *layout]):
                if key != "template" and shown.get(key, _MISSING) != layout.get(key, _MISSING):
                    widget.layout[key] = layout.get(key, () if key in _LISTS else None)
        widget._msviz_layout = layout
