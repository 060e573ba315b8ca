"""An editable, printable set of schedule rules, postprocs and mutator probabilities.

``RuleSet.default("llvm")`` starts from MetaSchedule's own defaults for this machine's CPU (the
same rules, parameters and probabilities as MetaSchedule picks for the target: its VNNI rules on
an AVX-512 VNNI CPU, ``ScheduleRule.create("llvm")`` elsewhere). Edit it, print it,
and hand it to ``Session(rules=...)`` or ``session.set_rules(...)``::

    rules = RuleSet.default("llvm")
    rules.set("MultiLevelTiling", max_innermost_factor=16)
    rules.mutator_probs["MutateUnroll"] = 0.2
    rules.remove("RandomComputeLocation")

Invalid parameters raise :class:`RuleError`, naming the rule and the parameter.

The same concept one room down: :mod:`msviz.compat.rules` names TVM's defaults.
"""

from __future__ import annotations

import copy
import inspect
import math
from dataclasses import dataclass, field
from typing import Any

from msviz import compat
from msviz.errors import MsvizError
from msviz.space_generator import intrinsics

__all__ = ["RuleError", "RuleSet", "RuleSpec"]


class RuleError(MsvizError, ValueError):
    """A schedule rule, postproc or mutator that cannot be built as given."""


@dataclass
class RuleSpec:
    """One rule by class name and parameters, or a ready-made object (``obj``)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    obj: Any = None

    def __str__(self) -> str:
        if self.obj is not None and not self.params:
            return f"{self.name}(<object>)"
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({args})"


_LLVM_RULES = [
    ("ApplyCustomRule", {}),
    ("InlineConstantScalars", {}),
    ("AutoInline", {
        "into_producer": False, "into_consumer": True, "inline_const_tensor": True,
        "disallow_if_then_else": True, "require_injective": True, "require_ordered": True,
        "disallow_op": ["tirx.exp"],
    }),
    ("AddRFactor", {"max_jobs_per_core": 16, "max_innermost_factor": 64}),
    ("MultiLevelTiling", {
        "structure": "SSRSRS", "tile_binds": None, "max_innermost_factor": 64,
        "vector_load_lens": None, "reuse_read": None,
        "reuse_write": {"req": "may", "levels": [1, 2], "scope": "global"},
    }),
    ("ParallelizeVectorizeUnroll", {
        "max_jobs_per_core": 16, "max_vectorize_extent": 64,
        "unroll_max_steps": [0, 16, 64, 512], "unroll_explicit": True,
    }),
    ("RandomComputeLocation", {}),
]
_LLVM_POSTPROCS = [
    "DisallowDynamicLoop", "RewriteParallelVectorizeUnroll", "RewriteReductionBlock",
    "RewriteLayout",
]
_LLVM_MUTATORS = {
    "MutateTileSize": 0.9, "MutateComputeLocation": 0.05, "MutateUnroll": 0.03,
    "MutateParallel": 0.02,
}
_MUTATOR_PARAMS = {"MutateParallel": {"max_jobs_per_core": 16}}
#: The intrinsic of MetaSchedule's ``DefaultX86`` rules, by rule kind (``compat.rule_kind``).
_X86_INTRINS = {"vnni": "dot_16x4_vnni", "avx512": "dot_16x4_avx512"}

_POSITIVE_INT = {"max_innermost_factor", "max_jobs_per_core", "max_vectorize_extent"}


def _check_param(rule: str, name: str, value: Any) -> None:
    """msviz's own checks, so a bad value is named before TVM sees it."""
    def bad(why: str) -> RuleError:
        return RuleError(f"rule {rule}: parameter {name}={value!r} is invalid: {why}")

    if name in _POSITIVE_INT and value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or value <= 0
    ):
        raise bad("it must be a positive int")
    if name == "structure" and (
        not isinstance(value, str) or not value or set(value) - {"S", "R"}
    ):
        raise bad("it must be a non-empty string of 'S' and 'R', e.g. 'SSRSRS'")
    if name in ("unroll_max_steps", "vector_load_lens", "levels") and value is not None and (
        not isinstance(value, (list, tuple))
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    ):
        raise bad("it must be a list of ints >= 0")
    if name in ("reuse_read", "reuse_write") and value is not None:
        if not isinstance(value, dict) or set(value) != {"req", "levels", "scope"}:
            raise bad("it must be None or a dict with keys req, levels, scope")
        if value["req"] not in ("no", "may", "must"):
            raise bad("req must be 'no', 'may' or 'must'")
        _check_param(rule, "levels", value["levels"])


def _build(namespace: Any, spec: RuleSpec, kind: str) -> Any:
    if spec.obj is not None and not spec.params:
        return spec.obj
    cls = getattr(namespace, spec.name, None)
    if cls is None or not inspect.isclass(cls):
        raise RuleError(f"unknown {kind} {spec.name!r}")
    sig = inspect.signature(cls.__init__)
    known = [p for p in sig.parameters if p != "self"]
    unknown = sorted(set(spec.params) - set(known))
    if unknown:
        raise RuleError(
            f"{kind} {spec.name}: unknown parameter(s) {', '.join(unknown)}; "
            f"its parameters are: {', '.join(known) or 'none'}"
        )
    params = {}
    for name, value in spec.params.items():
        _check_param(spec.name, name, value)
        if name in ("reuse_read", "reuse_write") and isinstance(value, dict):
            value = compat.ms.schedule_rule.ReuseType(**value)
        params[name] = value
    try:
        return cls(**params)
    except Exception as err:
        raise RuleError(f"{kind} {spec.name}: invalid parameters {spec.params}: {err}") from None


def _validate_rule(spec: RuleSpec) -> None:
    """Build a rule now to name a bad parameter; a tensorizing rule whose intrinsic does not
    exist is kept (the session leaves it out with a warning and tunes without it)."""
    intrin = intrinsics.intrin_of(spec)
    if intrin is not None and compat.tensor_intrin(intrin) is None:
        return
    _build_rule(spec)


def _build_rule(spec: RuleSpec) -> Any:
    """A schedule rule; msviz's ``keep_untensorized`` option wraps a tensorizing rule."""
    if spec.name == intrinsics.INTRIN_RULE and "keep_untensorized" in spec.params:
        params = dict(spec.params)
        keep = params.pop("keep_untensorized")
        rule = _build(compat.ms.schedule_rule, RuleSpec(spec.name, params, spec.obj), "rule")
        return intrinsics.keep_untensorized(rule) if keep else rule
    return _build(compat.ms.schedule_rule, spec, "rule")


class RuleSet:
    """Schedule rules, postprocs and mutator probabilities for a design-space generator.

    Parameters
    ----------
    schedule_rules : list of RuleSpec | ScheduleRule
        In order of application.
    postprocs : list of RuleSpec | Postproc
        In order of application.
    mutator_probs : dict[str, float]
        Mutator class name -> probability (normalized by the search).
    """

    def __init__(
        self,
        schedule_rules: list[Any],
        postprocs: list[Any],
        mutator_probs: dict[str, float],
    ) -> None:
        self.schedule_rules = [self._spec(r) for r in schedule_rules]
        self.postprocs = [self._spec(p) for p in postprocs]
        self.mutator_probs = dict(mutator_probs)
        self.mutator_params = copy.deepcopy(_MUTATOR_PARAMS)
        #: Why rules were left out by the last :meth:`build` (unusable tensor intrinsics).
        self.skipped: list[str] = []

    @staticmethod
    def _spec(item: Any) -> RuleSpec:
        if isinstance(item, RuleSpec):
            return item
        if isinstance(item, str):
            return RuleSpec(item)
        return RuleSpec(type(item).__name__, obj=item)

    @classmethod
    def default(cls, target: Any = "llvm") -> RuleSet:
        """MetaSchedule's default rules, postprocs and mutators for a target.

        Parameters
        ----------
        target : str | dict | Target
            The rule kind is the one stock's ``TuneContext`` derives from the whole target
            (:func:`msviz.compat.rule_kind`). An x86 CPU gives editable specs: MetaSchedule's
            CPU rules, plus its tensorizing rule and ``RewriteTensorize`` for
            ``dot_16x4_vnni`` on an AVX-512 VNNI or AVX-VNNI CPU and ``dot_16x4_avx512`` on
            other AVX-512BW CPUs (``DefaultX86``; msviz's one addition, ``keep_untensorized``,
            also keeps the untensorized space of a block the intrinsic fits). ``"llvm"`` means
            this machine's CPU, as in ``Session`` and ``msviz tune``, so it shows the space a
            session searches here; name a CPU (``{"kind": "llvm", "mcpu":
            "skylake-avx512"}``) for another. Other kinds (CUDA, tensor cores from ``sm_75``,
            Arm, RISC-V, Hexagon) hold MetaSchedule's own default objects
            (:func:`msviz.compat.default_rules`), which can be removed or reordered but not
            re-parameterized.
        """
        target = compat.make_target(target)
        kind = compat.rule_kind(target)
        intrin = _X86_INTRINS.get(kind)
        if kind == "llvm" or intrin is not None:
            out = cls(
                [RuleSpec(n, copy.deepcopy(p)) for n, p in _LLVM_RULES],
                list(_LLVM_POSTPROCS),
                dict(_LLVM_MUTATORS),
            )
            if intrin is not None:  # MetaSchedule's DefaultX86 rules and CPU tensorization
                (rule, rparams), (post, pparams) = intrinsics.tensorize_specs(intrin)
                out.schedule_rules.insert(
                    [s.name for s in out.schedule_rules].index("MultiLevelTiling"),
                    RuleSpec(rule, rparams))
                out.postprocs.insert(
                    [s.name for s in out.postprocs].index("RewriteReductionBlock") + 1,
                    RuleSpec(post, pparams))
            return out
        stock = compat.default_rules(target)
        return cls(stock.sch_rules, stock.postprocs,
                   {type(m).__name__: p for m, p in stock.mutator_probs.items()})

    def copy(self) -> RuleSet:
        """An independent copy (rule objects are shared)."""
        out = RuleSet([], [], dict(self.mutator_probs))
        out.schedule_rules = [RuleSpec(s.name, copy.deepcopy(s.params), s.obj)
                              for s in self.schedule_rules]
        out.postprocs = [RuleSpec(s.name, copy.deepcopy(s.params), s.obj) for s in self.postprocs]
        out.mutator_params = copy.deepcopy(self.mutator_params)
        return out

    def _find(self, rule: str | int) -> RuleSpec:
        if isinstance(rule, int):
            return self.schedule_rules[rule]
        hits = [s for s in self.schedule_rules if s.name == rule]
        if not hits:
            names = ", ".join(s.name for s in self.schedule_rules)
            raise RuleError(f"no schedule rule {rule!r} in this RuleSet; rules: {names}")
        return hits[0]

    def set(self, rule: str | int, **params: Any) -> RuleSet:
        """Change parameters of a schedule rule (by class name or index); returns self."""
        spec = self._find(rule)
        if spec.obj is not None and not spec.params:
            raise RuleError(
                f"rule {spec.name} is a ready-made object; replace it instead of editing it"
            )
        new = RuleSpec(spec.name, {**spec.params, **params})
        _validate_rule(new)
        spec.params = new.params
        return self

    def remove(self, rule: str | int) -> RuleSet:
        """Drop a schedule rule (by class name or index); returns self."""
        self.schedule_rules.remove(self._find(rule))
        return self

    def insert(self, index: int, rule: Any, **params: Any) -> RuleSet:
        """Insert a schedule rule: a class name with parameters, or a ScheduleRule object."""
        spec = RuleSpec(rule, dict(params)) if isinstance(rule, str) else self._spec(rule)
        _validate_rule(spec)
        self.schedule_rules.insert(index, spec)
        return self

    def build(self, target: Any = None, *, lazy_intrins: bool = False,
              ) -> tuple[list[Any], list[Any], dict[Any, float]]:
        """MetaSchedule objects: (schedule rules, postprocs, {mutator: probability}).

        A tensorizing rule whose intrinsic does not exist (or, given ``target``, needs a CPU
        feature the target lacks) is left out; :attr:`skipped` then says why.

        Raises
        ------
        RuleError
            Naming the rule and parameter that is invalid.
        """
        ms = compat.ms
        self.skipped = []
        rules = []
        for s in self.schedule_rules:
            intrin = intrinsics.intrin_of(s)
            if lazy_intrins and intrin in compat.INTRIN_FEATURES and not compat.intrins_ready():
                continue  # a stock intrinsic: checked by name, built once registered (15-30 s)
            why = intrinsics.unusable(intrin, target) if intrin is not None else None
            if why is not None:  # tune without it, and say why (shown as a warning event)
                self.skipped.append(why)
                continue
            rules.append(_build_rule(s))
        postprocs = [_build(ms.postproc, s, "postproc") for s in self.postprocs]
        mutators: dict[Any, float] = {}
        for name, prob in self.mutator_probs.items():
            if isinstance(prob, bool) or not isinstance(prob, (int, float)) or not (
                math.isfinite(prob) and prob >= 0
            ):
                raise RuleError(f"mutator {name}: probability {prob!r} must be a number >= 0")
            spec = RuleSpec(name, dict(self.mutator_params.get(name, {})))
            mutators[_build(ms.mutator, spec, "mutator")] = float(prob)
        return rules, postprocs, mutators

    def intrinsics(self) -> list[str]:
        """The tensor intrinsics the rules tile for (``MultiLevelTilingWithIntrin``)."""
        return [i for i in map(intrinsics.intrin_of, self.schedule_rules) if i is not None]

    def validate(self) -> RuleSet:
        """Build everything once; raises :class:`RuleError` if anything is invalid.

        Rules for MetaSchedule's own tensor intrinsics are checked by name only while TVM's
        intrinsics are not yet registered (registering them takes 15-30 s; the tuner's thread
        does it), so a Session starts at once."""
        self.build(lazy_intrins=True)
        return self

    def space_generator(self, target: Any = None) -> Any:
        """A ``PostOrderApply`` space generator using these rules (see :meth:`build`)."""
        rules, postprocs, mutators = self.build(target)
        return compat.ms.space_generator.PostOrderApply(
            sch_rules=rules, postprocs=postprocs, mutator_probs=mutators
        )

    def __str__(self) -> str:
        lines = ["RuleSet", "  schedule rules:"]
        lines += [f"    [{i}] {s}" for i, s in enumerate(self.schedule_rules)]
        lines.append("  postprocs:")
        lines += [f"    [{i}] {s}" for i, s in enumerate(self.postprocs)]
        lines.append("  mutator probabilities:")
        lines += [f"    {n}: {p:g}" for n, p in self.mutator_probs.items()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"RuleSet(rules=[{', '.join(s.name for s in self.schedule_rules)}], "
            f"postprocs={len(self.postprocs)}, mutators={self.mutator_probs})"
        )
