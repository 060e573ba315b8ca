"""Differential tier: msviz's replay against stock MetaSchedule, exactly (issue 38).

Stock MetaSchedule generates the design spaces of small workloads for generic x86, AVX2,
AVX-512, VNNI and CUDA sm_70/sm_80/sm_90, samples decisions as its search does, and
materialises each sample (and the sample with one decision edited) as ``ThreadedTraceApply``
does; msviz's ``with_decisions`` must give the same module, trace and generated source
(tests/differential/harness.py). msviz's ``RuleSet.default`` must make stock's design space and
postprocess as stock does, and the compared schedules, stored as stock tuning records of their
target, must replay from msviz's reading to stock's module. Then every trial of a stock
``tune_tir`` work dir must replay to its stored module.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.differential import harness


@pytest.fixture(scope="module", autouse=True)
def _tensor_intrins() -> None:
    harness.setup()


@pytest.mark.parametrize(("target_name", "workload"), harness.CASES,
                         ids=[f"{t}-{w}" for t, w in harness.CASES])
def test_msviz_materialises_stock_samples_exactly(target_name: str, workload: str,
                                                  tmp_path: Path) -> None:
    if harness.TARGETS[target_name]["kind"] == "cuda" and harness.cuda_unavailable():
        pytest.skip(harness.cuda_unavailable())
    tally = harness.run_case(target_name, workload, work_dir=tmp_path / "records")
    harness.RESULTS.setdefault(target_name, harness.Tally()).add(tally)
    assert not tally.disagreements, harness.report(tally.disagreements)
    assert tally.compared > 0, f"every sample was rejected by stock's postprocs: {tally}"
    assert tally.stored == len(tally.stock_traces) > 0
    if (target_name, workload) in harness.TENSORIZED:
        assert tally.tensorized > 0, "no compared schedule uses a tensor intrinsic"


def tune_small_gmm(work_dir: Path, trials: int = 8) -> Path:
    """Stock ``tune_tir`` of a 32x32x32 batch matmul for this machine's CPU."""
    from msviz import compat, workloads

    ms = compat.ms
    compat.quiet_ipython_printing()
    compat.register_tensor_intrins()  # what a TuneContext imports, in seconds not a minute
    # tune_tir formats every handler name of MetaSchedule's logger; pytest's have none
    tvm_logger = logging.getLogger(ms.logging.__name__.rsplit(".", 1)[0])
    for handler in [h for h in tvm_logger.handlers if h.get_name() is None]:
        tvm_logger.removeHandler(handler)
    ms.tir_integration.tune_tir(
        workloads.get("GMM", shape=(1, 32, 32, 32)).mod,
        compat.make_target("llvm"),
        str(work_dir),
        max_trials_global=trials,
        num_trials_per_iter=trials,
        builder=compat.local_builder(),
        runner=ms.runner.LocalRunner(
            evaluator_config=ms.runner.EvaluatorConfig(number=1, repeat=1, min_repeat_ms=0)),
        strategy=ms.search_strategy.EvolutionarySearch(
            population_size=16, init_min_unmeasured=trials, genetic_num_iters=1),
        seed=1,
        num_tuning_cores=2,
    )
    return work_dir


@pytest.mark.slow
def test_every_stored_trial_replays_to_its_stored_module(tmp_path: Path) -> None:
    import msviz
    from msviz import compat
    from msviz.trace import with_decisions

    work_dir = tune_small_gmm(tmp_path / "gmm")
    # stock's reading of its own records: the module a TuningRecord stands for
    db = compat.ms.database.JSONDatabase(work_dir=str(work_dir))
    stock = {str(r.trace): r.as_measure_candidate().sch.mod
             for r in db.get_all_tuning_records()}
    run = msviz.open(work_dir)
    assert len(run.trials) == len(stock) == 8
    for i in range(len(run.trials)):
        trial = run.trial(i)
        want = stock[str(trial.trace)]
        replay = with_decisions(trial, {})
        assert str(replay.target) == str(trial.record.target), i
        assert compat.structural_equal(trial.mod, want), (
            f"trial {i}: " + harness.first_difference(want.script(), trial.mod.script()))
        assert compat.structural_equal(replay.mod, want), (
            f"trial {i}: " + harness.first_difference(want.script(), replay.mod.script()))
        assert replay.mod.script() == trial.mod.script(), i
        assert str(replay.trace) == str(trial.trace), (
            f"trial {i}: " + harness.first_difference(str(trial.trace), str(replay.trace)))
