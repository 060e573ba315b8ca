"""Evolutionary search, generation by generation, from a session's events.

The same concept in the engine: :mod:`msviz.engine.search.evolution` is the search."""

from __future__ import annotations

from collections import Counter
from typing import Any, NamedTuple

from msviz.views._plotly_imports import go
from msviz.views.common import note_figure

__all__ = ["EvolutionInfo", "GenerationInfo", "evolution_info"]


class GenerationInfo(NamedTuple):
    """One generation of the search: population scores, mutations, the pick, the measurements."""

    generation: int
    task: str
    initial: dict  # from_database, fresh counts
    iterations: tuple[tuple[int, tuple[float, ...]], ...]  # (iteration, predicted scores)
    mutations: dict  # mutator -> children it made (over all iterations)
    lineage: tuple[tuple[str, Any, Any, Any], ...]  # (origin, parent, mutator, design space)
    by_score: int
    by_random: int
    picked_scores: tuple[float, ...]
    measured_us: tuple[float | None, ...]  # latency of each measured pick (None: failed)
    failures: dict  # what failed -> count, over the generation's stages
    stage_failures: tuple[tuple[str, dict], ...] = ()  # ("initial population" | "iteration k",
    #                                                     its own failures), stages with any


class EvolutionInfo(NamedTuple):
    """All generations seen so far."""

    generations: tuple[GenerationInfo, ...]


def evolution_info(events: list) -> EvolutionInfo:
    """Fold ``initial_population``, ``generation``, ``picked`` and ``measured`` events into one
    :class:`GenerationInfo` per generation.

    Each stage's event counts the failures that happened in that stage only (a mutated child
    that fails a postproc counts under the postproc), so a generation's failures are the sum
    over its ``initial_population`` and ``generation`` events.

    Parameters
    ----------
    events : list of Event
        ``session.events`` (or any slice of it).
    """
    gens: dict[int, dict] = {}
    last_gen: int | None = None
    for event in events:
        data = event.data
        if event.kind in ("initial_population", "generation", "picked"):
            g = int(data.get("generation", 0))
            last_gen = g
            cur = gens.setdefault(g, {
                "task": event.task, "initial": {}, "iterations": [], "mutations": Counter(),
                "lineage": [], "by_score": 0, "by_random": 0, "picked": [], "measured": [],
                "failures": Counter(), "stages": [],
            })
            if event.kind == "initial_population":
                cur["initial"] = {"from_database": data.get("from_database", 0),
                                  "fresh": data.get("fresh", 0)}
            elif event.kind == "generation":
                cur["iterations"].append(
                    (int(data.get("iteration", 0)), tuple(data.get("scores", ()))))
                children = [tuple(c) for c in data.get("children", ())]
                cur["lineage"] = children
                cur["mutations"].update(c[2] for c in children if c[2])
            else:
                cur["by_score"] = int(data.get("by_score", 0))
                cur["by_random"] = int(data.get("by_random", 0))
                cur["picked"] = [c.get("predicted_score") for c in data.get("candidates", ())]
            if event.kind != "picked" and data.get("failures"):
                stage = ("initial population" if event.kind == "initial_population"
                         else f"iteration {int(data.get('iteration', 0))}")
                cur["failures"].update(data["failures"])
                cur["stages"].append((stage, dict(data["failures"])))
        elif event.kind == "measured" and last_gen is not None:
            for row in data.get("trials", ()):
                latency = row.get("latency_us") if isinstance(row, dict) else None
                gens[last_gen]["measured"].append(latency)
    return EvolutionInfo(tuple(
        GenerationInfo(
            g, cur["task"], cur["initial"], tuple(cur["iterations"]), dict(cur["mutations"]),
            tuple(cur["lineage"]), cur["by_score"], cur["by_random"],
            tuple(float("nan") if s is None else float(s) for s in cur["picked"]),
            tuple(cur["measured"]), dict(cur["failures"]), tuple(cur["stages"]),
        )
        for g, cur in sorted(gens.items())
    ))


def evolution_figure(info: GenerationInfo) -> Any:
    """Predicted-score distribution of each genetic iteration of one generation (box plots)."""
    fig = go.Figure([
        go.Box(y=list(scores), name=f"iter {it}", boxpoints=False)
        for it, scores in info.iterations
    ])
    if info.picked_scores:
        fig.add_trace(go.Scatter(
            x=["picked"] * len(info.picked_scores), y=list(info.picked_scores), mode="markers",
            name=f"picked ({info.by_score} by score, {info.by_random} random)"))
    fig.update_layout(title=f"Generation {info.generation}: predicted scores",
                      yaxis_title="Predicted score", height=340,
                      margin={"l": 60, "r": 20, "t": 50, "b": 40})
    if not info.iterations and not info.picked_scores:
        note_figure(fig, "no genetic iteration of this generation yet")
    return fig
