"""The one place that knows where MetaSchedule lives and how TVM objects become plain data.

TVM 0.27 moved MetaSchedule to ``tvm.s_tir.meta_schedule`` (blocks became ``T.sblock``) and
made targets dict-built; earlier releases had ``tvm.meta_schedule``. Everything else in msviz
imports MetaSchedule through this module.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import tvm
import tvm_ffi

try:  # TVM >= 0.27
    ms = importlib.import_module("tvm.s_tir.meta_schedule")
    tir_schedule = importlib.import_module("tvm.s_tir.schedule")
    MS_NAMESPACE = "tvm.s_tir.meta_schedule"
except ImportError:  # pragma: no cover - older TVM
    ms = importlib.import_module("tvm.meta_schedule")
    tir_schedule = importlib.import_module("tvm.tir.schedule")
    MS_NAMESPACE = "tvm.meta_schedule"

tir = importlib.import_module("tvm.tirx") if hasattr(tvm, "tirx") else tvm.tir

Schedule = tir_schedule.Schedule
Trace = tir_schedule.Trace
Instruction = tir_schedule.Instruction

JSONDatabase = ms.database.JSONDatabase
TuningRecord = ms.database.TuningRecord
Workload = ms.database.Workload
ArgInfo = ms.arg_info.ArgInfo

structural_equal = tvm_ffi.structural_equal
structural_hash = tvm_ffi.structural_hash

#: Value MetaSchedule stores as ``run_secs`` for a candidate that failed to build or run.
FAILED_RUN_SECS = 1e10


def make_target(target: Any = "llvm", *, num_cores: int | None = None) -> tvm.target.Target:
    """Build a TVM Target from a kind name, a dict, a tag, or a Target.

    Parameters
    ----------
    target : str | dict | tvm.target.Target
        ``"llvm"`` (the host CPU, with ``num-cores`` filled in), ``"cuda"`` (a CUDA target with the
        hardware attributes MetaSchedule's rules need, hosted on the CPU), a registered tag such as
        ``"nvidia/nvidia-h100"``, a dict of target attributes, or a Target.
    num_cores : int, optional
        Cores for the llvm target; defaults to the cores this process may use.

    Returns
    -------
    target : tvm.target.Target
    """
    if isinstance(target, tvm.target.Target):
        return target
    cores = num_cores or _host_cores()
    if isinstance(target, dict):
        spec = dict(target)
        if spec.get("kind") == "llvm":
            spec.setdefault("num-cores", cores)
        return tvm.target.Target(spec)
    if not isinstance(target, str):
        raise TypeError(
            f"target must be a str, dict or tvm.target.Target, not {type(target).__name__}"
        )
    if target == "llvm":
        return tvm.target.Target({"kind": "llvm", "num-cores": cores})
    if target == "cuda":
        return tvm.target.Target(
            {
                "kind": "cuda",
                "arch": "sm_90",
                "max_threads_per_block": 1024,
                "max_shared_memory_per_block": 49152,
                "thread_warp_size": 32,
                "registers_per_block": 65536,
            },
            host=make_target("llvm", num_cores=num_cores),
        )
    if target.startswith("{"):
        import json

        return make_target(json.loads(target), num_cores=num_cores)
    try:
        return tvm.target.Target(target)
    except Exception as err:
        raise ValueError(
            f"unknown target {target!r}: use 'llvm', 'cuda', a tag such as 'nvidia/nvidia-h100', "
            f"or a dict like {{'kind': 'llvm', 'num-cores': 2}} ({err})"
        ) from None


def _host_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


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
    if hasattr(obj, "items") and not isinstance(obj, (str, bytes)):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) or type(obj).__name__ in ("Array", "List"):
        return [to_jsonable(x) for x in obj]
    return obj


def fast_build(mod: tvm.IRModule, target: tvm.target.Target, _params: Any = None) -> Any:
    """MetaSchedule's ``default_build`` without its 13-20 s ``import tvm.s_tir.tensor_intrin``.

    The stock builder re-imports the tensor intrinsics in every fresh worker on every batch; for
    schedules that use no tensor intrinsics (all CPU and plain CUDA spaces) they are not needed.
    """
    import tvm as _tvm
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return _tvm.tirx.build(mod, target=target)


def local_builder(*, max_workers: int | None = None, timeout_sec: float = 30.0) -> Any:
    """A LocalBuilder that uses :func:`fast_build`."""
    return ms.builder.LocalBuilder(
        max_workers=max_workers, timeout_sec=timeout_sec, f_build=fast_build
    )


def quiet_ipython_printing() -> None:
    """Stop MetaSchedule from clearing notebook cells and displaying tables from worker threads."""
    tvm_ffi.register_global_func(
        "s_tir.meta_schedule.using_ipython", lambda: False, override=True
    )
