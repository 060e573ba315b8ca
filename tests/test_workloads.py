"""The workload catalogue and user-supplied programs."""

from __future__ import annotations

import pytest

from msviz import WorkloadError, compat, workloads


@pytest.mark.parametrize(
    ("name", "flop"),
    [("GMM-0", 2 * 128**3), ("GMM-1", 2 * 512 * 32 * 512), ("SFM-0", None), ("C2D-3", None)],
)
def test_catalogue_workloads(name: str, flop: int | None) -> None:
    wl = workloads.get(name)
    assert wl.name == name
    funcs = [gv.name_hint for gv, _ in wl.mod.functions_items()]
    assert funcs == ["main"]
    assert wl.flop > 0
    if flop is not None:
        assert wl.flop == flop


def test_every_catalogue_name_builds() -> None:
    names = workloads.catalogue()
    assert {"GMM", "C2D", "SFM", "CBR", "DEP"} <= set(names)
    for name in names:
        assert workloads.get(name, 0).mod is not None


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
