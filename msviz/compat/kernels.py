"""Building and running kernels in this process: the fast build, result checks, re-timing."""

from __future__ import annotations

from typing import Any

import tvm

from msviz.compat.aliases import device_type, ms


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
