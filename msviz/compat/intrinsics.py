"""Tensor intrinsics for auto-tensorization: MetaSchedule's names, the CPU features they
need, and a VNNI implementation that LLVM 22 compiles.

The same concept one room up: :mod:`msviz.space_generator.intrinsics` puts them in a rule set."""

from __future__ import annotations

import contextlib
import importlib
import inspect
from collections.abc import Iterator
from typing import Any

import tvm

from msviz.compat.aliases import Trace
from msviz.compat.target import make_target

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


@contextlib.contextmanager
def _frames_of_no_file_have_no_module() -> Iterator[None]:
    """Make ``inspect.getmodule`` answer None at once for a frame of no file (``<frozen
    importlib._bootstrap>``, ``<string>``), as it answers after scanning every module.

    Each ``@T.prim_func`` of ``tvm.s_tir.tensor_intrin`` calls ``inspect.stack()``, which asks
    ``getmodule`` about every frame on the stack; for a frame of no file it finds no module only
    after scanning ``sys.modules`` whole, every time. During an import the stack is full of
    importlib's frozen frames, so the import's cost grows with the modules loaded: 42 s after
    ``import tvm`` (1,100 modules), 80 s in a notebook with msviz's widgets (1,700), 6-7 s with
    this (measured on one machine in one run). The answer is the same: a frame has no
    ``__module__`` and no ``__name__``, so the scan always ends in None for it.
    """
    original = inspect.getmodule

    def getmodule(obj: Any, _filename: str | None = None) -> Any:
        if inspect.isframe(obj):
            name = obj.f_code.co_filename
            if name.startswith("<") and name.endswith(">"):
                return None
        return original(obj, _filename)

    inspect.getmodule = getmodule
    try:
        yield
    finally:
        inspect.getmodule = original


def register_tensor_intrins() -> None:
    """Register MetaSchedule's tensor intrinsics, with msviz's fix of ``dot_16x4_vnni``.

    Imports ``tvm.s_tir.tensor_intrin`` (what every ``TuneContext`` imports anyway, the first
    time in a process: seconds here, a minute and more without
    :func:`_frames_of_no_file_have_no_module`), then, where LLVM >= 22, re-registers
    ``dot_16x4_vnni`` under the same name with the stock description and :func:`_vnni_impl`, so
    the default rules pick it up. Idempotent. Build workers need nothing: the tensorize postproc
    inlines the implementation into the module before it is sent to the builder.
    """
    global _INTRINS_READY
    if _INTRINS_READY:
        return
    with _frames_of_no_file_have_no_module():
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


#: The block annotation ``MultiLevelTilingWithIntrin`` leaves for the ``RewriteTensorize``
#: postproc: the intrinsic it will tensorize with.
AUTO_TENSORIZE = "meta_schedule.auto_tensorize"


def _tensorizes(inst: Any) -> bool:
    kind = str(inst.kind.name)
    if kind == "Tensorize":
        return True
    return kind == "Annotate" and len(inst.attrs) > 0 and str(inst.attrs[0]) == AUTO_TENSORIZE


def register_intrins_for(trace: Any) -> None:
    """Register the tensor intrinsics (:func:`register_tensor_intrins`) if ``trace`` (a Trace,
    or a tuning record's JSON) tensorizes, so reading or replaying it in a fresh process finds
    ``dot_16x4_vnni`` (msviz's fixed one).

    A trace tensorizes when it holds a ``Tensorize`` instruction, and also when it only
    annotates a block for ``RewriteTensorize`` (a trace without its postproc part, or one made
    without that postproc): replaying it with that postproc tensorizes, and with the stock
    ``dot_16x4_vnni`` (which LLVM 22 rejects) where msviz's was not registered first.
    """
    if _INTRINS_READY:
        return
    if isinstance(trace, Trace):
        uses = any(_tensorizes(inst) for inst in trace.insts)
    else:
        text = str(trace)
        uses = '"Tensorize"' in text or "'Tensorize'" in text or AUTO_TENSORIZE in text
    if uses:
        register_tensor_intrins()


def intrins_ready() -> bool:
    """True once :func:`register_tensor_intrins` has run in this process."""
    return _INTRINS_READY
