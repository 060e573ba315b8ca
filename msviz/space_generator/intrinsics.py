"""Tensor intrinsics in a rule set: which one the target's CPU takes, and why one cannot be used.

MetaSchedule tensorizes in two steps: the schedule rule ``MultiLevelTilingWithIntrin`` tiles a
block so its innermost loops match the intrinsic's description, blockizes them and annotates the
block ``meta_schedule.auto_tensorize = <intrinsic>``; the postproc ``RewriteTensorize`` replaces
each annotated block with the intrinsic's implementation. msviz derives the rule from the whole
target (as MetaSchedule does when it picks the rules itself), and when the intrinsic cannot work
says which reason applies, and tunes without it instead of failing every candidate.

The same concept one room down: :mod:`msviz.compat.intrinsics` names TVM's.
"""

from __future__ import annotations

from typing import Any

from msviz import compat

__all__ = [
    "AUTO_TENSORIZE",
    "INTRIN_RULE",
    "default_intrin",
    "intrin_of",
    "keep_untensorized",
    "tensorize_specs",
    "untensorized_int8",
    "unusable",
    "unused",
]

#: The rule that tiles for an intrinsic, and the block annotation it leaves for the postproc.
INTRIN_RULE = "MultiLevelTilingWithIntrin"
AUTO_TENSORIZE = "meta_schedule.auto_tensorize"


def default_intrin(target: Any) -> str | None:
    """The intrinsic MetaSchedule's default rules use on this target (VNNI CPUs), or None."""
    if compat.target_has_features(target, compat.INTRIN_FEATURES[compat.VNNI_INTRIN]):
        return compat.VNNI_INTRIN
    return None


def tensorize_specs(intrin: str) -> tuple[tuple[str, dict[str, Any]], tuple[str, dict[str, Any]]]:
    """(rule, postproc) name and parameters, as MetaSchedule's ``DefaultX86`` rules set them,
    plus msviz's ``keep_untensorized`` (see :func:`keep_untensorized`)."""
    rule = {
        "intrin_name": intrin, "keep_untensorized": True, "structure": "SSRSRS", "tile_binds": None,
        "max_innermost_factor": 64, "vector_load_lens": None, "reuse_read": None,
        "reuse_write": {"req": "may", "levels": [1, 2], "scope": "global"},
    }
    return (INTRIN_RULE, rule), ("RewriteTensorize", {"vectorize_init_loop": True})


def intrin_of(spec: Any) -> str | None:
    """The intrinsic a rule spec names (``MultiLevelTilingWithIntrin``), or None."""
    if spec.name != INTRIN_RULE:
        return None
    if "intrin_name" in spec.params:
        return str(spec.params["intrin_name"])
    obj = spec.obj
    return str(obj.intrin_name) if obj is not None and hasattr(obj, "intrin_name") else None


def unusable(intrin: str, target: Any = None) -> str | None:
    """Why ``intrin`` cannot be used (on ``target``), or None when it can."""
    if compat.tensor_intrin(intrin) is None:
        known = ", ".join(sorted(compat.INTRIN_FEATURES))
        return (f"tensor intrinsic {intrin!r} does not exist (not registered with TVM; x86 ones: "
                f"{known}): tuning without it")
    needs = compat.INTRIN_FEATURES.get(intrin)
    if target is not None and needs and not compat.target_has_features(target, needs):
        mcpu = compat.describe_target(target)
        return (f"tensor intrinsic {intrin!r} needs the CPU feature(s) {', '.join(needs)}, which "
                f"the target ({mcpu}) lacks: tuning without it")
    return None


def unused(intrins: list[str], spaces: list[Any], workload: Any) -> list[str]:
    """Messages for intrinsics the rules offer but no design space of an eligible workload uses.

    ``spaces`` are Schedules (or trace texts); ``workload`` a msviz Workload. A workload is
    eligible when its arguments have the dtypes of the intrinsic's operands (u8 and i8 for
    VNNI: an fp32 matmul is not expected to tensorize); an int8 reduction whose extents do not
    divide the intrinsic's (16 lanes x 4 bytes for VNNI) is not tiled for it.
    """
    texts = [s if isinstance(s, str) else "\n".join(s.trace.as_python()) for s in spaces]
    dtypes = {dtype for dtype, _ in _operands(next(f for _, f in workload.mod.functions_items()))}
    out = []
    for intrin in intrins:
        found = compat.tensor_intrin(intrin)
        operands = {dtype for dtype, _ in _operands(found.desc)} if found else set()
        if not operands <= dtypes:
            continue
        if not any(AUTO_TENSORIZE in t and intrin in t for t in texts):
            shape = _shape(intrin)
            out.append(
                f"no design space of {workload.name} uses tensor intrinsic {intrin!r}: no block "
                f"matches its description{shape} (dtypes, or extents that do not divide the "
                "intrinsic's); tuning without tensorization")
    return out


def _operands(func: Any) -> list[tuple[str, tuple[int, ...]]]:
    """(dtype, shape) of each argument of a PrimFunc."""
    return [(str(a.dtype), tuple(int(d) for d in a.shape))
            for a in compat.ArgInfo.from_prim_func(func)]


def _shape(intrin: str) -> str:
    found = compat.tensor_intrin(intrin)
    if found is None:
        return ""
    return " (" + ", ".join(f"{d}{list(s)}" for d, s in _operands(found.desc)) + ")"


_KEEP_CLASS: Any = None


def keep_untensorized(rule: Any) -> Any:
    """Wrap a ``MultiLevelTilingWithIntrin`` rule so a block it tensorizes also stays in an
    untensorized design space (tiled by the next rule, ``MultiLevelTiling``).

    MetaSchedule's rule replaces the block's only space with tensorized ones. When the
    intrinsic's implementation does not fit the data layout (the int8 dense with an unpacked
    weight: ``vpdpbusd`` reads 64 contiguous bytes where the layout has 16 rows of 4), every
    candidate then computes a wrong answer and the result check leaves no valid kernel; with
    the untensorized space kept, the search still finds right ones, and the faster tensorized
    kernels win wherever they are right.
    """
    global _KEEP_CLASS
    if _KEEP_CLASS is None:
        base = compat.ms.schedule_rule.PyScheduleRule

        class KeepUntensorized(base):  # type: ignore[misc, valid-type]
            def __init__(self, inner: Any) -> None:
                super().__init__()
                self.inner = inner

            def _initialize_with_tune_context(self, context: Any) -> None:
                self.inner._initialize_with_tune_context(context)

            def apply(self, sch: Any, block: Any) -> list[Any]:
                before = len(sch.trace.insts)
                tensorized = [s for s in self.inner.apply(sch.copy(), block)
                              if len(s.trace.insts) > before]
                return [*tensorized, sch]

            def clone(self) -> Any:
                return keep_untensorized(self.inner.clone())

        _KEEP_CLASS = compat.derived_object(KeepUntensorized)
    return _KEEP_CLASS(rule)


#: Operand dtypes of ``dot_16x4_vnni`` (u8 x i8 -> i32), known without registering intrinsics.
_VNNI_DTYPES = {"uint8", "int8"}


def untensorized_int8(workloads: list[Any], target: Any, rules: Any) -> str | None:
    """Why int8 workloads tune untensorized on an llvm target without AVX-512 VNNI, or None.

    Said when the rules offer no tensor intrinsic (then :func:`unusable` / :func:`unused`
    explain): the default rules add ``dot_16x4_vnni`` only for a VNNI CPU, so without this
    note an int8 workload would just tune slower, silently.
    """
    target = compat.make_target(target)
    if str(target.kind.name) != "llvm" or rules.intrinsics() or default_intrin(target):
        return None
    names = [w.name for w in workloads if _VNNI_DTYPES <= {
        dtype for dtype, _ in _operands(next(f for _, f in w.mod.functions_items()))}]
    if not names:
        return None
    return (f"int8 workload(s) {', '.join(names)}: the target ({compat.describe_target(target)}) "
            f"has no AVX-512 VNNI (avx512vnni), so the default rules add no {compat.VNNI_INTRIN!r}"
            " and it tunes untensorized (no vpdpbusd); on a VNNI CPU, target='llvm' or an mcpu "
            "such as 'cascadelake' tensorizes it")
