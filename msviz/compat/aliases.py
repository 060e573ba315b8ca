"""Where MetaSchedule and TIR live in the pinned TVM, as short names, and TVM values as plain data.

msviz pins apache-tvm 0.27, where MetaSchedule is ``tvm.s_tir.meta_schedule`` (blocks are
``T.sblock``). Everything else in msviz imports MetaSchedule through :mod:`msviz.compat`.
"""

from __future__ import annotations

import importlib
from typing import Any

import tvm
import tvm_ffi

MS_NAMESPACE = "tvm.s_tir.meta_schedule"
ms = importlib.import_module(MS_NAMESPACE)
tir_schedule = importlib.import_module("tvm.s_tir.schedule")
tir = importlib.import_module("tvm.tirx")

Schedule = tir_schedule.Schedule
Trace = tir_schedule.Trace
Instruction = tir_schedule.Instruction

JSONDatabase = ms.database.JSONDatabase
TuningRecord = ms.database.TuningRecord
Workload = ms.database.Workload
ArgInfo = ms.arg_info.ArgInfo
IndexMap = tir.IndexMap
#: A tuning record as TVM's JSON values (``TuningRecord.as_json`` without its Python pass,
#: which fails on an ``IndexMap`` in the trace).
tuning_record_as_json = ms._ffi_api.TuningRecordAsJSON

structural_equal = tvm_ffi.structural_equal
#: Decorator making a Python subclass of ``PySearchStrategy`` / ``PyCostModel``... a TVM object.
derived_object = importlib.import_module("tvm.ir.utils").derived_object
structural_hash = tvm_ffi.structural_hash

#: Value MetaSchedule stores as ``run_secs`` for a candidate that failed to build or run.
FAILED_RUN_SECS = 1e10


def zero_tile_decision(trace_json: Any) -> str | None:
    """What is wrong with a trace's JSON (``[instructions, decisions]``) that would kill the
    process replaying it: a ``SamplePerfectTile`` decision with a factor of 0 (TVM divides by
    it, SIGFPE). None when there is none. MetaSchedule never samples such a factor."""
    try:
        insts, decisions = trace_json[0], trace_json[1]
        for index, value in decisions:
            if insts[int(index)][0] == "SamplePerfectTile" and any(
                    isinstance(v, (int, float)) and v == 0 for v in value):
                return (f"instruction {int(index)} (SamplePerfectTile) decides tile factors "
                        f"{list(value)}: a factor of 0 splits nothing (TVM would divide by it)")
    except (TypeError, ValueError, IndexError, KeyError):
        return None  # a malformed trace: TVM's own reader says what is wrong
    return None


def tuning_record_from_json(record_json: Any, workload: Any) -> Any:
    """``TuningRecord.from_json``, refusing (``ValueError``) a trace that would kill the process
    instead of reading it (:func:`zero_tile_decision`)."""
    problem = zero_tile_decision(record_json[0]) if isinstance(record_json, list) else None
    if problem:
        raise ValueError(problem)
    return TuningRecord.from_json(record_json, workload)


def target_from_json(obj: Any) -> tvm.target.Target:
    """The Target stored in a tuning record (a dict of attributes)."""
    return tvm.target.Target(obj)


def device_type(target: tvm.target.Target) -> str:
    """The runner's device name for a target ("cpu", "cuda", ...)."""
    return tvm.runtime.Device._DEVICE_TYPE_TO_NAME[target.get_target_device_type()]


def normalize_mod(mod: Any) -> tvm.IRModule:
    """The IRModule MetaSchedule tunes and keys its database by (function renamed ``main``)."""
    return ms.tune_context._normalize_mod(mod)


def to_jsonable(obj: Any) -> Any:
    """Turn a TVM JSON-ish value (IntImm, FloatImm, Array, Map, String) into plain Python."""
    if isinstance(obj, (bool, int, float, str)) or obj is None:
        return obj
    if isinstance(obj, (tir.IntImm, tir.FloatImm)):
        return obj.value
    if isinstance(obj, IndexMap):  # a TransformLayout's map, as TVM's trace JSON writes it
        return tvm.ir.save_json(obj)
    if hasattr(obj, "items") and not isinstance(obj, (str, bytes)):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) or type(obj).__name__ in ("Array", "List"):
        return [to_jsonable(x) for x in obj]
    return obj


def quiet_ipython_printing() -> None:
    """Stop MetaSchedule from clearing notebook cells and displaying tables from worker threads."""
    tvm_ffi.register_global_func(
        "s_tir.meta_schedule.using_ipython", lambda: False, override=True
    )


def parse_script(text: str) -> Any:
    """An IRModule (or PrimFunc) from TVMScript text, such as a log's printed workload."""
    import tvm as _tvm

    return _tvm.script.from_source(text)


def sblocks(stmt: Any) -> Any:
    """Every SBlock under ``stmt`` (a PrimFunc or a statement), breadth first: the root, then
    the blocks it holds (TVM 0.27 has no public block walker for ``tvm.tirx``)."""
    stack = [stmt]
    while stack:
        node = stack.pop(0)
        if isinstance(node, tir.PrimFunc):
            stack.append(node.body)
        elif isinstance(node, tir.stmt.SeqStmt):
            stack.extend(node.seq)
        elif hasattr(node, "block") and not isinstance(node, tir.stmt.BufferStore):
            stack.append(node.block)  # SBlockRealize
        elif hasattr(node, "iter_vars") and hasattr(node, "body"):  # SBlock
            yield node
            stack.append(node.body)
        elif hasattr(node, "body"):  # For, LetStmt, AttrStmt
            stack.append(node.body)
        elif hasattr(node, "then_case"):
            stack.append(node.then_case)
            if getattr(node, "else_case", None) is not None:
                stack.append(node.else_case)
