"""The workload catalogue and user-supplied programs."""

from __future__ import annotations

import pytest

from msviz import WorkloadError, compat, workloads

#: FLOP as TVM's estimate counts it: one per float add, subtract, multiply, divide, max; calls
#: (exp, sqrt) and the integer index / padding arithmetic are free.
#: Softmax over rows: max, subtract (exp is free), add (the sum) and divide per element.
SOFTMAX_256 = 256 * 256 * 4


@pytest.mark.parametrize(
    ("name", "flop"),
    [("GMM-0", 2 * 128**3), ("GMM-1", 2 * 512 * 32 * 512), ("SFM-0", SOFTMAX_256),
     # 3x3 conv, 7x7x512 -> 512 channels, padding 1
     ("C2D-3", 2 * 7 * 7 * 512 * 3 * 3 * 512)],
)
def test_catalogue_workloads(name: str, flop: int) -> None:
    wl = workloads.get(name)
    assert wl.name == name
    funcs = [gv.name_hint for gv, _ in wl.mod.functions_items()]
    assert funcs == ["main"]
    assert wl.flop == flop


#: Size 0 of every catalogue name: argument shapes (inputs then output) and FLOP written out by
#: hand from each operator's definition (2 per multiply-add; out-size x reduction size).
CATALOGUE = {
    "C1D": ([(1, 256, 64), (3, 64, 128), (1, 128, 128)], 2 * 128 * 128 * 3 * 64),
    "C2D": ([(1, 224, 224, 3), (7, 7, 3, 64), (1, 112, 112, 64)], 2 * 112 * 112 * 64 * 7 * 7 * 3),
    "C3D": ([(1, 16, 224, 224, 3), (7, 7, 7, 3, 64), (1, 8, 112, 112, 64)],
            2 * 8 * 112 * 112 * 64 * 7 * 7 * 7 * 3),
    "GMM": ([(1, 128, 128)] * 3, 2 * 128**3),
    "GRP": ([(1, 56, 56, 64), (3, 3, 16, 128), (1, 28, 28, 128)], 2 * 28 * 28 * 128 * 3 * 3 * 16),
    "DIL": ([(1, 224, 224, 3), (7, 7, 3, 64), (1, 109, 109, 64)], 2 * 109 * 109 * 64 * 7 * 7 * 3),
    "DEP": ([(1, 112, 112, 32), (1, 3, 3, 32), (1, 112, 112, 32)], 2 * 112 * 112 * 32 * 3 * 3),
    # transposed conv as a 4x4 conv over the zero-inserted input: every multiply-add counts
    "T2D": ([(1, 4, 4, 512), (4, 4, 512, 256), (1, 8, 8, 256)], 2 * 8 * 8 * 256 * 4 * 4 * 512),
    # capsule conv: out (8, 8, 4, 4, 32), reduction 3x3 x cap_k 4 x 32 channels
    "CAP": ([(1, 16, 16, 4, 4, 32), (3, 3, 4, 4, 32, 32), (1, 8, 8, 4, 4, 32)],
            2 * 8 * 8 * 4 * 4 * 32 * 3 * 3 * 4 * 32),
    # sum of squares (a multiply and an add per element); the sqrt is a call
    "NRM": ([(1, 256, 256), (1,)], 2 * 256 * 256),
    "SFM": ([(256, 256), (256, 256)], SOFTMAX_256),
    # conv 7x7 stride 2, then bias add, BN multiply, BN add and relu (a max): 4 per output
    "CBR": ([(1, 224, 224, 3), (7, 7, 3, 64), (64,), (64,), (64,), (1, 112, 112, 64)],
            2 * 112 * 112 * 64 * 7 * 7 * 3 + 4 * 112 * 112 * 64),
    "TBG": ([(1, 128, 12, 64), (1, 128, 12, 64), (1, 12, 128, 128)], 2 * 12 * 128 * 128 * 64),
}


def test_every_catalogue_name_builds() -> None:
    assert sorted(set(workloads.catalogue()) - set(workloads.INT8)) == sorted(CATALOGUE)
    for name, (shapes, flop) in CATALOGUE.items():
        wl = workloads.get(name, 0)
        args = compat.ArgInfo.from_prim_func(wl.mod["main"])
        assert [tuple(int(d) for d in a.shape) for a in args] == shapes, name
        assert all(str(a.dtype) == "float32" for a in args), name
        assert wl.flop == flop, name


#: Size 0 of the int8 workloads: (argument dtypes and shapes, FLOP written out by hand).
INT8_CATALOGUE = {
    "I8DP": ([("uint8", (64, 64)), ("int8", (4, 16, 16, 4)), ("int32", (64, 64))],
             2 * 64 * 64 * 64),
    "I8DU": ([("uint8", (64, 64)), ("int8", (64, 64)), ("int32", (64, 64))], 2 * 64 * 64 * 64),
    "I8C2D": ([("uint8", (1, 2, 8, 8, 16)), ("int8", (2, 2, 3, 3, 4, 16, 4)),
               ("int32", (1, 2, 6, 6, 16))], 2 * 6 * 6 * 32 * 32 * 3 * 3),
}


def test_int8_workloads() -> None:
    assert tuple(INT8_CATALOGUE) == workloads.INT8
    for name, (args, flop) in INT8_CATALOGUE.items():
        wl = workloads.get(name)
        infos = compat.ArgInfo.from_prim_func(wl.mod["main"])
        assert [(str(a.dtype), tuple(int(d) for d in a.shape)) for a in infos] == args, name
        assert wl.flop == flop, name
    with pytest.raises(WorkloadError, match="N must be a multiple of 16 and K of 4"):
        workloads.get("I8DP", shape=(8, 20, 8))


def test_custom_shape_and_index_forms() -> None:
    small = workloads.get("C2D", shape=(1, 14, 14, 16, 16, 3, 1, 1))
    assert small.flop == 2 * 14 * 14 * 16 * 16 * 9
    assert workloads.get("GMM:2").name == workloads.get("GMM", 2).name == "GMM-2"


def test_user_programs_resolve() -> None:
    gmm = workloads.get("GMM-0")
    from_script = workloads.resolve(gmm.mod.script())
    assert compat.structural_equal(from_script.mod, gmm.mod)
    from_func = workloads.resolve(gmm.mod["main"], name="mine")
    assert from_func.name == "mine" and from_func.flop == gmm.flop
    assert workloads.resolve(gmm) is gmm


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("NOPE", "unknown workload 'NOPE'; catalogue names: C1D"),
        ("GMM-7", "workload GMM has sizes 0..3"),
        ("@T.prim_func\ndef f(:\n", "cannot parse the TVMScript workload"),
        (42, "not int"),
    ],
)
def test_bad_workloads_say_what_is_wrong(bad: object, message: str) -> None:
    with pytest.raises(WorkloadError, match=message.replace("(", r"\(")):
        workloads.resolve(bad)
