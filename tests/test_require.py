"""The conftest helper for tests of optional extras: a skip on a laptop, a failure in CI."""

from __future__ import annotations

import pytest

from tests.conftest import require

MISSING = "msviz_no_such_module"


def test_a_missing_extra_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=rf"{MISSING} is not installed \(msviz\[x\]\)"):
        require(MISSING, "msviz[x]")


@pytest.mark.parametrize("value", ["true", "True", "1"])
def test_a_missing_extra_fails_in_ci(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception,
                       match=rf"{MISSING} is missing in CI, where msviz\[x\] is installed"):
        require(MISSING, "msviz[x]")


def test_an_installed_module_is_returned_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    for value in ("true", ""):
        monkeypatch.setenv("CI", value)
        assert require("json", "the standard library") is json
