"""Rebuild ``gmm_tvm016/``: a GMM-0 work dir in the form TVM 0.16 (``tvm.meta_schedule``) wrote.

No TVM older than 0.25 installs here (nor does any public repository hold such a work dir), so the
fixture is a reconstruction: a stock ``tune_tir`` run of GMM-0 on the pinned TVM 0.27, written
back in TVM 0.16's form, each difference taken from apache/tvm's sources at v0.16.0:

* traces: ``GetSBlock`` -> ``GetBlock``; ``Split`` has one attribute (``preserve_unit_iters``;
  ``disable_predication`` came in 0.17);
* the workload: ``[decimal shash, base64(SaveJSON(mod))]``, the JSON graph in the layout of
  ``tvm::SaveJSON`` before the FFI refactor (``root``, ``nodes`` with ``type_key`` / ``attrs`` /
  ``data`` / ``keys`` / ``repr_str``, ``b64ndarrays``, ``attrs.tvm_version``) with ``tir.*``
  type keys; the node fields are the pinned TVM's (not checked against 0.16's);
* targets: as TVM 0.16's llvm kind exported them (the same options as 0.27's); ``mcpu`` is left
  out, so that the kernels the tests build from the records run on any x86-64 CPU;
* logs: ``tvm.meta_schedule.logging.*`` files, TVMScript as 0.16 printed it (``tir``,
  ``T.block``, ``@T.prim_func``, ``T.func_attr({"global_symbol": "main", "tir.noalias":
  T.bool(True)})``).

Usage: ``python make_tvm016_work_dir.py NEW_STOCK_GMM_WORK_DIR`` (writes ``gmm_tvm016/`` here).
"""

import base64
import json
import re
import shutil
import sys
from pathlib import Path

_TYPE_KEYS = {"s_tir.SBlock": "tir.Block", "s_tir.SBlockRealize": "tir.BlockRealize",
              "ir.TensorLoad": "tir.BufferLoad", "ir.TensorRegion": "tir.BufferRegion",
              "ir.Var": "tir.Var", "ffi.String": "runtime.String", "ffi.Array": "Array",
              "ffi.Map": "Map", "None": ""}


def _old_type(key: str) -> str:
    if key in _TYPE_KEYS:
        return _TYPE_KEYS[key]
    for new, old in (("tirx.", "tir."), ("prim.", "tir."), ("ir.", "")):
        if key.startswith(new):
            return old + key[len(new):]
    return key


def legacy_graph(new_graph: dict) -> dict:
    """The pinned TVM's JSON graph of an IRModule in the layout of TVM 0.16's SaveJSON."""
    nodes = []
    for node in new_graph["nodes"]:
        kind, data = node["type"], node.get("data")
        old = {"type_key": _old_type(kind)}
        if kind == "ffi.String":
            old["repr_str"] = data
        elif kind == "ffi.Array":
            old["data"] = list(data)
        elif kind == "ffi.Map":
            old["keys"] = [str(k) for k in data[0::2]]
            old["data"] = list(data[1::2])
        elif isinstance(data, dict):
            old["attrs"] = {k: str(v) for k, v in data.items()}
        elif data is not None:
            old["attrs"] = {"value": str(data)}
        nodes.append(old)
    return {"root": new_graph["root_index"], "nodes": nodes, "b64ndarrays": [],
            "attrs": {"tvm_version": "0.16.0"}}


_SCRIPT = [("# from tvm.tirx.layout import Axis\n", ""), ("import tirx as T", "import tir as T"),
           ("@T.prim_func(s_tir=True)", "@T.prim_func"),
           ("T.sblock_alloc_buffer(", "T.alloc_buffer("),
           ("T.sblock_attr(", "T.block_attr("), ("T.sblock(", "T.block("),
           ('T.func_attr({"tirx.noalias": True})',
            'T.func_attr({"global_symbol": "main", "tir.noalias": T.bool(True)})'),
           ("sch.get_sblock(", "sch.get_block("), ("tvm.s_tir.meta_schedule", "tvm.meta_schedule")]


def main(src: Path, out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    (out / "logs").mkdir(parents=True)
    shash, payload = json.loads((src / "database_workload.json").read_text().splitlines()[0])
    graph = json.loads(base64.b64decode(payload)[8:])  # the pinned TVM prefixes 8 bytes
    old_payload = base64.b64encode(json.dumps(legacy_graph(graph)).encode()).decode()
    (out / "database_workload.json").write_text(json.dumps([shash, old_payload]) + "\n")
    lines = []
    for text in (src / "database_tuning_record.json").read_text().splitlines():
        workload, (trace, run_secs, target, args_info) = json.loads(text)
        for inst in trace[0]:
            if inst[0] == "GetSBlock":
                inst[0] = "GetBlock"
            if inst[0] == "Split":
                inst[2] = inst[2][:1]
        target.pop("mcpu", None)  # a generic x86-64 target: the fixture's kernels run on any CPU
        lines.append(json.dumps([workload, [trace, run_secs, target, args_info]],
                                separators=(",", ":")))
    (out / "database_tuning_record.json").write_text("\n".join(lines) + "\n")
    for log in (src / "logs").glob("*.log"):
        text = log.read_text()
        for new, old in _SCRIPT:
            text = text.replace(new, old)
        text = re.sub(r"\[task_scheduler\.cc:\d+\]", "[task_scheduler.cc:120]", text)
        (out / "logs" / log.name.replace("tvm.s_tir.meta_schedule", "tvm.meta_schedule")
         ).write_text(text)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(__file__).parent / "gmm_tvm016")
