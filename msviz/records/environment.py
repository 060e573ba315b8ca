"""Where a run was tuned: the environment line of the sidecar, and how two environments differ.

Every msviz session writes, when its tuning starts (and again when a work dir is resumed), one
sidecar line ``{"kind": "environment", ...}`` with what it takes to reproduce the run elsewhere::

    {"v": 1, "kind": "environment", "timestamp": "...",
     "versions": {"msviz": "0.1.0", "tvm": "0.27.0.post1", "tvm_ffi": "0.1.14.post1",
                  "llvm": "22", "python": "3.12.3"},
     "host": {"cpu": "AMD EPYC", "mcpu": "znver4", "features": ["avx2", ...], "cores": 2,
              "logical_cpus": 2, "machine": "x86_64", "os": "Linux-6.8..."},
     "target": {"kind": "llvm", "mcpu": "znver4", "num-cores": 2, ...},
     "seed": 1, "preset": "msviz", "knobs": {...}, "strategy": "evolutionary",
     "rules": {"schedule_rules": [{"name": "AutoInline", "params": {...}}, ...],
               "postprocs": [...], "mutator_probs": {...}, "mutator_params": {...}},
     "max_trials": 8, "trials_per_batch": 4, "max_trials_per_task": null,
     "task_scheduler": "gradient", "check": "best", "evaluator_config": {...},
     "workload": {"name": "GMM-0", "source": "GMM-0"}, "model": null, "first_line": 1}

``first_line`` is the first database record line made in this environment: rules set while
tuning (``session.set_rules``) write a new line from the next record on, so each record's rules
are those of the last line whose ``first_line`` is at most its own (``Run.environment_at``).
``workload`` is the PrimFunc a session tuned (null for a model), ``model`` the model (null for
one PrimFunc); their ``source`` names the catalogue entry it was built from (None for a user's
own program). :func:`rules_from_json` rebuilds the :class:`RuleSet`.

The same concept in the engine: :mod:`msviz.engine.environment` writes the line.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from msviz import compat
from msviz.records.sidecar import Sidecar
from msviz.space_generator.rules import RuleSet, RuleSpec
from msviz.version import __version__

__all__ = ["ENVIRONMENT_KIND", "environment", "environment_differences", "environments",
           "graph_summary",
           "host_facts", "other_architecture", "rules_from_json", "rules_to_json"]

#: The ``kind`` of the sidecar line.
ENVIRONMENT_KIND = "environment"


def _cpuinfo(path: str = "/proc/cpuinfo") -> tuple[str | None, list[str]]:
    """The CPU's model name and the flags the kernel reports (raw names, sorted)."""
    name, flags = None, []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if name is None and key in ("model name", "Model", "Hardware"):
                    name = value.strip()
                elif not flags and key in ("flags", "Features"):
                    flags = sorted(set(value.split()))
                if name is not None and flags:
                    break
    except OSError:
        pass
    return name, flags


def host_facts() -> dict[str, Any]:
    """Versions and CPU of this machine (the ``versions`` and ``host`` of an environment)."""
    name, flags = _cpuinfo()
    ffi_version = compat.tvm_ffi_version()
    llvm = compat.llvm_version()
    cpu = compat.host_cpu()
    return {
        "versions": {"msviz": __version__, "tvm": compat.tvm_version(), "tvm_ffi": ffi_version,
                     "llvm": llvm, "python": platform.python_version()},
        "host": {"cpu": name or platform.processor() or None, "mcpu": cpu.mcpu,
                 "features": flags or list(cpu.features), "cores": compat.host_cores(),
                 "logical_cpus": os.cpu_count(), "machine": platform.machine(),
                 "os": platform.platform()},
    }


def _spec_json(spec: RuleSpec) -> dict[str, Any]:
    return {"name": spec.name, "params": compat.to_jsonable(spec.params)}


def rules_to_json(rules: RuleSet) -> dict[str, Any]:
    """A RuleSet as plain JSON data (rules given as objects keep only their class name)."""
    return {
        "schedule_rules": [_spec_json(s) for s in rules.schedule_rules],
        "postprocs": [_spec_json(s) for s in rules.postprocs],
        "mutator_probs": {str(k): float(v) for k, v in rules.mutator_probs.items()},
        "mutator_params": compat.to_jsonable(rules.mutator_params),
    }


def rules_from_json(data: dict[str, Any]) -> RuleSet:
    """The RuleSet :func:`rules_to_json` wrote (a rule stored by class name only is rebuilt
    with MetaSchedule's defaults for that class)."""
    rules = RuleSet([RuleSpec(s["name"], dict(s.get("params") or {}))
                     for s in data.get("schedule_rules", [])],
                    [RuleSpec(s["name"], dict(s.get("params") or {}))
                     for s in data.get("postprocs", [])],
                    dict(data.get("mutator_probs", {})))
    if "mutator_params" in data:
        rules.mutator_params = dict(data["mutator_params"])
    return rules


def environment(*, target: Any, seed: int | None, preset: str, knobs: dict[str, Any],
                rules: RuleSet, strategy: str, max_trials: int, trials_per_batch: int,
                workload: dict[str, Any] | None, model: dict[str, Any] | None,
                **settings: Any) -> dict[str, Any]:
    """The environment of a session, as its sidecar line stores it (see the module's doc).

    Parameters
    ----------
    target : Target | dict
        What the session tunes for.
    seed, preset, knobs, rules, strategy, max_trials, trials_per_batch
        The session's settings.
    workload, model : dict | None
        ``{"name": ..., "source": <catalogue name or None>}``: the PrimFunc tuned (None for a
        model), or the model (None for one PrimFunc).
    **settings
        Further settings to keep (``max_trials_per_task``, ``task_scheduler``, ``check``,
        ``evaluator_config``), JSON-able.
    """
    if isinstance(target, compat.Target):
        target = target.export()
    return {
        **host_facts(),
        "target": compat.to_jsonable(target),
        "seed": seed, "preset": preset, "knobs": compat.to_jsonable(dict(knobs)),
        "strategy": strategy, "rules": rules_to_json(rules),
        "max_trials": max_trials, "trials_per_batch": trials_per_batch,
        **compat.to_jsonable(settings),
        "workload": None if workload is None else dict(workload),
        "model": None if model is None else dict(model),
    }


def graph_summary(environment: dict[str, Any] | None) -> str | None:
    """What the graph passes did to a model, as an environment line records it (None: the line
    does not say, e.g. one PrimFunc, a stock work dir or msviz before the expert graph)."""
    model = (environment or {}).get("model")
    report = model.get("graph_report") if isinstance(model, dict) else None
    summary = report.get("summary") if isinstance(report, dict) else None
    return summary if isinstance(summary, str) else None


def environments(sidecar: Sidecar) -> list[dict[str, Any]]:
    """The environment lines of a sidecar in order (the first started the run; one more per
    resume), without the line's ``v`` and ``kind``."""
    return [{k: v for k, v in e.items() if k not in ("v", "kind")}
            for e in sidecar.other if e.get("kind") == ENVIRONMENT_KIND]


#: The facts :func:`environment_differences` compares: (label, path in the environment).
COMPARED_FACTS = (
    ("msviz version", ("versions", "msviz")),
    ("TVM version", ("versions", "tvm")),
    ("tvm-ffi version", ("versions", "tvm_ffi")),
    ("LLVM version", ("versions", "llvm")),
    ("Python version", ("versions", "python")),
    ("CPU", ("host", "cpu")),
    ("LLVM CPU (mcpu)", ("host", "mcpu")),
    ("cores", ("host", "cores")),
    ("machine", ("host", "machine")),
)


def _at(env: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = env
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


#: Other names of one architecture (``platform.machine()`` and LLVM triples differ).
_ARCH_NAMES = {"amd64": "x86_64", "x86-64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def _arch(name: Any) -> str | None:
    """The architecture a ``machine`` or the first part of a target triple names."""
    if not isinstance(name, str) or not name.strip():
        return None
    name = name.strip().lower()
    arch = name if name in _ARCH_NAMES else name.split("-")[0]  # a triple: arch-vendor-os
    return _ARCH_NAMES.get(arch, arch)


def other_architecture(env: dict[str, Any] | None) -> str | None:
    """Why kernels a run was tuned for cannot run on this machine: the architecture its target
    (its ``mtriple``, else the machine it was tuned on) names is not this machine's; None when
    they are the same or one is unknown."""
    if not env:
        return None
    tuned_for = _arch(_at(env, ("target", "mtriple"))) or _arch(_at(env, ("host", "machine")))
    here = _arch(platform.machine())
    if tuned_for is None or here is None or tuned_for == here:
        return None
    return (f"its kernels were built for {tuned_for}, and this machine is {here}: they cannot "
            f"run here (re-time them on a {tuned_for} machine, or over RPC on one)")


def environment_differences(bundle: dict[str, Any], here: dict[str, Any]
                            ) -> list[tuple[str, Any, Any]]:
    """Which facts of two environments differ: ``(fact, in bundle, here)`` for each.

    CPU features are compared as sets: the values are the features only the bundle's CPU has
    and those only this one has (each a sorted list). The architecture of the bundle's target
    (its ``mtriple``) is compared with the other side's machine as well: a run tuned for
    another architecture is not "the same CPU" whatever its host line says.
    """
    out = [(label, _at(bundle, path), _at(here, path)) for label, path in COMPARED_FACTS
           if _at(bundle, path) != _at(here, path)]
    tuned_for = _arch(_at(bundle, ("target", "mtriple")))
    machine = _arch(_at(here, ("target", "mtriple"))) or _arch(_at(here, ("host", "machine")))
    if tuned_for is not None and machine is not None and tuned_for != machine:
        out.append(("target architecture", _at(bundle, ("target", "mtriple")), machine))
    theirs = set(_at(bundle, ("host", "features")) or [])
    mine = set(_at(here, ("host", "features")) or [])
    if theirs != mine:
        out.append(("CPU features", sorted(theirs - mine), sorted(mine - theirs)))
    return out

