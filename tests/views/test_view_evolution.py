"""evolution_info against generations written out by hand from a short event list."""

from __future__ import annotations

import math

from msviz.engine.events import Event
from msviz.views.evolution import EvolutionInfo, GenerationInfo, evolution_figure, evolution_info


def _events(*items: tuple[str, dict]) -> list[Event]:
    return [Event(k, kind, 1000.0 + k, "GMM-0", data) for k, (kind, data) in enumerate(items)]


EVENTS = _events(
    ("started", {"max_trials": 4}),
    ("initial_population", {"generation": 0, "from_database": 0, "fresh": 4,
                            "failures": {"postproc RewriteParallelVectorizeUnroll": 2}}),
    # iteration 0 scores the initial population: its failures were counted above
    ("generation", {"generation": 0, "iteration": 0, "scores": [0.1, 0.5, 0.2, 0.9],
                    "children": [["fresh", None, None, 0]] * 4, "failures": {}}),
    ("generation", {"generation": 0, "iteration": 1, "scores": [0.6, 0.7, 0.2, 0.9],
                    "children": [["mutated", 1, "MutateTileSize", 0],
                                 ["mutated", 3, "MutateUnroll", 0],
                                 ["kept", 2, None, 0],
                                 ["mutated", 3, "MutateTileSize", 0]],
                    # a child failing a postproc counts under the postproc only
                    "failures": {"postproc RewriteParallelVectorizeUnroll": 1,
                                 "mutator MutateComputeLocation": 3}}),
    ("picked", {"generation": 0, "by_score": 1, "by_random": 1,
                "candidates": [{"predicted_score": 0.9}, {"predicted_score": None}]}),
    ("measured", {"batch": 0, "trials": [{"latency_us": 12.5}, {"latency_us": None}]}),
    ("initial_population", {"generation": 1, "from_database": 2, "fresh": 2, "failures": {}}),
)


def test_generations(same) -> None:
    expected = EvolutionInfo((
        GenerationInfo(
            0, "GMM-0", {"from_database": 0, "fresh": 4},
            ((0, (0.1, 0.5, 0.2, 0.9)), (1, (0.6, 0.7, 0.2, 0.9))),
            {"MutateTileSize": 2, "MutateUnroll": 1},
            (("mutated", 1, "MutateTileSize", 0), ("mutated", 3, "MutateUnroll", 0),
             ("kept", 2, None, 0), ("mutated", 3, "MutateTileSize", 0)),
            1, 1, (0.9, math.nan), (12.5, None),
            {"postproc RewriteParallelVectorizeUnroll": 3, "mutator MutateComputeLocation": 3},
            (("initial population", {"postproc RewriteParallelVectorizeUnroll": 2}),
             ("iteration 1", {"postproc RewriteParallelVectorizeUnroll": 1,
                              "mutator MutateComputeLocation": 3})),
        ),
        GenerationInfo(1, "GMM-0", {"from_database": 2, "fresh": 2}, (), {}, (), 0, 0, (), (),
                       {}, ()),
    ))
    assert same(evolution_info(EVENTS), expected)


def test_no_events() -> None:
    assert evolution_info([]) == EvolutionInfo(())


def test_figure_and_empty_generation() -> None:
    first, second = evolution_info(EVENTS).generations
    fig = evolution_figure(first)
    assert [t.name for t in fig.data] == ["iter 0", "iter 1",
                                          "picked (1 by score, 1 random)"]
    assert "no genetic iteration" in evolution_figure(second).layout.annotations[0].text
