"""Plot infos against ones written out by hand: every-trial scatter, cost model (rank
correlation with ties), decisions, task bars."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from msviz.views import plots as P
from tests.conftest import require

NAN = math.nan


def test_scatter_by_status(trials, same) -> None:
    expected = P.TrialScatterInfo(
        "status", (("ok", (0, 2, 4, 5), (100.0, 50.0, 80.0, 40.0)),),
        (("build_error", (1,)), ("infra_error", (3,))),
    )
    assert same(P.trial_scatter_info(trials), expected)


def test_scatter_by_generation(trials, same) -> None:
    expected = P.TrialScatterInfo(
        "generation", (("0", (0, 2), (100.0, 50.0)), ("1", (4, 5), (80.0, 40.0))),
        (("build_error", (1,)), ("infra_error", (3,))),
    )
    assert same(P.trial_scatter_info(trials, color_by="generation"), expected)


def test_scatter_figure_draws_failures_apart(trials) -> None:
    fig = P.trial_scatter_figure(P.trial_scatter_info(trials))
    assert [(t.type, t.name, tuple(t.x)) for t in fig.data] == [
        ("scatter", "status=ok", (0, 2, 4, 5)), ("scatter", "failed", (1,)),
        ("scatter", "infrastructure failure", (3,))]
    assert tuple(fig.data[1].y) == (40.0,)  # on the floor: the fastest latency
    # 40..100 µs: round ticks at 1, 2, 5 x 10^k, not every digit
    assert fig.layout.yaxis.type == "log" and list(fig.layout.yaxis.tickvals) == [50.0, 100.0]
    assert list(fig.layout.yaxis.ticktext) == ["50", "100"]


def test_scatter_bad_column_is_named(trials) -> None:
    with pytest.raises(ValueError, match="'colour'"):
        P.trial_scatter_info(trials, color_by="colour")


#: batch 0: scores with a tie; batch 1: one prediction missing and one failed trial.
COST = pd.DataFrame({
    "batch": [0, 0, 0, 0, 1, 1, 1, 1],
    "predicted_score": [0.1, 0.4, 0.4, 0.9, 0.2, 0.3, NAN, 0.8],
    "gflops": [1.0, 3.0, 2.0, 5.0, 4.0, 1.0, 2.0, NAN],
})


def test_cost_model_rank_correlation_with_ties(same) -> None:
    # batch 0, average ranks: scores (1, 2.5, 2.5, 4), GFLOPS (1, 3, 2, 4);
    #   Pearson of the ranks = 4.5 / sqrt(4.5 * 5) = sqrt(0.9).
    # batch 1 keeps (0.2, 4.0) and (0.3, 1.0): opposite order, -1.
    # all six: scores ranked (1, 4.5, 4.5, 6, 2, 3), GFLOPS (1.5, 4, 3, 6, 5, 1.5), both
    #   with mean 3.5: sum of products 10, sums of squares 17 and 17, so 10 / 17.
    expected = P.CostModelInfo((
        P.BatchPrediction(0, (0.1, 0.4, 0.4, 0.9), (1.0, 3.0, 2.0, 5.0), math.sqrt(0.9)),
        P.BatchPrediction(1, (0.2, 0.3), (4.0, 1.0), -1.0),
    ), 10 / 17)
    assert same(P.cost_model_info(COST), expected)


def test_rank_correlation_follows_scipy() -> None:
    stats = require("scipy.stats", "xgboost's dependency scipy")
    ok = COST.dropna()
    rho = stats.spearmanr(ok["predicted_score"], ok["gflops"]).statistic
    assert rho == pytest.approx(10 / 17) and P.cost_model_info(COST).spearman == \
        pytest.approx(rho)


def test_cost_model_undefined_correlation_is_nan(same) -> None:
    flat = pd.DataFrame({"batch": [0, 0], "predicted_score": [0.5, 0.5], "gflops": [1.0, 2.0]})
    expected = P.CostModelInfo((P.BatchPrediction(0, (0.5, 0.5), (1.0, 2.0), NAN),), NAN)
    assert same(P.cost_model_info(flat), expected)


def test_cost_model_without_predictions_says_why(trials) -> None:
    stock = trials.drop(columns=["predicted_score", "batch"])
    with pytest.warns(Warning, match="no cost-model predictions"):
        info = P.cost_model_info(stock)
    assert info.batches == () and math.isnan(info.spearman)
    fig = P.cost_model_figure(info)
    assert fig.data == () and "no cost-model scores yet" in fig.layout.annotations[0].text


def test_decisions(same) -> None:
    frame = pd.DataFrame({
        "trial": [3, 7], "latency_us": [10.0, 20.0],
        "#4 SamplePerfectTile": ["[4, 8]", "[2, 16]"], "#9 SampleCategorical": ["512", "64"],
    })
    expected = P.DecisionPlotInfo(
        ("#4 SamplePerfectTile", "#9 SampleCategorical"),
        (("[4, 8]", "[2, 16]"), ("512", "64")), (10.0, 20.0), (3, 7))
    assert same(P.decision_plot_info(frame), expected)
    (par,) = P.decision_plot_figure(P.decision_plot_info(frame)).data
    assert [d.label for d in par.dimensions] == ["#4 tile", "#9 categorical", "latency (µs)"]
    # axes ordered by value, not as text ("64" before "512", "[2, 16]" before "[4, 8]")
    assert par.dimensions[0].ticktext == ("[2, 16]", "[4, 8]")
    assert par.dimensions[0].values == (1, 0)
    assert par.dimensions[1].ticktext == ("64", "512") and par.dimensions[1].values == (1, 0)


def test_decisions_empty_says_why() -> None:
    info = P.decision_plot_info(pd.DataFrame({"trial": [], "latency_us": []}))
    assert info == P.DecisionPlotInfo((), (), (), ())
    fig = P.decision_plot_figure(info)
    assert "no successful trial" in fig.layout.annotations[0].text


def test_task_bars(same) -> None:
    tasks = pd.DataFrame({"task": ["A", "B", "C"], "weight": [1.0, NAN, 3.0],
                          "best_latency_us": [10.0, 20.0, NAN], "trials": [4, 2, 1]})
    expected = P.TaskBarsInfo(("A", "B", "C"), (10.0, 20.0, NAN), (10.0, 20.0, NAN), (4, 2, 1))
    assert same(P.task_bars_info(tasks), expected)
    tasks["weight"] = [2.0, 0.5, 3.0]
    expected = P.TaskBarsInfo(("A", "B", "C"), (10.0, 20.0, NAN), (20.0, 10.0, NAN), (4, 2, 1))
    assert same(P.task_bars_info(tasks), expected)


def test_cost_model_figure_is_one_trace_coloured_by_batch() -> None:
    fig = P.cost_model_figure(P.cost_model_info(COST))
    (trace,) = fig.data
    assert tuple(trace.x) == (0.1, 0.4, 0.4, 0.9, 0.2, 0.3)
    assert tuple(trace.y) == (1.0, 3.0, 2.0, 5.0, 4.0, 1.0)
    assert tuple(trace.marker.color) == (0, 0, 0, 0, 1, 1)
    # one colour band per batch, the ticks at the batch numbers (not 0, 0.2, ... 1)
    marker = trace.marker
    assert list(marker.colorbar.tickvals) == [0, 1] and list(marker.colorbar.ticktext) == \
        ["0", "1"]
    assert (marker.cmin, marker.cmax) == (-0.5, 1.5)
    assert [tuple(c) for c in marker.colorscale] == [
        (0.0, "rgb(68, 1, 84)"), (0.5, "rgb(68, 1, 84)"),
        (0.5, "rgb(253, 231, 37)"), (1.0, "rgb(253, 231, 37)")]
    assert tuple(trace.customdata)[3:5] == (pytest.approx(math.sqrt(0.9)), -1.0)  # rho
    assert fig.layout.title.text == "Cost model (rho 0.59; batch 1: -1.00)"


def test_batch_correlations_match_one_batch_at_a_time() -> None:
    # many batches with ties, constant batches and single trials: each batch's rho equals
    # the rank correlation computed on that batch alone
    rng = pd.Series(range(589)).sample(frac=1.0, random_state=3).to_numpy()
    frame = pd.DataFrame({
        "batch": [int(i) // 7 for i in range(589)],
        "predicted_score": [float(v % 5) for v in rng],
        "gflops": [float(v % 11) if i % 70 else 1.0 for i, v in enumerate(rng)],
    })
    frame.loc[frame["batch"] == 3, "predicted_score"] = 0.5  # constant scores: no rho
    info = P.cost_model_info(frame)  # 84 batches of 7, and batch 84 with a single trial
    assert len(info.batches) == 85 and len(info.batches[-1].predicted) == 1
    for b in info.batches:
        alone = frame[frame["batch"] == b.batch]
        expected = P._spearman(alone["predicted_score"], alone["gflops"])
        assert (math.isnan(b.spearman) and math.isnan(expected)) or \
            b.spearman == pytest.approx(expected, abs=1e-12), b.batch
    assert math.isnan(info.batches[3].spearman) and math.isnan(info.batches[-1].spearman)


def test_cost_model_colour_bar_has_a_band_per_batch() -> None:
    gaps = pd.DataFrame({"batch": [2, 3, 3, 6], "predicted_score": [0.1, 0.2, 0.3, 0.4],
                         "gflops": [1.0, 2.0, 3.0, 4.0]})
    marker = P.cost_model_figure(P.cost_model_info(gaps)).data[0].marker
    assert list(marker.colorbar.tickvals) == [2, 3, 6]
    assert (marker.cmin, marker.cmax) == (1.5, 6.5)
    # bands from halfway to the previous batch number to halfway to the next one
    assert [round(c[0], 12) for c in marker.colorscale] == [0.0, 0.2, 0.2, 0.6, 0.6, 1.0]
    assert len({c[1] for c in marker.colorscale}) == 3
    many = pd.DataFrame({"batch": range(45), "predicted_score": 0.5, "gflops": 1.0})
    marker = P.cost_model_figure(P.cost_model_info(many)).data[0].marker
    assert list(marker.colorbar.tickvals) == list(range(0, 45, 3))  # at most 20 numbers
    # above 40 batches no bands (a hair's width each): a continuous scale over the numbers
    assert (marker.cmin, marker.cmax) == (0, 44)
    assert marker.colorscale[0][1] == "#440154"  # Viridis, not 90 band edges
    assert len(marker.colorscale) < 20


def test_cost_model_with_no_scored_success_is_empty(same) -> None:
    failed = COST.assign(gflops=NAN)
    assert same(P.cost_model_info(failed), P.CostModelInfo((), NAN))


def test_cost_model_batches_of_several_tasks(same) -> None:
    """A model's tasks number their own batches: a batch is (task, batch), in run order (batch
    0 of A and batch 0 of B are two batches, not one of 4 trials)."""
    frame = pd.DataFrame({
        "task": ["A", "A", "B", "B", "A", "A"], "batch": [0, 0, 0, 0, 1, 1],
        "predicted_score": [0.1, 0.2, 0.3, 0.4, 0.6, 0.5],
        "gflops": [1.0, 2.0, 4.0, 3.0, 5.0, 6.0]})
    info = P.cost_model_info(frame)
    expected = P.CostModelInfo((
        P.BatchPrediction(0, (0.1, 0.2), (1.0, 2.0), 1.0, "A"),
        P.BatchPrediction(1, (0.3, 0.4), (4.0, 3.0), -1.0, "B"),
        P.BatchPrediction(2, (0.6, 0.5), (5.0, 6.0), -1.0, "A"),
    ), 31 / 35)
    # by hand: ranks of the predictions 1 2 3 4 6 5, of the GFLOPS 1 2 4 3 5 6; the squared
    # rank differences add up to 4, so rho = 1 - 6 * 4 / (6 * (36 - 1)) = 31/35
    assert same(info, expected)
    assert P.cost_model_info(frame.drop(columns="task")).spearman == pytest.approx(31 / 35)
    # ranks, not values (the GFLOPS above are their own ranks): cubing the GFLOPS and
    # scaling the scores by exp keeps every order, so every rho stays as worked out above,
    # where Pearson's r of the cubes would be another number
    warped = frame.assign(gflops=frame["gflops"] ** 3,
                          predicted_score=[math.exp(10 * s) for s in frame["predicted_score"]])
    info = P.cost_model_info(warped)
    assert info.spearman == pytest.approx(31 / 35)
    assert [b.spearman for b in info.batches] == [1.0, -1.0, -1.0]
    info = P.cost_model_info(frame)
    fig = P.cost_model_figure(info)
    assert fig.data[0].marker.colorbar.title.text == "batch of the run"
    assert tuple(fig.data[0].marker.color) == (0, 0, 1, 1, 2, 2)
