"""The rules editor: a RuleSet as a form; "Apply" hands the edited rules to the session."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from msviz.space_generator.rules import RuleError
from msviz.widgets.common import ErrorArea

__all__ = ["RulesEditor"]


def _param_widget(name: str, value: Any) -> W.Widget:
    style = {"description_width": "170px"}
    layout = W.Layout(width="480px")
    if isinstance(value, bool):
        return W.Checkbox(value=value, description=name, style=style, indent=False)
    if isinstance(value, int):
        return W.IntText(value=value, description=name, style=style, layout=layout)
    if isinstance(value, float):
        return W.FloatText(value=value, description=name, style=style, layout=layout)
    if isinstance(value, str):
        return W.Text(value=value, description=name, style=style, layout=layout)
    # lists, dicts and None are edited as JSON
    return W.Text(value=json.dumps(value), description=name, style=style, layout=layout,
                  tooltip="JSON")


def _param_value(widget: W.Widget, original: Any, rule: str, name: str) -> Any:
    if isinstance(original, (bool, int, float, str)):
        return widget.value
    try:
        return json.loads(widget.value)
    except ValueError as err:
        raise RuleError(f"rule {rule}: parameter {name}: {widget.value!r} is not JSON ({err})")\
            from None


class RulesEditor(W.VBox):
    """Edit schedule rules (on/off, parameters), postprocs (on/off) and mutator probabilities.

    Parameters
    ----------
    rules : RuleSet
        The starting point (the session's rules).
    on_apply : callable, optional
        ``on_apply(rules)``, e.g. ``session.set_rules``.
    """

    def __init__(self, rules: Any, *, on_apply: Callable[[Any], Any] | None = None) -> None:
        self.base = rules.copy()
        self.on_apply = on_apply
        self.rule_boxes: list[tuple[W.Checkbox, dict[str, W.Widget]]] = []
        rule_rows = []
        for spec in self.base.schedule_rules:
            enabled = W.Checkbox(value=True, description=spec.name, indent=False,
                                 layout=W.Layout(width="260px"))
            params = {} if spec.obj is not None else {
                k: _param_widget(k, v) for k, v in spec.params.items()}
            self.rule_boxes.append((enabled, params))
            rule_rows.append(W.VBox([enabled, W.VBox(list(params.values()),
                                     layout=W.Layout(margin="0 0 0 24px"))]))
        self.postproc_boxes = [W.Checkbox(value=True, description=p.name, indent=False)
                               for p in self.base.postprocs]
        self.mutator_boxes = {name: W.BoundedFloatText(value=prob, min=0, max=1, step=0.01,
                                                       description=name,
                                                       style={"description_width": "170px"})
                              for name, prob in self.base.mutator_probs.items()}
        self.apply_button = W.Button(description="Apply", icon="check", button_style="primary",
                                     disabled=on_apply is None)
        self.status = W.HTML()
        self.error = ErrorArea()
        self.apply_button.on_click(lambda _b: self.apply())
        super().__init__([
            W.HTML("<b>Schedule rules</b>"), *rule_rows,
            W.HTML("<b>Postprocs</b>"), *self.postproc_boxes,
            W.HTML("<b>Mutator probabilities</b>"), *self.mutator_boxes.values(),
            W.HBox([self.apply_button, self.status]), self.error,
        ])

    def rules(self) -> Any:
        """The RuleSet the form describes (validated: a bad parameter raises RuleError)."""
        out = self.base.copy()
        kept = []
        for spec, (enabled, params) in zip(out.schedule_rules, self.rule_boxes, strict=True):
            if not enabled.value:
                continue
            for name, widget in params.items():
                spec.params[name] = _param_value(widget, spec.params[name], spec.name, name)
            kept.append(spec)
        out.schedule_rules = kept
        out.postprocs = [p for p, box in zip(out.postprocs, self.postproc_boxes, strict=True)
                         if box.value]
        out.mutator_probs = {name: float(box.value) for name, box in self.mutator_boxes.items()}
        return out.validate()

    def apply(self) -> Any:
        """Validate the form and hand the rules to ``on_apply``; errors show under the form."""
        with self.error.guard(self) as guard:
            rules = self.rules()
            result = self.on_apply(rules) if self.on_apply else None
        if guard.failed:
            self.status.value = ""
            return None
        self.status.value = "applied: the design spaces are regenerated before the next stage"
        return result
