"""The one place that knows where MetaSchedule lives and how TVM objects become plain data.

msviz pins apache-tvm 0.27, where MetaSchedule is ``tvm.s_tir.meta_schedule`` (blocks are
``T.sblock``) and targets are built from dicts. Everything else in msviz imports MetaSchedule
through this module, and asks it what the host CPU is.
"""

from __future__ import annotations

import importlib
import os
import re
from typing import Any, NamedTuple

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

structural_equal = tvm_ffi.structural_equal
#: Decorator making a Python subclass of ``PySearchStrategy`` / ``PyCostModel``... a TVM object.
derived_object = importlib.import_module("tvm.ir.utils").derived_object
structural_hash = tvm_ffi.structural_hash

#: Value MetaSchedule stores as ``run_secs`` for a candidate that failed to build or run.
FAILED_RUN_SECS = 1e10


def make_target(target: Any = "llvm", *, num_cores: int | None = None) -> tvm.target.Target:
    """Build a TVM Target from a kind name, a dict, a tag, or a Target.

    Parameters
    ----------
    target : str | dict | tvm.target.Target
        ``"llvm"`` (this machine's CPU: ``mcpu`` from LLVM's host query, the vector extensions the
        operating system does not report turned off, ``num-cores`` filled in; see
        :func:`host_cpu`), ``"cuda"`` (a CUDA target with the
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
    cores = num_cores or host_cores()
    if isinstance(target, dict):
        spec = dict(target)
        if spec.get("kind") == "llvm":
            spec.setdefault("num-cores", cores)
        return check_llvm_cpu(tvm.target.Target(spec))
    if not isinstance(target, str):
        raise TypeError(
            f"target must be a str, dict or tvm.target.Target, not {type(target).__name__}"
        )
    if target == "llvm":
        return tvm.target.Target(host_target_spec(cores))
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
    cli = re.match(r"\s*llvm\s.*-mcpu=(\S+)", target)  # TVM 0.27 rejects this form anyway
    if cli:  # but first name a mistyped CPU
        triple = re.search(r"-mtriple=(\S+)", target)
        check_llvm_cpu(tvm.target.Target({"kind": "llvm", "mcpu": cli[1], **(
            {"mtriple": triple[1]} if triple else {})}))
    try:
        return tvm.target.Target(target)
    except Exception as err:
        raise ValueError(
            f"unknown target {target!r}: use 'llvm', 'cuda', a tag such as 'nvidia/nvidia-h100', "
            f"or a dict like {{'kind': 'llvm', 'num-cores': 2}} ({err})"
        ) from None


def check_llvm_cpu(target: tvm.target.Target) -> tvm.target.Target:
    """``target`` unchanged when its ``mcpu`` is a CPU LLVM knows (for its ``mtriple``, or this
    machine's); LLVM itself only prints a line on stderr and compiles for a generic CPU.

    Raises
    ------
    msviz.errors.TargetError
        Naming the CPU, close names, and how to list the valid ones.
    """
    if str(target.kind.name) != "llvm" or "mcpu" not in target.attrs:
        return target
    codegen = tvm.target.codegen
    mcpu = str(target.attrs["mcpu"])
    triple = str(target.attrs["mtriple"]) if "mtriple" in target.attrs else ""
    triple = triple or str(codegen.llvm_get_system_triple())
    if codegen.llvm_is_valid_cpu(mcpu, triple):
        return target
    names = [str(c) for c in codegen.llvm_get_cpu_archlist(
        tvm.target.Target({"kind": "llvm", "mtriple": triple}))]
    if not names:  # LLVM has no backend for this triple: nothing to compare with
        return target
    import difflib

    from msviz.errors import TargetError

    close = difflib.get_close_matches(mcpu, names, n=3)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    if mcpu == "native":
        hint = "; target='llvm' gives this machine's CPU."
    raise TargetError(
        f"target mcpu {mcpu!r} is not a CPU LLVM knows for {triple} (LLVM would ignore it and "
        f"compile for a generic CPU){hint or '.'} List the valid names with "
        "tvm.target.codegen.llvm_get_cpu_archlist(tvm.target.Target({'kind': 'llvm'})) or "
        "`llc -mcpu=help`.")


class HostCPU(NamedTuple):
    """What LLVM and the operating system say about this machine's CPU.

    Attributes
    ----------
    mcpu : str | None
        LLVM's name for the host CPU (``llvm_get_system_cpu``), None if LLVM does not know it.
    disabled : tuple of str
        Vector/matrix extensions LLVM's tables give ``mcpu`` but the operating system does not
        report (a virtual machine may hide some, e.g. AMX); code using them would die with SIGILL,
        so they are turned off in ``mattr``.
    features : tuple of str
        The extensions that stay on (``avx*`` / ``amx*``), for display.
    """

    mcpu: str | None
    disabled: tuple[str, ...]
    features: tuple[str, ...]


_HOST_CPU: HostCPU | None = None
_ISA_PREFIXES = ("avx", "amx")


def _norm_feature(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _os_cpu_flags(path: str = "/proc/cpuinfo") -> set[str] | None:
    """The CPU flags the kernel reports, normalized (None where there is no /proc/cpuinfo)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return {_norm_feature(x) for x in line.split(":", 1)[1].split()}
    except OSError:
        return None
    return None


def host_cpu(*, cpu_flags: set[str] | None = None) -> HostCPU:
    """This machine's CPU as LLVM names it, minus the extensions the OS does not enable.

    Parameters
    ----------
    cpu_flags : set of str, optional
        The OS's CPU flags (``/proc/cpuinfo``'s, read if None). Given explicitly, nothing is
        cached (for tests).
    """
    global _HOST_CPU
    if cpu_flags is None and _HOST_CPU is not None:
        return _HOST_CPU
    codegen = tvm.target.codegen
    mcpu = str(codegen.llvm_get_system_cpu() or "")
    if not mcpu or mcpu == "generic" or not codegen.llvm_is_valid_cpu(
            mcpu, str(codegen.llvm_get_system_triple())):
        info = HostCPU(None, (), ())
    else:
        llvm_features = sorted(str(f) for f in codegen.llvm_get_cpu_features(
            tvm.target.Target({"kind": "llvm", "mcpu": mcpu})))
        isa = [f for f in llvm_features if f.startswith(_ISA_PREFIXES)]
        flags = _os_cpu_flags() if cpu_flags is None else {_norm_feature(f) for f in cpu_flags}
        if flags is None:  # no /proc/cpuinfo: trust LLVM
            info = HostCPU(mcpu, (), tuple(isa))
        else:
            info = HostCPU(mcpu, tuple(f for f in isa if _norm_feature(f) not in flags),
                           tuple(f for f in isa if _norm_feature(f) in flags))
    if cpu_flags is None:
        _HOST_CPU = info
    return info


def host_target_spec(num_cores: int | None = None) -> dict[str, Any]:
    """The dict of the llvm target for this machine's CPU (what ``"llvm"`` means in msviz)."""
    cpu = host_cpu()
    spec: dict[str, Any] = {"kind": "llvm"}
    if cpu.mcpu:
        spec["mcpu"] = cpu.mcpu
    if cpu.disabled:
        spec["mattr"] = [f"-{f}" for f in cpu.disabled]
    spec["num-cores"] = num_cores or host_cores()
    return spec


def describe_target(target: Any) -> str:
    """One line naming a target for people: kind, CPU, widest vector unit, cores.

    ``llvm znver4 (AVX-512, 2 cores)``; ``llvm generic x86-64 (no mcpu: SSE only, 2 cores)``;
    ``cuda sm_90 (host llvm znver4)``.
    """
    if not isinstance(target, tvm.target.Target):
        target = make_target(target)
    kind = str(target.kind.name)
    attrs = target.attrs
    if kind == "llvm":
        mcpu = str(attrs["mcpu"]) if "mcpu" in attrs else ""
        cores = int(attrs["num-cores"]) if "num-cores" in attrs else None
        extra = [f"{cores} cores"] if cores else []
        if not mcpu:
            return f"llvm generic ({', '.join(['no mcpu: baseline ISA only', *extra])})"
        has = tvm.target.codegen.llvm_cpu_has_features
        width = "AVX-512" if has(["avx512f"], target) else "AVX2" if has(["avx2"], target) \
            else "SSE"
        if has(["avx512vnni"], target):
            width += " VNNI"
        return f"llvm {mcpu} ({', '.join([width, *extra])})"
    text = kind
    if "arch" in attrs:
        text += f" {attrs['arch']}"
    if target.host is not None:
        text += f" (host {describe_target(target.host)})"
    return text


def _count_host_cores() -> int:
    """Physical cores among the CPUs this process may use.

    Counted once, at import: TVM's runtime pins the thread that first launches a kernel (to one
    CPU when it runs kernels on one thread), and the affinity read after that is the pinned one.
    """
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    allowed = allowed or os.cpu_count() or 1
    import psutil

    physical = psutil.cpu_count(logical=False) or allowed
    return max(1, min(allowed, physical))


_HOST_CORES = _count_host_cores()
#: ``TVM_NUM_THREADS`` as the user set it before msviz was imported (None: not set).
_USER_KERNEL_THREADS = os.environ.get("TVM_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")


def host_cores() -> int:
    return _HOST_CORES


def use_host_cores() -> None:
    """Run TVM kernels in this process (and the processes it starts) on the host's cores.

    TVM's runtime runs a kernel on ``TVM_NUM_THREADS`` threads, else on *half* the logical
    CPUs of an x86 machine (it assumes two hardware threads per core). On a machine or VM without
    SMT that halves the cores: on 2 cores every tuned kernel ran on one thread, measured and
    re-timed alike, while the target told MetaSchedule to parallelise for 2. msviz sets
    ``TVM_NUM_THREADS`` to the physical cores it may use, unless the user set it (or
    ``OMP_NUM_THREADS``). It must run before the first kernel launch of the process: TVM sizes
    its thread pool once.
    """
    if _USER_KERNEL_THREADS is None:
        os.environ["TVM_NUM_THREADS"] = str(_HOST_CORES)


def kernel_threads(target: Any) -> int | None:
    """Threads a kernel built for ``target`` should be measured on: its ``num-cores``.

    None for targets that do not name cores (GPUs), and when the user set ``TVM_NUM_THREADS``
    (their choice is kept).
    """
    if _USER_KERNEL_THREADS is not None or not isinstance(target, tvm.target.Target):
        return None
    if str(target.kind.name) != "llvm" or "num-cores" not in target.attrs:
        return None
    return int(target.attrs["num-cores"])


def set_kernel_threads(threads: int) -> None:
    """Runner worker initializer: size this fresh process's TVM thread pool to ``threads``."""
    os.environ["TVM_NUM_THREADS"] = str(int(threads))


use_host_cores()


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


def parse_script(text: str) -> Any:
    """An IRModule (or PrimFunc) from TVMScript text, such as a log's printed workload."""
    import tvm as _tvm

    return _tvm.script.from_source(text)


# -- tensor intrinsics (auto-tensorization) ------------------------------------------------------

#: MetaSchedule's name of the AVX-512 VNNI dot product: C[16] int32 += A[4] u8 . B[16, 4] i8
#: (one ``vpdpbusd``), used by the default rules when the target's CPU has VNNI.
VNNI_INTRIN = "dot_16x4_vnni"

#: The CPU features each x86 tensor intrinsic needs (LLVM feature names).
INTRIN_FEATURES = {
    "dot_16x4_vnni": ("avx512vnni",),
    "dot_16x4_avx512": ("avx512bw",),
}

#: The special instructions an intrinsic's implementation compiles to, for the code view.
INTRIN_INSTRUCTIONS = {
    "dot_16x4_vnni": ("vpdpbusd",),
    "dot_16x4_avx512": ("vpmaddubsw", "vpmaddwd"),
}

_INTRINS_READY = False


def _vnni_impl() -> Any:
    """msviz's implementation of ``dot_16x4_vnni`` for LLVM >= 22.

    LLVM 22 declares ``llvm.x86.avx512.vpdpbusd.512`` as ``(<16 x i32>, <64 x i8>, <64 x i8>)``;
    the pinned TVM's implementation passes both byte operands as ``<16 x i32>`` and fails LLVM's
    verifier ("Intrinsic has incorrect argument type"). Here the four bytes of A are broadcast
    to all 16 lanes as one int32, then viewed as 64 bytes; B's 16x4 bytes are loaded as 64 bytes.
    """
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def dot_16x4_u8i8i32_vpdpbusd(
        A: T.Buffer((4,), "uint8", offset_factor=1),
        B: T.Buffer((16, 4), "int8", offset_factor=1),
        C: T.Buffer((16,), "int32", offset_factor=1),
    ) -> None:
        with T.sblock("root"):
            T.reads(C[0:16], A[0:4], B[0:16, 0:4])
            T.writes(C[0:16])
            a_word = T.reinterpret(A.vload([0], "uint8x4"), dtype="int32")
            a_bytes = T.reinterpret(T.broadcast(a_word, 16), dtype="uint8x64")
            b_bytes = B.vload([0, 0], dtype="int8x64")
            C[T.ramp(T.int32(0), 1, 16)] = T.call_llvm_pure_intrin(
                T.llvm_lookup_intrinsic_id("llvm.x86.avx512.vpdpbusd.512"),
                C.vload([0], dtype="int32x16"), a_bytes, b_bytes, dtype="int32x16")

    return dot_16x4_u8i8i32_vpdpbusd


def stock_vnni_impl() -> Any:
    """The pinned TVM's own implementation of ``dot_16x4_vnni`` (for the test that shows it
    still fails LLVM's verifier, so msviz's replacement can go once TVM is fixed)."""
    from tvm.s_tir.tensor_intrin import x86

    return x86.dot_product_16x4_u8i8i32_vnni


def vnni_needs_fix() -> bool:
    """True when this TVM's LLVM is new enough to reject the stock VNNI implementation."""
    return int(tvm.target.codegen.llvm_version_major()) >= 22


def register_tensor_intrins() -> None:
    """Register MetaSchedule's tensor intrinsics, with msviz's fix of ``dot_16x4_vnni``.

    Imports ``tvm.s_tir.tensor_intrin`` (what every ``TuneContext`` imports anyway; 15-30 s the
    first time in a process), then, where LLVM >= 22, re-registers ``dot_16x4_vnni`` under the
    same name with the stock description and :func:`_vnni_impl`, so the default rules pick it
    up. Idempotent. Build workers need nothing: the tensorize postproc inlines the
    implementation into the module before it is sent to the builder.
    """
    global _INTRINS_READY
    if _INTRINS_READY:
        return
    importlib.import_module("tvm.s_tir.tensor_intrin")
    if vnni_needs_fix():
        intrin = tvm.s_tir.TensorIntrin
        stock = intrin.get(VNNI_INTRIN)
        intrin.register(VNNI_INTRIN, stock.desc, _vnni_impl(), override=True)
    _INTRINS_READY = True


def tensor_intrin(name: str) -> Any:
    """The registered TensorIntrin called ``name`` (after :func:`register_tensor_intrins`), or
    None if there is none."""
    register_tensor_intrins()
    return tvm.s_tir.TensorIntrin.get(name, allow_missing=True)


def tensor_intrin_scripts(name: str) -> tuple[str, str] | None:
    """(description, implementation) of a tensor intrinsic as TVMScript, or None."""
    found = tensor_intrin(name)
    if found is None:
        return None
    return found.desc.script(), found.impl.script()


def target_has_features(target: Any, features: tuple[str, ...]) -> bool:
    """True when an llvm target's CPU (``mcpu``/``mattr``) has every LLVM feature named."""
    if not isinstance(target, tvm.target.Target):
        target = make_target(target)
    if str(target.kind.name) != "llvm":
        return False
    return bool(tvm.target.codegen.llvm_cpu_has_features(list(features), target))


def register_intrins_for(trace: Any) -> None:
    """Register the tensor intrinsics (:func:`register_tensor_intrins`) if ``trace`` (a Trace,
    or a tuning record's JSON) tensorizes, so reading or replaying it in a fresh process finds
    ``dot_16x4_vnni`` (msviz's fixed one)."""
    if _INTRINS_READY:
        return
    if isinstance(trace, Trace):
        uses = any(str(inst.kind.name) == "Tensorize" for inst in trace.insts)
    else:
        uses = '"Tensorize"' in str(trace) or "'Tensorize'" in str(trace)
    if uses:
        register_tensor_intrins()


def intrins_ready() -> bool:
    """True once :func:`register_tensor_intrins` has run in this process."""
    return _INTRINS_READY


# -- running a kernel in this process (result checking, msviz.engine.check) ---------------------


def compile_module(mod: tvm.IRModule, target: tvm.target.Target) -> Any:
    """``tvm.compile(mod, target)`` as a callable ``runtime.Module`` (its ``.mod``)."""
    return tvm.compile(mod, target=target).mod


def load_module(path: str) -> Any:
    """A built artifact (a builder's ``.tar``/``.so``) loaded into this process."""
    return tvm.runtime.load_module(path)


def device_of(target: tvm.target.Target) -> Any:
    """Device 0 of the target's kind in this process."""
    return tvm.device(device_type(target), 0)


def to_tensor(array: Any, device: Any) -> Any:
    """A NumPy array copied to ``device`` as a TVM tensor."""
    return tvm.runtime.tensor(array, device)


# -- RPC tracker (msviz.engine.rpc builds on these) ------------------------------------------

#: Exceptions of TVM's RPC layer: the connection to a server or its session failed.
RPC_ERRORS: tuple[type[BaseException], ...] = (tvm.error.RPCError,)
#: TVM's error for an RPC session that ran past its ``session_timeout``.
RPCSessionTimeoutError = tvm.error.RPCSessionTimeoutError


def rpc_config(host: str, port: int, key: str, *, session_timeout: float,
               priority: int = 1) -> Any:
    """MetaSchedule's ``RPCConfig`` for a tracker."""
    return ms.runner.RPCConfig(tracker_host=host, tracker_port=int(port), tracker_key=key,
                               session_priority=priority, session_timeout_sec=session_timeout)


def is_rpc_runner(runner: Any) -> bool:
    """Whether ``runner`` is MetaSchedule's ``RPCRunner``."""
    return isinstance(runner, ms.runner.RPCRunner)


def tracker_summary(host: str, port: int, *, timeout: float = 5.0) -> dict:
    """The tracker's ``summary()``: ``{"server_info": [{"addr": [ip, port], "key":
    "server:KEY"}, ...], "queue_info": {KEY: {"free": n, "pending": n}}}``.

    ``tvm.rpc.connect_tracker`` retries a refused connection for 60 s; a plain connect is tried
    first so that a tracker that is gone fails at once (``OSError``).
    """
    import socket

    with socket.create_connection((host, int(port)), timeout=timeout):
        pass
    tracker = tvm.rpc.connect_tracker(host, int(port))
    try:
        tracker._sock.settimeout(timeout)
        return dict(tracker.summary())
    finally:
        tracker.close()


def rpc_request(config: Any, *, timeout: float = 10.0, max_retry: int = 5) -> tuple[Any, str]:
    """Ask the tracker for a server under ``config.tracker_key`` (waiting in its queue) and open
    an RPC session on it, as ``TrackerSession.request`` does; also return the server's
    ``"host:port"``, which ``request`` does not tell. A tracker that refuses or is gone fails at
    once instead of retrying for 60 s."""
    import socket
    import struct

    from tvm.rpc import base

    last: BaseException | None = None
    for _ in range(max_retry):
        sock = socket.create_connection((config.tracker_host, int(config.tracker_port)),
                                        timeout=timeout)
        try:
            sock.settimeout(None)  # the request waits in the tracker's queue for a free server
            sock.sendall(struct.pack("<i", base.RPC_TRACKER_MAGIC))
            magic = struct.unpack("<i", base.recvall(sock, 4))[0]
            if magic != base.RPC_TRACKER_MAGIC:
                raise RuntimeError(f"{config.tracker_host}:{config.tracker_port} is not an RPC "
                                   "tracker")
            base.sendjson(sock, [base.TrackerCode.REQUEST, config.tracker_key, "",
                                 config.session_priority])
            value = base.recvjson(sock)
        finally:
            sock.close()
        if value[0] != base.TrackerCode.SUCCESS:
            last = RuntimeError(f"the tracker answered {value!r}")
            continue
        url, port, matchkey = value[1]
        try:
            session = tvm.rpc.connect(url, port, matchkey, config.session_timeout_sec)
        except (OSError, RuntimeError) as err:  # the server went away between match and connect
            last = err
            continue
        return session, f"{url}:{port}"
    raise RuntimeError(f"no RPC session under key {config.tracker_key!r} after {max_retry} "
                       f"tries: {last}")


def runner_futures(runner: Any, inputs: list) -> list:
    """``runner.run(inputs)``; for a runner written in Python (``RPCRunner``, any ``PyRunner``)
    its own Python futures, not the FFI's ``RunnerFuture`` copies, so that an RPC future's
    underlying ``concurrent.futures.Future`` (``.future``), and the type of the exception a
    failed run raised, stay reachable."""
    inst = getattr(runner, "_inst", None)
    return list((inst if inst is not None else runner).run(inputs))
