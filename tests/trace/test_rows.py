"""Traces as rows: names, flags and Python lines of real MetaSchedule traces."""

from __future__ import annotations

import re

from msviz.trace import ROW_COLUMNS, trace_python, trace_rows


def test_rows_of_a_stored_trial(gmm_best):
    trace = gmm_best.trace
    rows = trace_rows(gmm_best)
    assert list(rows.columns) == ROW_COLUMNS
    assert len(rows) == len(trace.insts)
    assert list(rows["index"]) == list(range(len(rows)))
    assert list(rows["kind"]) == [inst.kind.name for inst in trace.insts]
    # a stored trace holds its postproc part: EnterPostproc and everything after is flagged
    enter = rows.index[rows["kind"] == "EnterPostproc"]
    assert len(enter) == 1
    assert not rows["postproc"].iloc[: enter[0]].any()
    assert rows["postproc"].iloc[enter[0]:].all()
    samples = rows[rows["sampling"]]
    assert set(samples["kind"]) == {"SamplePerfectTile", "SampleCategorical"}
    assert samples["decision"].notna().all()
    assert rows[~rows["sampling"]]["decision"].isna().all()
    tiles = samples[samples["kind"] == "SamplePerfectTile"]
    for decision in tiles["decision"]:
        assert isinstance(decision, tuple) and all(isinstance(f, int) for f in decision)
    assert all(isinstance(e, str) and e for e in rows["explanation"])


def test_names_match_as_python(gmm_best):
    rows = trace_rows(gmm_best.trace)
    python = trace_python(gmm_best).splitlines()
    assert python == [str(line) for line in gmm_best.trace.as_python(remove_postproc=False)]
    assert list(rows["python"]) == python
    for _, row in rows.iterrows():
        if row["outputs"]:  # "v6, v7 = sch.sample_perfect_tile(..." -> the same names
            lhs = row["python"].split(" = ")[0]
            assert [n.strip() for n in lhs.split(",") if n.strip()] == row["outputs"]
        rvs = [x for x in row["inputs"] if isinstance(x, str) and re.fullmatch(r"[blv]\d+", x)]
        for name in rvs:
            assert re.search(rf"\b{name}\b", row["python"]), (name, row["python"])


def test_trace_python_can_stop_at_postproc(gmm_best):
    full = trace_python(gmm_best).splitlines()
    short = trace_python(gmm_best, remove_postproc=True).splitlines()
    assert len(short) < len(full)
    assert "enter_postproc" not in "\n".join(short)


def test_a_tensor_core_sketch_has_rows_for_its_index_maps_and_open_factors() -> None:
    """An fp16 matmul's sm_80 design space (stock's rules: tensor cores) holds TransformLayout
    with an IndexMap and Split with a None factor: both render as their text."""
    import tvm
    from tvm import te

    from msviz import compat

    a = te.placeholder((128, 128), "float16", name="A")
    b = te.placeholder((128, 128), "float16", name="B")
    k = te.reduce_axis((0, 128), "k")
    c = te.compute((128, 128), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    target = compat.make_target({"kind": "cuda", "arch": "sm_80", "max_threads_per_block": 1024,
                                 "max_shared_memory_per_block": 49152, "thread_warp_size": 32,
                                 "registers_per_block": 65536})
    compat.register_tensor_intrins()
    ctx = compat.ms.TuneContext(mod=mod, target=target, task_name="tc", num_threads=1,
                                space_generator=compat.ms.space_generator.PostOrderApply())
    trace = ctx.generate_design_space()[0].trace
    rows = trace_rows(trace)
    insts = list(trace.insts)
    assert len(rows) == len(insts)
    layout = next(i for i, inst in enumerate(insts) if inst.kind.name == "TransformLayout")
    assert rows.loc[layout, "inputs"][1] == "T.index_map(lambda v_i, v_k: (v_i, v_k))"
    split = next(i for i, inst in enumerate(insts)
                 if inst.kind.name == "Split" and inst.inputs[1] is None)
    assert rows.loc[split, "inputs"][1:] == [None, 16]
