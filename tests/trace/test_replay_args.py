"""``with_decisions`` names a ``decisions`` argument that is not a dict (msviz/trace/replay.py)."""

from __future__ import annotations

import pytest

import msviz
from msviz import compat, workloads


def test_decisions_as_a_list_is_named() -> None:
    mod = workloads.get("GMM-0").mod
    sch = compat.Schedule(mod)
    sch.sample_perfect_tile(sch.get_loops(sch.get_sblock("Z"))[1], n=4)
    with pytest.raises(TypeError, match=r"decisions must be a dict \{instruction index: new "
                       r"decision\}.*not a list: \[2, \[4, 8, 2, 2\]\]") as info:
        msviz.with_decisions(sch, [2, [4, 8, 2, 2]], mod=mod)
    assert "sampling instructions: [2]" in str(info.value)
    assert msviz.with_decisions(sch, {2: [4, 8, 2, 2]}, mod=mod, postprocs=False).trace
