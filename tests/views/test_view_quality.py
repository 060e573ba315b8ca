"""Time to quality (:mod:`msviz.views.quality`) against hand-worked curves."""

from __future__ import annotations

import math

import pytest

from msviz.errors import MsvizWarning
from msviz.records.quality import QualityBatch, model_estimate
from msviz.views.quality import (
    TimeToQualityInfo,
    time_to_quality_figure,
    time_to_quality_info,
    time_to_reach,
)

#: Three tasks in order, b called twice.
WEIGHTS = {"a": 1.0, "b": 2.0, "c": 1.0}
#: Five batches: a (one failure), b (all failed), b, a (no gain), c.
BATCHES = [
    QualityBatch(3.0, "a", 4, (12.0, 8.0)),
    QualityBatch(5.0, "b", 4, ()),
    QualityBatch(9.0, "b", 4, (15.0, 7.0)),
    QualityBatch(10.0, "a", 2, (9.0,)),
    QualityBatch(12.0, "c", 4, (6.0, 4.5)),
]


def test_untuned_tasks_count_at_their_untuned_time() -> None:
    # untuned: 10 + 2 x 20 + 5 = 55; then a's best 8: 8 + 40 + 5 = 53; b's failures change
    # nothing; b's best 7: 8 + 14 + 5 = 27; a's 9 is no gain; c's best 4.5: 8 + 14 + 4.5
    info = time_to_quality_info(WEIGHTS, BATCHES, {"a": 10.0, "b": 20.0, "c": 5.0},
                                name="hand", source="test")
    assert info == TimeToQualityInfo(
        "hand", (0.0, 3.0, 5.0, 9.0, 10.0, 12.0), (0, 4, 8, 12, 14, 18),
        (55.0, 53.0, 53.0, 27.0, 27.0, 26.5), (3, 2, 2, 1, 1, 0), 55.0, (), "test")
    assert time_to_reach(info, 27.0) == 9.0
    assert time_to_reach(info, 26.5) == 12.0
    assert time_to_reach(info, 26.0) is None


def test_a_task_without_an_untuned_time_leaves_the_estimate_unknown_until_tuned() -> None:
    info = time_to_quality_info(WEIGHTS, BATCHES, {"a": 10.0, "b": 20.0}, name="hand")
    # no starting point (the untuned model is unknown); NaN until c has a trial
    assert info.seconds == (3.0, 5.0, 9.0, 10.0, 12.0)
    assert info.trials == (4, 8, 12, 14, 18)
    assert [math.isnan(v) for v in info.estimate_us] == [True] * 4 + [False]
    assert info.estimate_us[-1] == 26.5
    assert info.untuned_tasks == (1, 1, 0, 0, 0)  # b until its batch at 9 s; c never had one
    assert (info.untuned_us, info.missing) == (None, ("c",))
    assert model_estimate(WEIGHTS, {"a": 1.0, "b": 1.0, "c": 1.0}, {}) == (4.0, 0)


def test_figure_draws_the_known_points_of_each_run() -> None:
    one = time_to_quality_info(WEIGHTS, BATCHES, {"a": 10.0, "b": 20.0, "c": 5.0}, name="one")
    two = time_to_quality_info(WEIGHTS, BATCHES, {"a": 10.0, "b": 20.0}, name="two")
    fig = time_to_quality_figure([one, two])
    assert [t.name for t in fig.data] == ["one", "two"]
    assert list(fig.data[0].x) == [0.0, 3.0, 5.0, 9.0, 10.0, 12.0]
    assert list(fig.data[0].y) == [55.0, 53.0, 53.0, 27.0, 27.0, 26.5]
    assert (list(fig.data[1].x), list(fig.data[1].y)) == ([12.0], [26.5])
    assert fig.layout.yaxis.title.text == "Estimated model latency (µs)"
    assert fig.layout.xaxis.title.text == "Wall time (s)"
    assert fig.layout.yaxis.type == "log"
    # "two" starts late (no untuned time for c): the figure says why, "one" needs no note
    assert [a.text for a in fig.layout.annotations] == [
        "two: no untuned time for 1 task(s) (none recorded), so the curve starts once every "
        "task has a trial"]
    # a stock run's curve (rebuilt from its logs) says where the missing times come from
    stock = time_to_quality_figure([one, two._replace(source="logs")])
    assert [a.text for a in stock.layout.annotations] == [
        "two: no untuned time for 1 task(s) (a stock work dir), so the curve starts once every "
        "task has a trial"]
    by_trial = time_to_quality_figure(one, x="trial")
    assert list(by_trial.data[0].x) == [0, 4, 8, 12, 14, 18]
    assert by_trial.layout.annotations == ()
    with pytest.raises(ValueError, match="x must be"):
        time_to_quality_figure(one, x="seconds")


def test_no_batch_yet_warns_and_the_figure_says_so() -> None:
    with pytest.warns(MsvizWarning, match="no measured batch"):
        info = time_to_quality_info(WEIGHTS, [], {"a": 1.0, "b": 1.0, "c": 1.0})
    assert info.seconds == (0.0,) and info.estimate_us == (4.0,)  # the untuned model only
    with pytest.warns(MsvizWarning):
        empty = time_to_quality_info(WEIGHTS, [], {})
    fig = time_to_quality_figure(empty)
    assert fig.layout.annotations[0].text == "no measured batch yet"
    assert fig.layout.title.text == "Time to quality"


def test_a_session_s_curve_carries_the_forecast_to_the_end_of_its_budget() -> None:
    from msviz.engine.events import Event
    from msviz.views.quality import events_quality_info

    def event(seq: int, kind: str, **data: object) -> Event:
        return Event(seq, kind, 1000.0 + seq, "m", data)

    events = [
        event(0, "started"), event(1, "tasks", tasks=[{"name": "a"}, {"name": "b"}]),
        event(2, "untuned", tasks=[{"name": "a", "untuned_us": 50.0},
                                   {"name": "b", "untuned_us": 30.0}]),
        event(3, "model_latency", started=1000.0, elapsed=4.0, trials=2, estimate_us=60.0,
              untuned_tasks=1, untuned_model_us=80.0),
        event(4, "forecast", seconds=4.5, at_budget={
            "horizon_s": 55.5, "now_us": 60.0, "mean_us": 40.0, "low_us": 31.0,
            "high_us": 52.0, "batches": [3, 2], "unknown": []}),
        event(5, "model_latency", started=1000.0, elapsed=8.0, trials=4, estimate_us=45.0,
              untuned_tasks=0, untuned_model_us=80.0),
        event(6, "forecast", seconds=8.2, at_budget={
            "horizon_s": 51.8, "now_us": 45.0, "mean_us": 36.0, "low_us": 30.0,
            "high_us": 41.0, "batches": [2, 2], "unknown": []}),
    ]
    info = events_quality_info(events)
    assert info == TimeToQualityInfo("m", (4.0, 8.0), (2, 4), (60.0, 45.0), (1, 0), 80.0, (),
                                     "session", (60.0, 36.0, 30.0, 41.0))  # the last: 8.2 + 51.8
    fig = time_to_quality_figure(info)
    _, forecast = fig.data
    assert forecast.name == "m: forecast at the end of the budget"
    assert list(forecast.x) == [8.0, 60.0] and list(forecast.y) == [45.0, 36.0]
    assert list(forecast.error_y.array) == [0, 5.0] and list(forecast.error_y.arrayminus) == [
        0, 6.0]
    assert [t.name for t in time_to_quality_figure(info, x="trial").data] == ["m"]
