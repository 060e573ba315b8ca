"""Int8 workloads for the catalogue, in the layouts AVX-512 VNNI's ``vpdpbusd`` wants.

``vpdpbusd`` multiplies 4 unsigned bytes of A by 4 signed bytes of each of 16 rows of B and adds
the sums to 16 int32 lanes of C. MetaSchedule's ``dot_16x4_vnni`` intrinsic matches a reduction
of that shape; a weight packed ``[N/16, K/4, 16, 4]`` makes each 16x4 block of B contiguous.

- ``I8DP`` dense u8 x i8 -> i32 with the weight packed (topi's ``dense_vnni`` layout);
- ``I8DU`` the same dense with the weight unpacked ``[N, K]``: its space still tensorizes, but the
  intrinsic then reads the wrong bytes, so tuned kernels compute a wrong answer;
- ``I8C2D`` conv2d NCHWc int8 (topi's ``conv2d_NCHWc_int8``: data ``[N, IC/ic_bn, H, W, ic_bn]``,
  kernel ``[OC/16, IC/ic_bn, KH, KW, ic_bn/4, 16, 4]``, output ``[N, OC/16, OH, OW, 16]``),
  stride 1, no padding.
"""

from __future__ import annotations

from typing import Any

from msviz.errors import WorkloadError

__all__ = ["CONFIGS", "conv2d_nchwc_int8", "dense_int8", "dense_int8_packed", "pack_weight"]

#: Lanes (rows of B) and bytes per lane of ``vpdpbusd``.
LANES, BYTES = 16, 4


def _te() -> Any:
    from msviz import compat  # heavy: TVM, imported when an int8 workload is first built

    return compat.te


def _need(cond: bool, what: str, sizes: tuple) -> None:
    if not cond:
        raise WorkloadError(f"{what} (sizes {sizes})")


def dense_int8_packed(m: int, n: int, k: int) -> list[Any]:
    """C[m, n] = sum_k A[m, k] * B[n // 16, k // 4, n % 16, k % 4] (u8 x i8 -> i32)."""
    _need(n % LANES == 0 and k % BYTES == 0,
          f"I8DP packs the weight as [N/{LANES}, K/{BYTES}, {LANES}, {BYTES}]: N must be a "
          f"multiple of {LANES} and K of {BYTES}", (m, n, k))
    te = _te()
    a = te.placeholder((m, k), "uint8", name="A")
    b = te.placeholder((n // LANES, k // BYTES, LANES, BYTES), "int8", name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(
        a[i, r].astype("int32")
        * b[j // LANES, r // BYTES, j % LANES, r % BYTES].astype("int32"), axis=r), name="C")
    return [a, b, c]


def dense_int8(m: int, n: int, k: int) -> list[Any]:
    """C[m, n] = sum_k A[m, k] * B[n, k] (u8 x i8 -> i32), weight unpacked."""
    te = _te()
    a = te.placeholder((m, k), "uint8", name="A")
    b = te.placeholder((n, k), "int8", name="B")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(
        a[i, r].astype("int32") * b[j, r].astype("int32"), axis=r), name="C")
    return [a, b, c]


def conv2d_nchwc_int8(n: int, ic: int, h: int, w: int, oc: int, kh: int, kw: int,
                      ic_bn: int = 16) -> list[Any]:
    """Conv2d NCHWc u8 x i8 -> i32, stride 1, no padding (topi's ``conv2d_NCHWc_int8``)."""
    _need(oc % LANES == 0 and ic % ic_bn == 0 and ic_bn % BYTES == 0,
          f"I8C2D needs OC a multiple of {LANES}, IC a multiple of ic_bn={ic_bn} and ic_bn of "
          f"{BYTES}", (n, ic, h, w, oc, kh, kw))
    _need(h >= kh and w >= kw, "I8C2D needs the kernel to fit in the image",
          (n, ic, h, w, oc, kh, kw))
    te = _te()
    oh, ow = h - kh + 1, w - kw + 1
    data = te.placeholder((n, ic // ic_bn, h, w, ic_bn), "uint8", name="data")
    kernel = te.placeholder(
        (oc // LANES, ic // ic_bn, kh, kw, ic_bn // BYTES, LANES, BYTES), "int8", name="kernel")
    ico = te.reduce_axis((0, ic // ic_bn), name="ic_outer")
    ry = te.reduce_axis((0, kh), name="kh")
    rx = te.reduce_axis((0, kw), name="kw")
    icf = te.reduce_axis((0, ic_bn // BYTES), name="ic_f_inner")
    ics = te.reduce_axis((0, BYTES), name="ic_s_inner")
    out = te.compute(
        (n, oc // LANES, oh, ow, LANES),
        lambda b, occ, y, x, ocb: te.sum(
            data[b, ico, y + ry, x + rx, icf * BYTES + ics].astype("int32")
            * kernel[occ, ico, ry, rx, icf, ocb, ics].astype("int32"),
            axis=[ico, ry, rx, icf, ics]),
        name="conv2d_NCHWc_int8")
    return [data, kernel, out]


def pack_weight(weight: Any) -> Any:
    """numpy: an [N, K] int8 weight in I8DP's packed layout [N/16, K/4, 16, 4]."""
    import numpy as np

    n, k = weight.shape
    return np.ascontiguousarray(
        weight.reshape(n // LANES, LANES, k // BYTES, BYTES).transpose(0, 2, 1, 3))


#: name -> (te function, sizes), in te_workload's CONFIGS form. Size 0 is small, for tests.
CONFIGS: dict[str, tuple[Any, list[tuple]]] = {
    "I8DP": (dense_int8_packed, [(64, 64, 64), (128, 256, 256), (256, 512, 512)]),
    "I8DU": (dense_int8, [(64, 64, 64), (128, 256, 256), (256, 512, 512)]),
    "I8C2D": (conv2d_nchwc_int8, [(1, 32, 8, 8, 32, 3, 3), (1, 64, 14, 14, 64, 3, 3)]),
}
