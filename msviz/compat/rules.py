"""Schedule rules, postprocs and mutators exactly as MetaSchedule picks them for a target.

Stock MetaSchedule does not choose them by the target's kind name: when a space generator is
left to choose (``PostOrderApply()``), ``SpaceGeneratorNode::InitializeWithTuneContext`` asks
``GetRuleKindFromTarget`` (src/s_tir/meta_schedule/space_generator/space_generator.cc) and an
AVX-512 VNNI CPU gets the x86 tensorizing rules and ``RewriteTensorize``, a CUDA ``sm_75`` or
newer gets the tensor-core rules and postprocs, Hexagon adds ``VerifyVTCMLimit``, and so on.
``Postproc.create("llvm")`` / ``("cuda")`` know none of this. msviz asks TVM itself: a
``PostOrderApply`` with nothing set, initialised by a ``TuneContext`` of the target, holds the
very objects stock tuning would use. Everything in msviz that replays or generates takes them
from here.

The same concept one room up: :mod:`msviz.space_generator.rules` is msviz's RuleSet of them.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple

import tvm

from msviz.compat.aliases import ms
from msviz.compat.target import make_target

__all__ = ["DefaultRules", "default_rules", "rule_kind"]


class DefaultRules(NamedTuple):
    """What stock's ``TuneContext`` resolves for a target.

    Attributes
    ----------
    kind : str
        The rule kind, as ``GetRuleKindFromTarget`` names it: ``"llvm"``, ``"vnni"``,
        ``"avx512"``, ``"rvv"``, ``"asimd"``, ``"dotprod"``, ``"cuda"``, ``"cuda-tensorcore"``,
        ``"hexagon"`` or ``"c"``.
    sch_rules : list of ScheduleRule
    postprocs : list of Postproc
    mutator_probs : dict of Mutator -> float
    """

    kind: str
    sch_rules: list
    postprocs: list
    mutator_probs: dict


_LOCK = threading.Lock()
_CACHE: dict[str, DefaultRules] = {}
_PROBE_MOD: Any = None


def _has(feature: str, target: tvm.target.Target) -> bool:
    return bool(tvm.get_global_func("target.target_has_feature")(feature, target))


def rule_kind(target: Any) -> str:
    """The rule kind stock MetaSchedule derives from ``target`` (see :class:`DefaultRules`).

    Follows ``GetRuleKindFromTarget``: on llvm, AVX-512 VNNI or AVX-VNNI gives ``"vnni"``,
    AVX-512F with AVX-512BW ``"avx512"``, the RISC-V vector extension ``"rvv"``, an Arm CPU
    with the dot-product extension ``"dotprod"`` and one with Advanced SIMD ``"asimd"``; on
    CUDA an ``arch`` of ``sm_75`` or newer gives ``"cuda-tensorcore"``; other GPU kinds
    ``"cuda"``.
    """
    target = make_target(target)
    name = str(target.kind.name)
    if name == "llvm":
        if _has("avx512vnni", target) or _has("avxvnni", target):
            return "vnni"
        if _has("avx512f", target) and _has("avx512bw", target):
            return "avx512"
        if _has("v", target):
            return "rvv"
        triple = str(target.attrs.get("mtriple", "") or "")
        if triple.startswith(("aarch64", "arm64")) or "arm" in triple.split("-")[0]:
            if _has("dotprod", target):
                return "dotprod"
            if _has("neon", target) or triple.startswith(("aarch64", "arm64")):
                return "asimd"
        return "llvm"
    if name == "cuda":
        arch = str(target.attrs.get("arch", "") or "")
        if arch.startswith("sm_") and arch[3:].isdigit() and int(arch[3:]) >= 75:
            return "cuda-tensorcore"
        return "cuda"
    if name in ("hexagon", "c"):
        return name
    if "gpu" in {str(k) for k in target.keys}:
        return "cuda"
    raise ValueError(f"MetaSchedule has no default rules for target kind {name!r} ({target})")


def default_rules(target: Any, mod: Any = None) -> DefaultRules:
    """Stock's schedule rules, postprocs and mutator probabilities for ``target``.

    Parameters
    ----------
    target : str | dict | Target
        msviz's shorthand (``"llvm"``: this machine's CPU) or any target.
    mod : IRModule, optional
        The workload the objects are initialised for (a small probe workload by default; pass
        the real one where an object's initialisation reads it).

    Returns
    -------
    rules : DefaultRules
        Fresh clones: callers may initialise them with their own ``TuneContext``.
    """
    target = make_target(target)
    key = str(target.export()) if hasattr(target, "export") else str(target)
    with _LOCK:
        found = _CACHE.get(key) if mod is None else None
        if found is None:
            space = ms.space_generator.PostOrderApply()
            ms.TuneContext(mod=mod if mod is not None else _probe_mod(), target=target,
                           space_generator=space, task_name="msviz-defaults", num_threads=1)
            found = DefaultRules(
                rule_kind(target),
                list(space.sch_rules),
                list(space.postprocs),
                {m: float(p) for m, p in space.mutator_probs.items()},
            )
            if mod is None:
                _CACHE[key] = found
    return DefaultRules(
        found.kind,
        [r.clone() for r in found.sch_rules],
        [p.clone() for p in found.postprocs],
        {m.clone(): p for m, p in found.mutator_probs.items()},
    )


def _probe_mod() -> Any:
    """A one-block workload: rule objects are initialised from the target, not the module."""
    global _PROBE_MOD
    if _PROBE_MOD is None:
        te = tvm.te
        a = te.placeholder((4,), name="A", dtype="float32")
        b = te.compute((4,), lambda i: a[i] + 1.0, name="B")
        _PROBE_MOD = tvm.IRModule({"main": te.create_prim_func([a, b])})
    return _PROBE_MOD
