"""A target's mcpu that LLVM does not know is refused, naming the CPU (msviz/compat.py)."""

from __future__ import annotations

import pytest

import msviz
from msviz import compat
from msviz.errors import TargetError


@pytest.mark.parametrize("target", [{"kind": "llvm", "mcpu": "skylakee"}, "llvm -mcpu=skylakee",
                                    '{"kind": "llvm", "mcpu": "skylakee"}'])
def test_unknown_mcpu_is_named(target: object) -> None:
    with pytest.raises(TargetError, match=r"target mcpu 'skylakee' is not a CPU LLVM knows for "
                       r"\S+ .*did you mean 'skylake'.*llvm_get_cpu_archlist.*llc -mcpu=help"):
        compat.make_target(target)


def test_session_refuses_an_unknown_mcpu() -> None:
    with pytest.raises(ValueError, match="target mcpu 'notacpu' is not a CPU LLVM knows"):
        msviz.Session("GMM-0", target={"kind": "llvm", "mcpu": "notacpu"})


def test_known_mcpus_pass() -> None:
    assert str(compat.make_target({"kind": "llvm", "mcpu": "haswell"}).attrs["mcpu"]) == "haswell"
    arm = {"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a72"}
    assert str(compat.make_target(arm).attrs["mcpu"]) == "cortex-a72"
    with pytest.raises(TargetError, match="'skylake' is not a CPU LLVM knows for aarch64"):
        compat.make_target({**arm, "mcpu": "skylake"})
