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
