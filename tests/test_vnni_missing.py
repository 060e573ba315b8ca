"""An int8 workload on a target without AVX-512 VNNI says it tunes untensorized
(msviz/space_generator/intrinsics.py ``untensorized_int8``), in the session and the
design-space view."""

from __future__ import annotations

import pytest

import msviz
from msviz.space_generator import design_spaces_and_warnings

NO_VNNI = {"kind": "llvm", "mcpu": "haswell", "num-cores": 2}  # AVX2, no avx512vnni
VNNI = {"kind": "llvm", "mcpu": "cascadelake", "num-cores": 2}
NOTE = (r"int8 workload\(s\) I8DP-0: the target \(llvm haswell .*\) has no AVX-512 VNNI "
        r"\(avx512vnni\), so the default rules add no 'dot_16x4_vnni' and it tunes untensorized")


def test_session_on_int8_without_vnni_warns() -> None:
    with pytest.warns(msviz.MsvizWarning, match=NOTE) as caught:
        session = msviz.Session("I8DP-0", target=NO_VNNI)
    assert len(caught) == 1
    (event,) = session.events.of_kind("warning")
    assert event["message"] == str(caught[0].message)


def test_no_note_with_vnni_or_without_int8() -> None:
    # msviz's warnings are errors in tests: either would fail here
    assert not msviz.Session("I8DP-0", target=VNNI).events.of_kind("warning")
    assert not msviz.Session("GMM-0", target=NO_VNNI).events.of_kind("warning")


def test_design_space_warnings_say_why_nothing_tensorizes() -> None:
    _, warnings = design_spaces_and_warnings("I8DP-0", NO_VNNI)
    assert len(warnings) == 1 and "has no AVX-512 VNNI" in warnings[0]
