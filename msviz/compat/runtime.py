"""TVM's runtime, IR, RPC and worker-pool names, and every read of a TVM or xgboost internal
outside MetaSchedule's names (:mod:`msviz.compat.aliases`). Each private read says which public
API TVM lacks."""

from __future__ import annotations

import importlib
from typing import Any

import tvm
import tvm_ffi
from tvm import relax, te
from tvm.rpc import base as rpc_base
from tvm.support.popen_pool import PopenPoolExecutor, PopenWorker, StatusKind

from msviz.compat.aliases import ms, tir

__all__ = [
    "RPC_ERROR",
    "IRExpr",
    "IRModule",
    "PassContext",
    "PopenPoolExecutor",
    "PopenWorker",
    "PrimFunc",
    "RPCSessionTimeoutError",
    "StatusKind",
    "Target",
    "connect_tracker",
    "cpu_device_type",
    "cuda_available",
    "estimate_tir_flops",
    "find_anchor_sblock",
    "get_global_func",
    "ir_load_json",
    "ir_save_json",
    "llvm_version",
    "local_builder_worker",
    "mutator_apply",
    "nvcc_compile_cuda",
    "pool_workers",
    "python_instance",
    "relax",
    "rpc_base",
    "rpc_connect",
    "set_tracker_timeout",
    "stmt_functor",
    "te",
    "te_workload",
    "tensor",
    "tvm_compile",
    "tvm_device",
    "tvm_ffi_version",
    "tvm_version",
    "worker_process",
    "xgb_predict",
]

IRModule = tvm.IRModule
PrimFunc = tir.PrimFunc
Target = tvm.target.Target
#: The base class of TVM 0.27's prim expressions.
IRExpr = tvm.ir.Expr
PassContext = tvm.transform.PassContext
#: TVM's error for an RPC connection or session that failed.
RPC_ERROR = tvm.error.RPCError
#: TVM's error for an RPC session that ran past its ``session_timeout``.
RPCSessionTimeoutError = tvm.error.RPCSessionTimeoutError
tvm_compile = tvm.compile
tvm_device = tvm.device
tensor = tvm.runtime.tensor
ir_save_json = tvm.ir.save_json
ir_load_json = tvm.ir.load_json
get_global_func = tvm_ffi.get_global_func
connect_tracker = tvm.rpc.connect_tracker
rpc_connect = tvm.rpc.connect
estimate_tir_flops = importlib.import_module("tvm.s_tir.analysis").estimate_tir_flops
#: ``find_anchor_sblock`` of the TIR analysis (None in a TVM without it).
find_anchor_sblock = getattr(importlib.import_module("tvm.s_tir.analysis"),
                             "find_anchor_sblock", None)


def tvm_version() -> str:
    """The TVM version (``tvm.__version__``)."""
    return str(tvm.__version__)


def tvm_ffi_version() -> str | None:
    """The tvm-ffi version (None where the TVM wheel bundles its FFI)."""
    try:
        import tvm_ffi as ffi  # optional: older TVM wheels bundle their FFI

        return str(ffi.__version__)
    except ImportError:  # pragma: no cover
        return None


def llvm_version() -> str | None:
    """The major version of TVM's LLVM (None for a TVM built without LLVM)."""
    try:
        return str(tvm.target.codegen.llvm_version_major())
    except Exception:  # a TVM built without LLVM
        return None


def cuda_available() -> str | None:
    """None if a CUDA device can run kernels here, else why not."""
    if not tvm.runtime.enabled("cuda"):
        return "no CUDA device: this TVM build has no CUDA runtime loaded (libcuda.so.1 missing?)"
    try:
        if not tvm.cuda(0).exist:
            return "no CUDA device: no GPU is visible to this process"
    except Exception as err:  # pragma: no cover - driver errors
        return f"no CUDA device: {err}"
    return None


def cpu_device_type() -> int:
    """The device type number of the CPU (``kDLCPU``).

    Private read: TVM has no public name-to-type table (``Device._DEVICE_NAME_TO_TYPE``)."""
    return tvm.runtime.Device._DEVICE_NAME_TO_TYPE["cpu"]


def te_workload() -> Any:
    """MetaSchedule's ``testing.te_workload`` (its ``CONFIGS`` of TE workloads)."""
    # heavy (MetaSchedule's testing package): imported when a catalogue workload is first built
    from tvm.s_tir.meta_schedule.testing import te_workload as module

    return module


def stmt_functor() -> Any:
    """TIR's ``stmt_functor`` (``post_order_visit``, ``substitute``)."""
    from tvm.tirx import stmt_functor as module  # small; imported when first used

    return module


def nvcc_compile_cuda(source: str, *, target_format: str, arch: str) -> Any:
    """``tvm.support.nvcc.compile_cuda`` with nvcc."""
    from tvm.support import nvcc  # imported when first used

    return nvcc.compile_cuda(source, target_format=target_format, arch=arch, compiler="nvcc")


#: TVM's ``LocalBuilder`` worker (build with ``f_build``, export with the default export).
#: Private read: MetaSchedule has no public build-one-candidate function
#: (``builder.local_builder._worker_func``).
local_builder_worker = ms.builder.local_builder._worker_func


#: ``Mutator.apply`` through the FFI (``MutatorApply``), the FFI function itself (no wrapper:
#: the search calls it once per mutation). Private read: MetaSchedule's Python ``Mutator.apply``
#: makes a new random state; no public call takes one (``meta_schedule._ffi_api.MutatorApply``).
mutator_apply = ms._ffi_api.MutatorApply


def xgb_predict(model: Any, xs: Any) -> Any:
    """The stock ``XGBModel``'s prediction on feature rows ``xs`` (what ``predict`` does after
    extracting features).

    Private read: ``XGBModel`` has no public predict from features (``XGBModel._predict``)."""
    return model._predict(xs=xs)


def set_tracker_timeout(tracker: Any, timeout: float) -> None:
    """Set the socket timeout of a ``TrackerSession``.

    Private read: ``TrackerSession`` has no public timeout setting (``TrackerSession._sock``)."""
    tracker._sock.settimeout(timeout)


def python_instance(obj: Any) -> Any:
    """The Python object behind a ``derived_object`` FFI object (None for any other object).

    Private read: ``derived_object`` has no public accessor for it (``_inst``)."""
    return getattr(obj, "_inst", None)


def worker_process(worker: Any) -> Any:
    """The ``subprocess.Popen`` a ``PopenWorker`` runs its calls in (None before it starts).

    Private read: ``PopenWorker`` has no public accessor for its process (``_proc``)."""
    return getattr(worker, "_proc", None)


def pool_workers(pool: Any) -> dict:
    """A ``PopenPoolExecutor``'s workers (thread id -> ``PopenWorker``; empty for no pool).

    Private read: ``PopenPoolExecutor`` has no public list of its workers (``_worker_map``)."""
    return getattr(pool, "_worker_map", {}) if pool is not None else {}
