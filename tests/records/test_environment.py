"""The environment line's pieces: the rules' JSON form and which facts of two environments
differ (the sidecar line a session writes is tested on a tuned run in
tests/engine/test_reproduce.py)."""

from __future__ import annotations

import json

from msviz.records.environment import environment_differences, rules_from_json, rules_to_json
from msviz.space_generator import RuleSet


def test_rules_survive_json() -> None:
    rules = RuleSet.default({"kind": "llvm", "num-cores": 2}).set("MultiLevelTiling",
                                                                  max_innermost_factor=16)
    rules.remove("AddRFactor")
    rules.mutator_probs["MutateUnroll"] = 0.5
    data = json.loads(json.dumps(rules_to_json(rules)))
    again = rules_from_json(data)
    assert str(again) == str(rules)
    assert [s.params for s in again.schedule_rules] == [s.params for s in rules.schedule_rules]
    assert data["schedule_rules"][3] == {"name": "MultiLevelTiling", "params": {
        "structure": "SSRSRS", "tile_binds": None, "max_innermost_factor": 16,
        "vector_load_lens": None, "reuse_read": None,
        "reuse_write": {"req": "may", "levels": [1, 2], "scope": "global"}}}


def test_vnni_rules_survive_json() -> None:
    rules = RuleSet.default({"kind": "llvm", "mcpu": "cascadelake", "num-cores": 2})
    data = json.loads(json.dumps(rules_to_json(rules)))
    again = rules_from_json(data)
    assert str(again) == str(rules) and again.intrinsics() == ["dot_16x4_vnni"]
    assert data["postprocs"][3] == {"name": "RewriteTensorize",
                                    "params": {"vectorize_init_loop": True}}


def _env(**host: object) -> dict:
    return {"versions": {"msviz": "0.1.0", "tvm": "0.27.0", "tvm_ffi": "0.1.14", "llvm": "22",
                         "python": "3.11.7"},
            "host": {"cpu": "AMD EPYC", "mcpu": "znver3", "features": ["avx2", "fma", "sse2"],
                     "cores": 2, "machine": "x86_64", **host}}


def test_equal_environments_have_no_differences() -> None:
    assert environment_differences(_env(), _env()) == []


def test_differences_name_each_fact_and_the_features_on_each_side() -> None:
    here = _env(cpu="Intel Xeon", mcpu="emeraldrapids", cores=8,
                features=["avx2", "avx512f", "sse2"])
    here["versions"]["tvm"] = "0.28.0"
    assert environment_differences(_env(), here) == [
        ("TVM version", "0.27.0", "0.28.0"),
        ("CPU", "AMD EPYC", "Intel Xeon"),
        ("LLVM CPU (mcpu)", "znver3", "emeraldrapids"),
        ("cores", 2, 8),
        ("CPU features", ["fma"], ["avx512f"]),
    ]
