"""A catalogue of tensor programs to tune: MetaSchedule's standard test workloads, or your own.

The names and size tables are those of ``tvm.s_tir.meta_schedule.testing.te_workload`` (``GMM``
batch matmul, ``C2D`` conv2d NHWC, ``SFM`` softmax, ``CBR`` conv2d+bias+bn+relu, ``DEP`` depthwise
conv2d, ...). Each :class:`Workload` carries its IRModule (normalized the way MetaSchedule keys
its database) and its FLOP count, so latencies can be shown as GFLOPS.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from msviz import compat
from msviz.compat import normalize_mod, tir
from msviz.errors import WorkloadError
from msviz.workloads import int8 as int8_workloads

__all__ = ["DESCRIPTIONS", "INT8", "Workload", "catalogue", "configs", "flop_count", "get",
           "resolve"]

#: What each catalogue name computes (MetaSchedule's abbreviations).
DESCRIPTIONS = {
    "C1D": "conv1d NLC",
    "C2D": "conv2d NHWC",
    "C3D": "conv3d NDHWC",
    "GMM": "batch matmul (N, M, K)",
    "GRP": "grouped conv2d NHWC",
    "DIL": "dilated conv2d NHWC",
    "DEP": "depthwise conv2d NHWC",
    "T2D": "conv2d transpose NHWC",
    "CAP": "capsule conv2d",
    "NRM": "norm over (M, N)",
    "SFM": "softmax over rows",
    "CBR": "conv2d + bias + batch norm + relu",
    "TBG": "transpose + batch matmul",
    "I8DP": "int8 dense u8 x i8 -> i32, weight packed [N/16, K/4, 16, 4] (M, N, K)",
    "I8DU": "int8 dense u8 x i8 -> i32, weight unpacked [N, K] (M, N, K)",
    "I8C2D": "int8 conv2d NCHWc u8 x i8 -> i32 (N, IC, H, W, OC, KH, KW)",
}

#: The int8 workloads, in the layouts AVX-512 VNNI wants (and the unpacked dense, whose
#: space tensorizes with a wrong answer: the trap the result check catches).
INT8 = ("I8DP", "I8DU", "I8C2D")


def _te_workload() -> Any:
    # heavy (MetaSchedule's testing package): imported when a catalogue workload is first built
    return compat.te_workload()


def configs() -> dict[str, tuple[Any, list[tuple]]]:
    """te_workload's CONFIGS plus msviz's int8 workloads: name -> (te function, sizes)."""
    return {**_te_workload().CONFIGS, **int8_workloads.CONFIGS}


def catalogue() -> dict[str, list[tuple]]:
    """Every catalogue name with its list of size tuples (the ``index`` picks one)."""
    table = configs()
    return {name: list(table[name][1]) for name in DESCRIPTIONS if name in table}


def flop_count(mod: compat.IRModule) -> float:
    """The FLOP count MetaSchedule's task table shows for a workload (``estimate_tir_flops``)."""
    try:
        return float(compat.estimate_tir_flops(mod))
    except Exception:  # some ops (e.g. data-dependent loops) have no estimate
        return float("nan")


@dataclass(frozen=True)
class Workload:
    """A tensor program ready to tune.

    Parameters
    ----------
    name : str
        Short name, e.g. ``"GMM-0"`` or the user's function name.
    mod : tvm.IRModule
        The program, normalized as MetaSchedule keys it (one PrimFunc named ``main``).
    flop : float
        Floating-point operations per run (NaN when unknown).
    description : str
        One line saying what it computes.
    """

    name: str
    mod: compat.IRModule = field(repr=False, compare=False)
    flop: float = float("nan")
    description: str = ""

    @property
    def script(self) -> str:
        """The workload as TVMScript."""
        return self.mod.script()


_NAME_INDEX = re.compile(r"^([A-Za-z0-9_]+?)(?:[-:](\d+))?$")


def get(name: str, index: int | None = None, *, shape: tuple | None = None) -> Workload:
    """A catalogue workload by name and size index.

    Parameters
    ----------
    name : str
        A catalogue name (``"GMM"``), optionally with its index (``"GMM-2"`` or ``"GMM:2"``).
    index : int, optional
        Which size of the catalogue's size list (default 0).
    shape : tuple, optional
        Custom sizes in the argument order of the underlying ``te_workload`` function, instead
        of a catalogue size, e.g. ``get("C2D", shape=(1, 14, 14, 16, 16, 3, 1, 1))``.

    Returns
    -------
    workload : Workload
    """
    match = _NAME_INDEX.match(name.strip()) if isinstance(name, str) else None
    if match is None:
        raise WorkloadError(f"workload name must look like 'GMM' or 'GMM-0', got {name!r}")
    key = match.group(1).upper()
    if match.group(2) is not None:
        if index is not None and index != int(match.group(2)):
            raise WorkloadError(
                f"{name!r} names index {match.group(2)} but index={index} was given"
            )
        index = int(match.group(2))
    table = configs()
    if key not in DESCRIPTIONS or key not in table:
        raise WorkloadError(
            f"unknown workload {name!r}; catalogue names: {', '.join(sorted(catalogue()))}"
        )
    func, sizes = table[key]
    if shape is not None:
        params, label = tuple(shape), f"{key}{tuple(shape)}"
    else:
        index = 0 if index is None else index
        if not 0 <= index < len(sizes):
            raise WorkloadError(
                f"workload {key} has sizes 0..{len(sizes) - 1} ({sizes}), got index {index}"
            )
        params, label = sizes[index], f"{key}-{index}"
    try:
        prim_func = compat.te.create_prim_func(func(*params))
    except Exception as err:
        raise WorkloadError(f"cannot build workload {label} with sizes {params}: {err}") from err
    mod = normalize_mod(prim_func)
    return Workload(label, mod, flop_count(mod), f"{DESCRIPTIONS[key]} {params}")


def resolve(workload: Any, *, name: str | None = None) -> Workload:
    """Turn anything a user may call a workload into a :class:`Workload`.

    Parameters
    ----------
    workload : Workload | str | tvm.tirx.PrimFunc | tvm.IRModule
        A Workload; a catalogue name (``"GMM-0"``); TVMScript text of a PrimFunc or IRModule;
        a PrimFunc; or an IRModule with exactly one PrimFunc.
    name : str, optional
        Name to show for a user program (default: its function name).
    """
    if isinstance(workload, Workload):
        return workload
    if isinstance(workload, str):
        text = workload.strip()
        if "\n" not in text and not text.startswith(("@", "#", "import", "from")):
            return get(text)
        return resolve(_parse_script(text), name=name)
    if isinstance(workload, tir.PrimFunc):
        attrs = workload.attrs or {}
        label = name or (str(attrs["global_symbol"]) if "global_symbol" in attrs else "main")
        mod = normalize_mod(workload)
        return Workload(label, mod, flop_count(mod), "user PrimFunc")
    if isinstance(workload, compat.IRModule):
        funcs = [(gv.name_hint, f) for gv, f in workload.functions_items()
                 if isinstance(f, tir.PrimFunc)]
        if len(funcs) != 1:
            raise WorkloadError(
                f"an IRModule workload must hold exactly one PrimFunc, this one holds "
                f"{len(funcs)} ({', '.join(n for n, _ in funcs) or 'none'}); "
                "pass one PrimFunc, or tune a Relax model task by task"
            )
        return resolve(funcs[0][1], name=name or funcs[0][0])
    raise WorkloadError(
        "a workload must be a catalogue name, TVMScript text, a PrimFunc or an IRModule, "
        f"not {type(workload).__name__}"
    )


def _parse_script(text: str) -> Any:
    try:
        return compat.parse_script(text)
    except Exception as err:
        first = str(err).strip().splitlines()
        raise WorkloadError(
            f"cannot parse the TVMScript workload: {first[-1] if first else err}"
        ) from None
