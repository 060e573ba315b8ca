"""The model profile of the catalogue MLP tuned in a Session (real TVM): recorded after the
end-to-end check (timed in two draws, fresh processes), read back by
``msviz.open(...).model_profile()``, its rows the model's tasks with their weights as call
counts, a task whose records are removed shown as fallen back."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import msviz
from msviz import compat
from msviz.bench.model_profile import match_call
from msviz.engine import SessionStateError
from msviz.errors import MsvizError
from msviz.models import load
from msviz.records.model_profile import MODEL_PROFILE_COLUMNS
from msviz.records.sidecar import SIDECAR_FILE
from tests.engine.conftest import TINY, make_tiny_session

DTYPES = {"task": "string", "calls": "int64", "in_model_us": "float64",
          "in_model_max_us": "float64", "spread": "float64", "tuned_us": "float64",
          "ratio": "float64", "fallback": "bool", "flagged": "bool", "disputed": "bool"}
#: Draws (fresh processes) of the session's end-to-end check here: two, to keep the test short.
DRAWS = 2


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The catalogue MLP, two trials per task, checked end to end (and so profiled) in
    :data:`DRAWS` fresh processes."""
    from msviz.bench import draws
    from msviz.engine import Session

    session = Session("mlp", work_dir=tmp_path_factory.mktemp("mprofile") / "wd", max_trials=8,
                      **{**TINY, "trials_per_batch": 2})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(draws, "DEFAULT_DRAWS", DRAWS)  # the worker reads it when it checks
        session.start()
        assert session.wait(900) == "finished"
    return session


@pytest.fixture(scope="module")
def mlp_tasks() -> list:
    """The MLP's tasks as MetaSchedule extracts them, independently of the run."""
    return load("mlp").extract_tasks(compat.make_target("llvm"))


def _copy(session: Any, dest: Path, *, keep_profile: bool = False,
          keep_environment: bool = False, environment: dict | None = None,
          drop_task: str | None = None) -> Path:
    """A copy of the session's work dir: its recorded profile and the session's own
    ``environment`` lines dropped (unless kept), an ``environment`` line added, the records of
    one task removed."""
    shutil.copytree(session.work_dir, dest)
    side = dest / SIDECAR_FILE
    dropped = ({"model_profile"} - ({"model_profile"} if keep_profile else set())) | (
        set() if keep_environment else {"environment"})
    lines = [x for x in side.read_text().splitlines()
             if json.loads(x).get("kind") not in dropped]
    if environment is not None:
        lines.append(json.dumps({"v": 1, "kind": "environment", **environment}))
    side.write_text("".join(x + "\n" for x in lines))
    if drop_task is not None:
        run = msviz.open(session.work_dir)
        workload = int(run.tasks.set_index("task").at[drop_task, "workload"])
        path = dest / "database_tuning_record.json"
        kept = [x for x in path.read_text().splitlines() if json.loads(x)[0] != workload]
        path.write_text("".join(x + "\n" for x in kept))
    return dest


def test_recorded_profile_lists_every_task(tuned: Any, mlp_tasks: list) -> None:
    run = msviz.open(tuned.work_dir)
    frame = run.model_profile()
    assert list(frame.columns) == MODEL_PROFILE_COLUMNS
    assert frame.dtypes.astype(str).to_dict() == DTYPES
    # the matched rows are the task list; calls are the weights (fc1/fc2 share a task: 2)
    assert list(frame["task"]) == [t.name for t in mlp_tasks]
    assert list(frame["calls"]) == [t.weight for t in mlp_tasks]
    assert sorted(frame["calls"]) == [1, 1, 1, 2]
    # every task has both times; tuned is the best latency of its trials
    assert (frame["in_model_us"] > 0).all() and np.isfinite(frame["in_model_us"]).all()
    best = run.trials.groupby("task")["latency_us"].min()
    assert np.allclose(frame["tuned_us"], [best[t] for t in frame["task"]], rtol=1e-9)
    assert np.allclose(frame["ratio"], frame["in_model_us"] / frame["tuned_us"])
    assert not frame["fallback"].any()
    # each draw's median call as recorded: the least and the slowest, a flag where every
    # draw is over 1.5x the tuned latency, disputed where some are and some are not
    rows = tuned.model_profile_data["rows"]
    each = [r["in_model_draws_us"] for r in rows]
    assert [len(e) for e in each] == [DRAWS] * 4 and frame.attrs["draws"] == DRAWS
    assert list(frame["in_model_us"]) == [min(e) for e in each]
    assert list(frame["in_model_max_us"]) == [max(e) for e in each]
    assert list(frame["spread"]) == [max(e) / min(e) for e in each]
    over = [[x / best[r["task"]] > 1.5 for x in e] for r, e in zip(rows, each)]
    assert list(frame["flagged"]) == [all(o) for o in over]
    assert list(frame["disputed"]) == [any(o) and not all(o) for o in over]
    # the calls of no task: the VM's own (allocations, shape checks), none of them a task's
    other = frame.attrs["other"]
    assert "vm.builtin.alloc_tensor" in set(other["call"])
    assert not set(other["call"]) & set(frame["task"])
    assert frame.attrs["runs"] == 10 and frame.attrs["hook_us"] > 0


def test_threshold_is_the_users(tuned: Any) -> None:
    run = msviz.open(tuned.work_dir)
    assert run.model_profile(threshold=1e-6)["flagged"].all()
    assert not run.model_profile(threshold=1e6)["flagged"].any()
    with pytest.raises(ValueError, match="threshold must be a number > 0"):
        run.model_profile(threshold=0)


def test_session_has_it_from_the_same_build(tuned: Any) -> None:
    # the session's profile is the one it recorded, not a second build
    assert tuned.model_profile_data is not None and tuned.model_profile_data["error"] is None
    # the end-to-end check's times are the least of the same draws
    e2e = tuned.end_to_end
    assert e2e["draws"] == DRAWS == len(e2e["tuned_draws_us"]) == len(e2e["untuned_draws_us"])
    assert e2e["tuned_us"] == min(e2e["tuned_draws_us"])
    assert e2e["tuned_spread"] == max(e2e["tuned_draws_us"]) / e2e["tuned_us"]
    pd.testing.assert_frame_equal(tuned.model_profile(), msviz.open(tuned.work_dir)
                                  .model_profile())
    events = tuned.events.of_kind("model_profile")
    assert len(events) == 1 and events[0]["rows"] == tuned.model_profile_data["rows"]


def test_untuned_task_falls_back(tuned: Any, mlp_tasks: list, tmp_path: Path) -> None:
    copy = _copy(tuned, tmp_path / "wd", drop_task="softmax")
    frame = msviz.open(copy).model_profile(model="mlp", runs=3, draws=1)
    assert list(frame["task"]) == [t.name for t in mlp_tasks]
    assert list(frame["calls"]) == [t.weight for t in mlp_tasks]
    row = frame.set_index("task").loc["softmax"]
    assert bool(row["fallback"]) and math.isnan(row["tuned_us"]) and math.isnan(row["ratio"])
    assert not bool(row["flagged"]) and not bool(row["disputed"]) and row["in_model_us"] > 0
    assert list(frame.loc[frame["task"] != "softmax", "fallback"]) == [False, False, False]


def test_refresh_profiles_anew(tuned: Any, tmp_path: Path) -> None:
    copy = _copy(tuned, tmp_path / "wd", keep_profile=True)
    run = msviz.open(copy)
    recorded = run.model_profile()
    fresh = run.model_profile(model="mlp", refresh=True, runs=2, draws=2)
    assert fresh.attrs["runs"] == 2 and recorded.attrs["runs"] == 10
    assert fresh.attrs["draws"] == recorded.attrs["draws"] == DRAWS
    assert (fresh["in_model_max_us"] >= fresh["in_model_us"]).all()
    pd.testing.assert_series_equal(fresh["tuned_us"], recorded["tuned_us"])


def test_model_named_by_the_environment(tuned: Any, tmp_path: Path) -> None:
    env = {"model": {"name": "mlp", "source": "mlp"}}
    frame = msviz.open(_copy(tuned, tmp_path / "wd", environment=env)).model_profile(runs=2,
                                                                                   draws=1)
    assert len(frame) == 4 and frame.attrs["runs"] == 2


def test_model_named_by_the_sessions_own_environment(tuned: Any, tmp_path: Path) -> None:
    # the session wrote its environment line (the catalogue's "mlp"): no model= needed
    assert msviz.open(tuned.work_dir).environment["model"]["source"] == "mlp"
    frame = msviz.open(_copy(tuned, tmp_path / "wd", keep_environment=True)).model_profile(
        runs=2, draws=1)
    assert list(frame["task"]) == [t.name for t in load("mlp").extract_tasks(
        compat.make_target("llvm"))] and frame.attrs["runs"] == 2


def test_bad_input_says_what(tuned: Any, tmp_path: Path) -> None:
    with pytest.raises(MsvizError, match="pass model="):
        msviz.open(_copy(tuned, tmp_path / "a")).model_profile()
    primfunc = {"model": None}
    with pytest.raises(MsvizError, match="one PrimFunc, not a model"):
        msviz.open(_copy(tuned, tmp_path / "b", environment=primfunc)).model_profile()
    with pytest.raises(MsvizError, match="holds no workload of model 'resnet-block'"):
        msviz.open(tuned.work_dir).model_profile(model="resnet-block", refresh=True)
    with pytest.raises(SessionStateError, match="one PrimFunc, not a model"):
        make_tiny_session(tmp_path / "gmm").model_profile()

    failed = _copy(tuned, tmp_path / "c")
    with (failed / SIDECAR_FILE).open("a") as f:  # a profile that failed after tuning
        f.write(json.dumps({"v": 1, "kind": "model_profile", "rows": [], "other": [],
                            "hook_us": None, "runs": 10, "error": "RuntimeError: boom"}) + "\n")
    with pytest.raises(MsvizError, match="failed: RuntimeError: boom; pass refresh=True"):
        msviz.open(failed).model_profile()
    assert len(msviz.open(failed).model_profile(model="mlp", refresh=True, runs=1,
                                                draws=1)) == 4
    with pytest.raises(ValueError, match="draws must be an int >= 1"):
        msviz.open(failed).model_profile(model="mlp", refresh=True, draws=0)


@pytest.mark.parametrize(("symbol", "task"), [
    ("fused_matmul_add_relu", "fused_matmul_add_relu"),
    ("fused_matmul2_add1", "fused_matmul2_add1"),  # a task whose name ends in a digit
    ("fused_matmul_add_relu_1", "fused_matmul_add_relu"),  # a deduplicated copy
    ("softmax1", "softmax"),
    ("fused_matmul_add_relu_prepacked", "fused_matmul_add_relu"),  # weights prepacked
    ("fused_matmul2_add1_prepacked", "fused_matmul2_add1"),
    ("vm.builtin.alloc_tensor", None),
    ("fused_matmul_add", None),
])
def test_match_call(symbol: str, task: str | None) -> None:
    names = ["softmax", "fused_matmul2_add1", "fused_matmul1_add_relu", "fused_matmul_add_relu"]
    assert match_call(symbol, names) == task


# -- where it is shown: the Tasks tab, the report, msviz show --------------------------------


def test_tasks_tab_draws_it(tuned: Any, mlp_tasks: list) -> None:
    from msviz.widgets import Dashboard
    from msviz.widgets.tasks_view import TasksView

    names = [t.name for t in mlp_tasks]
    frame = msviz.open(tuned.work_dir).model_profile()
    view = Dashboard(msviz.open(tuned.work_dir)).tasks_view
    live = TasksView()  # a session's events: its model_profile event
    live.update_from_events(tuned.events.snapshot(), tuned.trials)
    for tab in (view, live):
        assert tab.model_profile.value.count("msviz-profile-row") == 4
        assert tab.model_profile.value.count("msviz-flagged") == int(frame["flagged"].sum())
        tuned_bars, in_model = tab.model_profile_plot.data
        assert list(in_model.y) == names
        assert list(in_model.x) == pytest.approx(list(frame["in_model_us"]))
        assert list(tuned_bars.x) == pytest.approx(list(frame["tuned_us"]))
        assert tab.model_profile_box.layout.display is None  # shown
        # the least of the draws, and their spread, in the table, the bars and the summary
        assert tab.profile_info.draws == DRAWS
        assert [t.spread for t in tab.profile_info.tasks] == pytest.approx(list(frame["spread"]))
        assert list(in_model.error_x.array) == pytest.approx(
            list(frame["in_model_max_us"] - frame["in_model_us"]))
        assert f"in each of {DRAWS} fresh processes, the least kept" in tab.model_profile.value
        assert f"least of {DRAWS} fresh processes (spread: untuned" in tab.end_to_end.value


def test_report_and_show(tuned: Any, capsys: pytest.CaptureFixture) -> None:
    from msviz.cli import main
    from msviz.report import render_report

    frame = msviz.open(tuned.work_dir).model_profile()
    page = render_report(tuned.work_dir)
    assert "Kernels in the model vs in tuning" in page
    assert page.count("msviz-profile-row") == 4
    assert main(["show", str(tuned.work_dir)]) == 0
    out = capsys.readouterr().out
    table = out[out.index("Kernels in the model vs in tuning:"):].splitlines()[2:6]
    assert [line.split()[0] for line in table] == list(frame["task"])
    assert [f"{v:.3f}" for v in frame["in_model_us"]] == [line.split()[2] for line in table]


def test_check_model_again_takes_its_draws(tuned: Any) -> None:
    """``Session.check_model(draws=1)``: a new end-to-end check and profile from one fresh
    process (neither the fixture's two nor the default three), recorded like the first (last
    in this module: it adds sidecar lines)."""
    with pytest.raises(ValueError, match="draws must be an int >= 1"):
        tuned.check_model(draws=0)
    data = tuned.check_model(draws=1)
    assert data["error"] is None and data["match"] is True
    assert data == tuned.end_to_end == tuned.events.of_kind("end_to_end")[-1].data
    assert data["draws"] == 1 and data["tuned_draws_us"] == [data["tuned_us"]]
    assert (data["untuned_spread"], data["tuned_spread"]) == (1.0, 1.0)
    profiles = tuned.events.of_kind("model_profile")
    assert len(profiles) == 2 and profiles[-1].data == tuned.model_profile_data
    assert [len(r["in_model_draws_us"]) for r in profiles[-1]["rows"]] == [1] * 4
    run = msviz.open(tuned.work_dir)
    assert run.end_to_end == data  # the last check, its draws too
    assert run.model_profile().attrs["draws"] == 1
    pd.testing.assert_frame_equal(run.model_profile(), tuned.model_profile())
