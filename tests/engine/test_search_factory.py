"""Search strategies by name (msviz/engine/search/factory.py), as MetaSchedule's
``SearchStrategy.create``: each kind its class, an unknown one refused naming the choices."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from msviz import compat, workloads
from msviz.engine import search
from msviz.engine.search import EvolutionarySearch, ReplayTrace, SearchKnobs


@pytest.fixture(scope="module")
def context_and_spaces() -> tuple[Any, list]:
    """GMM-0's tune context and design spaces under MetaSchedule's llvm rules (msviz's own
    register TVM's tensor intrinsics first: tens of seconds)."""
    ms = compat.ms
    context = ms.TuneContext(
        mod=workloads.get("GMM-0").mod, target=compat.make_target({"kind": "llvm",
                                                                  "num-cores": 1}),
        space_generator=ms.space_generator.PostOrderApply(
            sch_rules="llvm", postprocs="llvm", mutator_probs="llvm"),
        task_name="GMM-0", rand_state=1, num_threads=1)
    return context, list(context.generate_design_space())


def test_each_kind_makes_its_strategy(context_and_spaces: tuple[Any, list]) -> None:
    context, spaces = context_and_spaces
    assert search.STRATEGIES == ("evolutionary", "replay")
    replay = search.create("replay", context, spaces, seed=3)
    try:
        assert type(replay) is ReplayTrace
    finally:
        replay.close()
    stages: list[str] = []

    @contextlib.contextmanager
    def timeit(stage: str) -> Any:
        stages.append(stage)
        yield

    evo = search.create("evolutionary", context, spaces, seed=3, knobs=SearchKnobs(),
                        timeit=timeit)
    try:
        assert type(evo) is EvolutionarySearch
        assert (evo.seed, evo.knobs, evo.database, evo.cost_model) == (3, SearchKnobs(), None,
                                                                       None)
        with evo.timeit("EvoSearch/Test"):
            pass
        assert stages == ["EvoSearch/Test"]
    finally:
        evo.close()


def test_an_unknown_kind_names_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown search strategy 'annealing': choose one of "
                                         "'evolutionary', 'replay'"):
        search.create("annealing", None, [], seed=1)
    with pytest.raises(TypeError, match="the evolutionary search needs knobs="):
        search.create("evolutionary", None, [], seed=1)
