"""Every instruction kind has a one-line explanation."""

from __future__ import annotations

from msviz.trace import GLOSSARY, explain, glossary, registered_kinds, trace_rows


def test_every_registered_kind_is_explained():
    kinds = registered_kinds()
    for expected in ("Split", "Reorder", "Fuse", "Parallel", "Vectorize", "Unroll", "CacheRead",
                     "CacheWrite", "ComputeAt", "ReverseComputeAt", "ComputeInline", "Bind",
                     "Annotate", "DecomposeReduction", "Tensorize", "SamplePerfectTile",
                     "SampleCategorical", "SampleComputeLocation", "EnterPostproc", "RFactor"):
        assert expected in kinds
    missing = [k for k in kinds if k not in GLOSSARY]
    assert missing == []
    assert all(len(text.splitlines()) == 1 and text.endswith(".") for text in glossary().values())


def test_explain_accepts_instructions(gmm_best, spaces):
    inst = gmm_best.trace.insts[0]
    assert explain(inst) == explain(inst.kind) == explain("GetSBlock") == GLOSSARY["GetSBlock"]
    assert "NoSuchKind" in explain("NoSuchKind")
    for _, space_list in spaces.values():
        for space in space_list:
            assert set(trace_rows(space)["kind"]) <= set(GLOSSARY)
