"""What a schedule becomes: its TVMScript, its lowered TIR, and the source code TVM generates.

For CPU targets the generated source is LLVM IR (``"ll"``) or assembly (``"asm"``), or C with
the ``c`` target; for a CUDA target it is the CUDA C kernel source of the device module, which
TVM produces without a GPU (nvcc can compile it here, see :func:`compile_cuda`).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from msviz import compat
from msviz.trace.source import target_of

__all__ = [
    "SOURCE_FORMATS",
    "SPECIAL_INSTRUCTIONS",
    "SpecialInstructions",
    "compile_cuda",
    "generated_source",
    "lowered_tir",
    "special_instructions",
    "tvmscript",
]

#: The ``fmt`` values :func:`generated_source` accepts, per target kind.
SOURCE_FORMATS = {"llvm": ("ll", "asm"), "c": ("c",), "cuda": ("cuda", "host-ll", "host-asm")}


def _mod_of(obj: Any) -> compat.IRModule:
    """The scheduled IRModule of a Schedule, Replay, Trial, IRModule or PrimFunc."""
    if isinstance(obj, compat.IRModule):
        return obj
    if isinstance(obj, compat.tir.PrimFunc):
        return compat.IRModule({"main": obj})
    mod = getattr(obj, "mod", None)  # Schedule, Replay, Trial, Workload
    if isinstance(mod, compat.IRModule):
        return mod
    sch = getattr(obj, "sch", None)  # MeasureCandidate
    if sch is not None:
        return sch.mod
    raise TypeError(
        "expected an IRModule, a PrimFunc, a Schedule, a msviz Replay or Trial, "
        f"not {type(obj).__name__}"
    )


def tvmscript(obj: Any) -> str:
    """The (scheduled) module as TVMScript.

    Parameters
    ----------
    obj : Schedule | Replay | Trial | IRModule | PrimFunc | str
        A schedule-like object; a str is returned unchanged.

    Returns
    -------
    script : str
    """
    if isinstance(obj, str):
        return obj
    return _mod_of(obj).script()


def _bind(mod: compat.IRModule, target: Any) -> tuple[compat.IRModule, compat.Target]:
    """Bind ``target`` (with its host) to every function, as ``tvm.tirx.build`` does."""
    target = compat.make_target(target)
    host = target.host
    if host is None:
        cpu = target.get_target_device_type() == compat.cpu_device_type()
        host = target if cpu else compat.make_target("llvm")
    bound = target.with_host(host)
    return compat.tir.transform.BindTarget(bound)(mod), bound


def lowered_tir(obj: Any, target: Any = None) -> str:
    """The module after TVM's default TIR lowering pipeline (what code generation receives).

    Parameters
    ----------
    obj : Schedule | Replay | Trial | IRModule | PrimFunc
        What to lower.
    target : str | dict | Target, optional
        The target (``"llvm"``, ``"cuda"`` ...); default: a trial's or Replay's own target,
        ``"llvm"`` for anything else.

    Returns
    -------
    script : str
        TVMScript of the lowered module: loops flattened, buffers allocated, vectorized and
        unrolled loops expanded, host/device split, packed-API wrappers added.
    """
    mod, bound = _bind(_mod_of(obj), target_of(obj) if target is None else target)
    pipeline = compat.tir.get_tir_pipeline("default")
    if isinstance(pipeline, tuple):  # (pipeline, finalize_host, finalize_device)
        pipeline = pipeline[0]
    with bound, compat.PassContext():
        return pipeline(mod).script()


def build(obj: Any, target: Any = None) -> Any:
    """``tvm.tirx.build`` of a schedule-like object (for its own target by default); returns
    the runtime module."""
    target = target_of(obj) if target is None else target
    return compat.tir.build(_mod_of(obj), target=compat.make_target(target))


def generated_source(obj: Any, target: Any = None, fmt: str | None = None) -> str:
    """The source code TVM generates for a schedule.

    Parameters
    ----------
    obj : Schedule | Replay | Trial | IRModule | PrimFunc
        What to compile.
    target : str | dict | Target
        ``"llvm"`` (CPU), ``"c"`` (CPU via C), ``"cuda"`` or any Target.
    fmt : str, optional
        For llvm: ``"ll"`` (LLVM IR, default) or ``"asm"``. For c: ``"c"`` (vectorized loops
        are emitted as plain loops, since the C backend has no vector types). For cuda:
        ``"cuda"`` (the kernel source, default), ``"host-ll"`` or ``"host-asm"`` (the host code
        that launches it).

    Returns
    -------
    source : str
    """
    target = target_of(obj) if target is None else target
    if isinstance(target, str) and target == "c":
        target = compat.Target("c")
    target = compat.make_target(target)
    kind = target.kind.name
    formats = SOURCE_FORMATS.get(kind, ("",))
    fmt = formats[0] if fmt is None else fmt
    if fmt not in formats:
        raise ValueError(f"fmt must be one of {formats} for a {kind} target, not {fmt!r}")
    if kind == "c":  # the C backend has no vector types: emit vectorized loops as plain loops
        with compat.PassContext(config={"tirx.disable_vectorize": True}):
            rt = build(obj, target)
    else:
        rt = build(obj, target)
    if kind == "cuda" and fmt == "cuda":
        device = [m for m in rt.imports if m.kind == "cuda"]
        if not device:
            raise ValueError("the build produced no CUDA module (does the schedule bind threads?)")
        return device[0].inspect_source()
    if fmt.startswith("host-"):
        fmt = fmt[len("host-"):]
    return rt.inspect_source("" if fmt == "c" else fmt)


def compile_cuda(source: str, *, arch: str = "sm_90", target_format: str = "ptx") -> bytes:
    """Compile CUDA source with nvcc (no GPU needed); returns PTX or cubin bytes.

    Parameters
    ----------
    source : str
        CUDA C source, e.g. ``generated_source(sch, "cuda")``.
    arch : str
        The GPU architecture (``"sm_90"``).
    target_format : str
        ``"ptx"`` or ``"cubin"``.
    """
    with compat.make_target("cuda"):
        out = compat.nvcc_compile_cuda(source, target_format=target_format, arch=arch)
    return bytes(out)


#: Instructions that do the work of a tensor intrinsic on x86, highlighted in the code view:
#: AVX-512 VNNI / AVX-VNNI dot products (u8 x i8 and i16 x i16 into i32, plain and saturating),
#: the AVX-512BW pair they replace, and AMX tile dot products.
SPECIAL_INSTRUCTIONS = (
    "vpdpbusd", "vpdpbusds", "vpdpwssd", "vpdpwssds", "vpmaddubsw", "vpmaddwd",
    "tdpbusd", "tdpbssd", "tdpbf16ps",
)


class SpecialInstructions(NamedTuple):
    """Where special instructions occur in generated code."""

    counts: dict[str, int]  # instruction -> occurrences (only those that occur)
    lines: tuple[int, ...]  # 0-based numbers of the lines that use one


def special_instructions(source: str, names: tuple[str, ...] = SPECIAL_INSTRUCTIONS
                         ) -> SpecialInstructions:
    """Find special instructions in assembly or LLVM IR.

    Parameters
    ----------
    source : str
        Assembly (``vpdpbusd zmm0, zmm1, zmm2``) or LLVM IR (``@llvm.x86.avx512.vpdpbusd.512``).
    names : tuple of str
        The mnemonics to look for.
    """
    pattern = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, names)) +
                         r")(?![A-Za-z0-9_])")
    counts: dict[str, int] = {}
    lines = []
    for i, line in enumerate(source.splitlines()):
        found = pattern.findall(line)
        if found:
            lines.append(i)
            for name in found:
                counts[name] = counts.get(name, 0) + 1
    return SpecialInstructions(counts, tuple(lines))
