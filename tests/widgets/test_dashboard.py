"""The dashboard on a live session: buttons, progress, linked selection, failure; the adapter."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import msviz
from msviz.compat import ms
from msviz.engine.events import EventLog
from msviz.records import live as live_module
from msviz.widgets import Dashboard, UIAdapter


def _session(work_dir: Path, **kw) -> msviz.Session:
    options = {"max_trials": 16, "trials_per_batch": 8, "population_size": 16,
               "init_min_unmeasured": 8, "genetic_num_iters": 1, "seed": 5}
    return msviz.Session("GMM-0", work_dir=work_dir, **{**options, **kw})


def _enabled(dash: Dashboard) -> set[str]:
    return {name for name, b in dash.buttons.items() if not b.disabled}


def test_dashboard_drives_a_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Path] = []

    class CountingRun(live_module.Run):  # counts reads of the work dir by the live table
        def __init__(self, work_dir):
            reads.append(Path(work_dir))
            super().__init__(work_dir)

    monkeypatch.setattr(live_module, "Run", CountingRun)
    session = _session(tmp_path / "wd")
    dash = Dashboard(session)
    assert dash.tabs.titles == (
        "Trials", "Plots", "Time", "Trace", "Code", "Evolution", "Design spaces", "Rules")
    assert _enabled(dash) == {"start", "step_batch", "step_generation", "stop"}
    assert dash.progress.max == 16 and dash.progress.value == 0

    dash.buttons["step_batch"].click()
    assert session.wait(300) == "paused"
    assert dash.settle()
    # a batch asks for 8 and may get fewer: PickWithEpsGreedy (as the C++) drops a random pick
    # that a score pick of the same batch took; the table holds what the progress counts
    n = dash.progress.value
    assert 1 <= n <= 8 and dash.table.total == n == len(session.trials)
    assert f"{n}/16 trials" in dash.progress_label.value and "ETA" in dash.progress_label.value
    assert _enabled(dash) == {"resume", "step_batch", "step_generation", "stop"}
    assert "paused" in dash.state_label.value
    assert not dash.plots.history.data  # plots redraw only when shown...
    dash.tabs.selected_index = dash.tabs.titles.index("Plots")
    ok = int((session.trials["status"] == "ok").sum())
    assert len(dash.plots.history.data[0].x) == ok > 0  # ...and catch up when their tab opens
    # by wall time, from the session's "started" event: the first batch, stored together
    # after it was searched, built and run, sits at its stored time, not at 0 s
    started = next(e.time for e in session.events.snapshot() if e.kind == "started")
    stored = session.trials["timestamp"].min().timestamp()
    dash.plots.x_axis.value = "time"
    assert min(dash.plots.history.data[0].x) == pytest.approx(stored - started, abs=1e-3)
    assert stored - started > 0.01  # told apart from 0 s (by more than the 1e-3 above)
    dash.plots.x_axis.value = "trial"

    # selecting a row anywhere selects it everywhere
    dash.table.selected = dash.table.rows[0]["trial"]
    assert dash.selection.trial == dash.table.selected
    assert "Trace of trial" in dash.trace_view.title.value and dash.trace_view.editors.children
    assert "sblock" in dash.code_view.code.value

    dash.buttons["step_generation"].click()
    assert session.wait(300) == "paused"
    assert dash.settle()
    dash.tabs.selected_index = dash.tabs.titles.index("Evolution")  # redrawn when shown
    assert dash.evolution.info.generations

    dash.buttons["resume"].click()
    assert session.wait(300) == "finished"
    assert dash.settle()
    assert dash.table.total == 16 and dash.progress.bar_style == "success"
    assert _enabled(dash) == set()

    # edit one decision in the trace view, Measure: the edited schedule becomes a new trial
    dash.selection.trial = int(session.best().index)
    tile = next(b for b in dash.trace_view.editors.children
                if "PerfectTile" in getattr(b, "description", "") and len(b.options) > 1)
    tile.value = (tile.value + 1) % len(tile.options)
    assert re.search("diff_(add|chg|sub)", dash.trace_view.diff.value)
    future = dash.trace_view.measure()
    assert dash.trace_view.status.value == "measuring the edited schedule..."
    result = future.result(timeout=300)
    assert result["new_trial"] and result["error"] is None and result["check"] == "ok"
    mean_us = 1e6 * sum(result["run_secs"]) / len(result["run_secs"])
    said = (f"measured a new trial (record line 17): {mean_us:.1f} us; "
            "result checked: right")
    deadline = time.time() + 60  # the future's callback runs after result() wakes us
    while dash.trace_view.status.value != said and time.time() < deadline:
        time.sleep(0.05)
    assert dash.trace_view.status.value == said
    assert dash.settle()
    assert dash.table.total == 17
    # the edit is a trial of the table, not one of the search's 16
    assert session.trials_done == 16 and dash.progress_label.value.startswith("16/16 trials")
    edited = session.trials.iloc[-1]
    assert edited["origin"] == "edit" and edited["status"] == "ok" and edited["latency_us"] > 0
    # every refresh came from the events: the work dir was never read (it was empty at first)
    assert reads == []
    shown, disk = dash.table.trials, msviz.open(session.work_dir).trials
    assert list(shown.columns) == list(disk.columns) and list(shown.dtypes) == list(disk.dtypes)
    same = ["trial", "task", "task_trial", "status", "latency_us", "gflops", "run_secs", "error",
            "line", "batch", "generation", "origin", "pick", "predicted_score", "mutator"]
    pd.testing.assert_frame_equal(shown[same], disk[same])
    dash.click("start")  # makes no sense now: said under the dashboard, nothing raised
    assert dash.error.text.startswith("[Dashboard] Session.start() makes no sense now")
    assert dash.adapter.errors == []
    dash.close()


def test_progress_turns_red_and_stays_on_failure(tmp_path: Path) -> None:
    from tvm.ir.utils import derived_object

    @derived_object
    class BrokenRule(ms.schedule_rule.PyScheduleRule):
        def _initialize_with_tune_context(self, context) -> None:
            pass

        def apply(self, sch, block):
            raise RuntimeError("deliberately broken rule")

        def clone(self):
            return BrokenRule()

    rules = msviz.RuleSet.default("llvm")
    rules.insert(0, BrokenRule())
    session = _session(tmp_path / "wd", rules=rules)
    dash = Dashboard(session)
    dash.click("start")
    assert session.wait(300) == "failed"
    assert dash.settle()
    assert dash.progress.bar_style == "danger"
    assert "deliberately broken rule" in dash.state_label.value
    dash._refresh(full=True)  # a later redraw keeps it red
    assert dash.progress.bar_style == "danger"


def test_adapter_batches_on_the_loop() -> None:
    """1,000 events from a worker thread reach the handler in a few batches, on the loop."""
    log = EventLog()
    loop = asyncio.new_event_loop()
    loop_thread = threading.Thread(target=loop.run_forever, daemon=True)
    loop_thread.start()
    got: list = []
    threads: set = set()
    adapter = UIAdapter(log, loop=loop, max_rate=10)
    adapter.add_handler(lambda events: (got.extend(events), threads.add(threading.get_ident())))

    def engine() -> None:
        for i in range(1000):
            log.emit("log", "t", message=str(i))
            time.sleep(0.0005)

    start = time.monotonic()
    worker = threading.Thread(target=engine)
    worker.start()
    worker.join()
    deadline = time.monotonic() + 60
    while len(got) < 1000 and time.monotonic() < deadline:
        time.sleep(0.05)
    elapsed = time.monotonic() - start
    assert [e.data["message"] for e in got] == [str(i) for i in range(1000)]
    assert threads == {loop_thread.ident}
    assert 1 <= adapter.deliveries <= elapsed * 10 + 2
    # a state change right after a delivery is not held back by the rate limit: with a limit
    # of one delivery an hour, a chatty event waits its hour, and the state change that follows
    # takes it along at once (seen within a minute, on any host)
    adapter.min_interval = 3600.0
    log.emit("log", "t", message="chatty")
    log.emit("paused", "t")
    deadline = time.monotonic() + 60
    while got[-1].kind != "paused" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [(e.kind, e.data.get("message")) for e in got[-2:]] == [("log", "chatty"),
                                                                   ("paused", None)]
    loop.call_soon_threadsafe(loop.stop)
    loop_thread.join(5)
    adapter.close()
    log.emit("log", "t", message="after close")
    assert len(got) == 1002
