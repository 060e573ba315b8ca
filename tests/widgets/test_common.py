"""The widgets' shared error area: a guarded block shows its failure as ``[ClassName]
message`` under the widget, and clears it once a guarded block succeeds."""

from __future__ import annotations

import pytest

from msviz.widgets.common import ErrorArea


class Probe:
    """Stands for a widget: only its class name shows."""


def test_guard_shows_failure_and_clears_on_success() -> None:
    area, probe = ErrorArea(), Probe()
    ran = []
    with area.guard(probe) as guard:
        raise ValueError("tile <4> does not divide 6")
        ran.append("after")  # never reached
    assert guard.failed and ran == []
    assert area.value == ('<div class="msviz-error" style="color:#b00020;white-space:pre-wrap">'
                          "[Probe] tile &lt;4&gt; does not divide 6</div>")
    assert area.text == "[Probe] tile <4> does not divide 6"
    with area.guard(probe, clear=False) as kept:  # succeeds, leaves the error shown
        pass
    assert not kept.failed and area.text == "[Probe] tile <4> does not divide 6"
    with area.guard(probe) as ok:
        ran.append("ok")
    assert not ok.failed and ran == ["ok"] and area.value == ""


def test_guard_lets_interrupts_through() -> None:
    area = ErrorArea()
    with pytest.raises(KeyboardInterrupt), area.guard(Probe()):
        raise KeyboardInterrupt
    assert area.value == ""


def test_figure_widget_draws_as_a_validated_one() -> None:
    """A figure widget built without validating its template, then shown two figures, holds
    what a validated plotly_white widget assigned the same figures the plain way holds."""
    import plotly.graph_objects as go

    from msviz.widgets.common import figure_widget, replace_figure

    figs = [go.Figure(go.Scatter(x=[1, 2], y=[3, 4]),
                      layout={"title": {"text": "a"}, "xaxis": {"type": "log"}}),
            go.Figure(go.Bar(x=["p", "q"], y=[1, 2]), layout={"title": {"text": "b"}})]
    widget = figure_widget()
    reference = go.FigureWidget(layout={"template": "plotly_white"})
    for fig in figs:
        replace_figure(widget, fig)
        with reference.batch_update():
            reference.data = ()
            reference.add_traces(list(fig.data))
            reference.layout = {**fig.layout.to_plotly_json(),
                                "template": reference.layout.template}
        # (a setting the new figure leaves out stays as an empty dict: the same drawing)
        assert {k: v for k, v in widget._layout.items() if v != {}} == reference._layout
        assert [{k: v for k, v in t.items() if k != "uid"} for t in widget._data] == \
            [{k: v for k, v in t.items() if k != "uid"} for t in reference._data]
    assert widget.layout.template.layout.plot_bgcolor == "white"
    with pytest.raises(ValueError):  # validation is on again once built
        widget.layout.title = {"no_such_property": 1}
