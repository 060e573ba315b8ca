"""Targets: the host CPU as LLVM names it, its cores, and the kernel threads TVM runs on."""

from __future__ import annotations

import difflib
import os
import re
from typing import Any, NamedTuple

import tvm

from msviz.errors import TargetError


def make_target(target: Any = "llvm", *, num_cores: int | None = None) -> tvm.target.Target:
    """Build a TVM Target from a kind name, a dict, a tag, or a Target.

    Parameters
    ----------
    target : str | dict | tvm.target.Target
        ``"llvm"`` (this machine's CPU: ``mcpu`` from LLVM's host query, the vector extensions the
        operating system does not report turned off, ``num-cores`` filled in; see
        :func:`host_cpu`), ``"cuda"`` (a CUDA target with the
        hardware attributes MetaSchedule's rules need, hosted on the CPU), a registered tag such as
        ``"nvidia/nvidia-h100"``, a dict of target attributes, or a Target. An llvm target
        without ``num-cores`` gets ``num_cores`` or, when it compiles for this machine's
        architecture, this machine's cores (see :func:`complete_target`).
    num_cores : int, optional
        Cores for an llvm target that names none; defaults to the cores this process may use.

    Returns
    -------
    target : tvm.target.Target

    Raises
    ------
    msviz.errors.TargetError
        For an ``mcpu`` LLVM does not know, a ``num-cores`` (or ``num_cores``) below 1, and
        for a target that lacks what MetaSchedule needs and msviz cannot fill in
        (:func:`complete_target`).
    """
    if num_cores is not None and (isinstance(num_cores, bool) or not isinstance(num_cores, int)
                                  or num_cores < 1):
        raise TargetError(f"num_cores must be an int >= 1 (the cores to parallelize for), not "
                          f"{num_cores!r}")
    if isinstance(target, tvm.target.Target):
        return complete_target(target, num_cores=num_cores)
    cores = num_cores or host_cores()
    if isinstance(target, dict):
        spec = dict(target)
        if spec.get("kind") == "llvm" and (num_cores or _compiles_here(spec.get("mtriple"))):
            spec.setdefault("num-cores", cores)
        return complete_target(check_llvm_cpu(tvm.target.Target(spec)), num_cores=num_cores)
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
        made = tvm.target.Target(target)
    except Exception as err:
        raise ValueError(
            f"unknown target {target!r}: use 'llvm', 'cuda', a tag such as 'nvidia/nvidia-h100', "
            f"or a dict like {{'kind': 'llvm', 'num-cores': 2}} ({err})"
        ) from None
    return complete_target(made, num_cores=num_cores)


#: What MetaSchedule reads from a GPU target, and what reads it; without them TVM stops with
#: a bare ValueError ("missing attribute `max_threads_per_block` in the target") or RuntimeError.
GPU_ATTRS = {
    "max_threads_per_block": "MetaSchedule's GPU schedule rules",
    "max_shared_memory_per_block": "MetaSchedule's VerifyGPUCode postprocessor",
}


def _compiles_here(triple: Any) -> bool:
    """Whether an ``mtriple`` (None or empty: the host's) is this machine's architecture."""
    if not triple:
        return True
    host = str(tvm.target.codegen.llvm_get_system_triple())
    return str(triple).split("-")[0] == host.split("-")[0]


def complete_target(target: tvm.target.Target, *, num_cores: int | None = None
                    ) -> tvm.target.Target:
    """``target`` with what MetaSchedule needs from it, filled in or asked for by name.

    An llvm target needs ``num-cores`` (MetaSchedule parallelizes for that many cores; TVM stops
    with "physical core number must be defined" without it): ``num_cores`` is filled in, or this
    machine's cores when the target compiles for this machine's architecture. A GPU target needs
    :data:`GPU_ATTRS`, which depend on the GPU: they are asked for, not guessed.

    Parameters
    ----------
    target : tvm.target.Target
        The target.
    num_cores : int, optional
        Cores for an llvm target that names none.

    Returns
    -------
    target : tvm.target.Target
        ``target`` itself when nothing was missing.

    Raises
    ------
    msviz.errors.TargetError
        Naming the missing attribute and how to give it, or a ``num-cores`` below 1.
    """
    kind = str(target.kind.name)
    attrs = target.attrs
    for part in (target, target.host):
        if part is not None and "num-cores" in part.attrs and int(part.attrs["num-cores"]) < 1:
            raise TargetError(
                f"target num-cores {int(part.attrs['num-cores'])} is not a number of cores: it "
                f"must be >= 1 (the physical cores MetaSchedule parallelizes for; this machine "
                f"has {host_cores()})")
    if kind == "llvm" and "num-cores" not in attrs:
        triple = str(attrs["mtriple"]) if "mtriple" in attrs else ""
        if not num_cores and not _compiles_here(triple):
            mcpu = f" {attrs['mcpu']}" if "mcpu" in attrs else ""
            raise TargetError(
                f"target llvm{mcpu} for {triple} has no num-cores, which MetaSchedule needs (it "
                "parallelizes for that many cores). Add the device's physical cores to the "
                f"target, e.g. {{'kind': 'llvm', 'mtriple': '{triple}', 'num-cores': 4}} (a tag "
                "or a Target: {**target.export(), 'num-cores': 4}); msviz fills it in only for "
                "this machine's architecture.")
        spec = dict(target.export())
        spec["num-cores"] = num_cores or host_cores()
        return tvm.target.Target(spec)
    if "gpu" in {str(k) for k in target.keys}:
        missing = [a for a in GPU_ATTRS if a not in attrs]
        if missing:
            what = " and ".join(f"{a} (read by {GPU_ATTRS[a]})" for a in missing)
            arch = f" {attrs['arch']}" if "arch" in attrs else ""
            if kind == "cuda":
                example = {"kind": kind, **({"arch": str(attrs["arch"])} if arch else {}),
                           "max_threads_per_block": 1024, "max_shared_memory_per_block": 49152}
                how = (f"Add your GPU's values to the target, e.g. {example}, or name a tag "
                       "that has them such as 'nvidia/nvidia-a100' (tvm.target.list_tags() "
                       "lists them); target='cuda' is an H100 (sm_90) with them filled in.")
            else:
                how = ("Add your GPU's values to the target (max_threads_per_block in threads, "
                       "max_shared_memory_per_block in bytes).")
            raise TargetError(f"target {kind}{arch} has no {what}. {how}")
    return target


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
    close = difflib.get_close_matches(mcpu, names, n=3)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    if mcpu == "native":
        hint = "; target='llvm' gives this machine's CPU."
    raise TargetError(
        f"target mcpu {mcpu!r} is not a CPU LLVM knows for {triple} (LLVM would ignore it and "
        f"compile for a generic CPU){hint or '.'} List the valid names with "
        "tvm.target.codegen.llvm_get_cpu_archlist(tvm.target.Target({'kind': 'llvm'})) or "
        "`llc -mcpu=help`.")


def target_kind_options(kind: str) -> Any:
    """The options the pinned TVM's target kind ``kind`` knows (a mapping keyed by option name).

    Raises
    ------
    Exception
        Whatever TVM raises for a target kind it does not have.
    """
    return tvm.target.TargetKind.options_from_name(kind)


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
