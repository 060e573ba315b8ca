"""The rewrite rules of msviz.records.s_tir_rename, on hand-written old records."""

from __future__ import annotations

import pytest

from msviz.records import s_tir_rename as migrate

OLD_TRACE = [
    [
        ["GetBlock", [], ["C", "main"], ["b0"]],
        ["GetLoops", ["b0"], [], ["l1", "l2"]],
        ["SamplePerfectTile", ["l1"], [2, 64], ["v3", "v4"]],
        ["Split", ["l1", "v3", "v4"], [1], ["l5", "l6"]],
    ],
    [[2, [4, 16]]],
]


def test_trace_renames_and_attrs() -> None:
    assert migrate.trace_needs_migration(OLD_TRACE)
    new, renames = migrate.migrate_trace_json(OLD_TRACE)
    assert new == [
        [
            ["GetSBlock", [], ["C", "main"], ["b0"]],
            ["GetLoops", ["b0"], [], ["l1", "l2"]],
            ["SamplePerfectTile", ["l1"], [2, 64], ["v3", "v4"]],
            ["Split", ["l1", "v3", "v4"], [1, 0], ["l5", "l6"]],
        ],
        [[2, [4, 16]]],
    ]
    assert renames == ["GetBlock -> GetSBlock", "Split attrs +1"]
    assert OLD_TRACE[0][0][0] == "GetBlock"  # the input is left as it was
    assert not migrate.trace_needs_migration(new)
    assert migrate.migrate_trace_json(new) == (new, [])


@pytest.mark.parametrize(("inst", "why"), [
    (["SetAxisSeparator", ["b0"], [0, 1, [1]], []],
     "instruction 1 SetAxisSeparator: the pinned TVM has no SetAxisSeparator schedule primitive"),
    (["TransformLayout", ["b0"], [0, 1, '{"root": 1, "nodes": [], "attrs": {}}', None, True], []],
     "instruction 1 TransformLayout: its index map is a JSON graph of TVM <= 0.21, which the "
     "pinned TVM cannot read"),
    ("GetBlock", "instruction 1 is not [kind, inputs, attrs, outputs]"),
])
def test_trace_that_cannot_be_migrated(inst, why: str) -> None:
    trace = [[OLD_TRACE[0][0], inst], []]
    with pytest.raises(migrate.MigrationError) as err:
        migrate.migrate_trace_json(trace)
    assert str(err.value) == why


def test_target_drops_unknown_options() -> None:
    old = {"kind": "llvm", "tag": "", "keys": ["cpu"], "num-cores": 4, "link-params": False,
           "host": {"kind": "llvm", "tag": "", "keys": ["cpu"], "system-lib": True}}
    new, dropped = migrate.migrate_target(old)
    assert new == {"kind": "llvm", "tag": "", "keys": ["cpu"], "num-cores": 4,
                   "host": {"kind": "llvm", "tag": "", "keys": ["cpu"]}}
    assert dropped == ["target option link-params", "host target option system-lib"]
    with pytest.raises(migrate.MigrationError, match="'opengl' is unknown"):
        migrate.migrate_target({"kind": "opengl"})


def test_script_renames() -> None:
    old = (
        "# from tvm.script import tir as T\n"
        "@T.prim_func\n"
        "def main(A: T.Buffer((4,), \"float32\")):\n"
        '    T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})\n'
        "    B = T.alloc_buffer((4,))\n"
        "    for i in range(4):\n"
        '        with T.block("B"):\n'
        '            T.block_attr({"k": 1})\n'
        "b0 = sch.get_block(name=\"B\", func_name=\"main\")\n"
    )
    new, renames = migrate.migrate_script(old)
    assert new == (
        "# from tvm.script import tirx as T\n"
        "@T.prim_func(s_tir=True)\n"
        "def main(A: T.Buffer((4,), \"float32\")):\n"
        '    T.func_attr({"global_symbol": "main", "tirx.noalias": True})\n'
        "    B = T.sblock_alloc_buffer((4,))\n"
        "    for i in range(4):\n"
        '        with T.sblock("B"):\n'
        '            T.sblock_attr({"k": 1})\n'
        "b0 = sch.get_sblock(name=\"B\", func_name=\"main\")\n"
    )
    assert renames == ["tir -> tirx", "T.prim_func -> s_tir=True", "T.block -> T.sblock",
                       "T.block_attr -> T.sblock_attr", "T.alloc_buffer -> T.sblock_alloc_buffer",
                       "tir.noalias -> tirx.noalias", "sch.get_block -> sch.get_sblock",
                       "T.bool -> bool"]
    assert migrate.migrate_script("@T.prim_func(private=True)\n")[0] == (
        "@T.prim_func(s_tir=True, private=True)\n")


#: How TVM 0.16 printed what the pinned TVM prints (apache/tvm v0.16.0's TVMScript printer).
_AS_TVM016 = [("# from tvm.tirx.layout import Axis\n", ""), ("import tirx as T", "import tir as T"),
              ("@T.prim_func(s_tir=True)", "@T.prim_func"),
              ("T.sblock_alloc_buffer(", "T.alloc_buffer("), ("T.sblock(", "T.block("),
              ('T.func_attr({"tirx.noalias": True})',
               'T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})')]


@pytest.mark.parametrize("name", ["GMM-0", "C2D-3", "SFM-0"])
def test_old_workload_script_parses_to_the_pinned_workload(name: str) -> None:
    from msviz import compat, workloads

    mod = compat.normalize_mod(workloads.get(name).mod)
    old = mod.script()
    for new_text, old_text in _AS_TVM016:
        old = old.replace(new_text, old_text)
    assert "T.block(" in old and "tirx" not in old
    migrated = compat.normalize_mod(compat.parse_script(migrate.migrate_script(old)[0]))
    assert compat.structural_equal(migrated, mod)
    assert compat.structural_hash(migrated) == compat.structural_hash(mod)
