"""UI speed: render 10,000 trials, event-to-widget latency, tuning slowdown with a dashboard.

Targets: table + plots for 10,000 trials <= 1 s; engine event -> widget state <= 100 ms;
tuning wall time with a dashboard attached <= 1.05x without.

    .venv/bin/python benchmarks/ui.py [--trials 32] [--repeats 2]

The kernel's event loop is stood in for by an asyncio loop on its own thread (in a notebook the
dashboard's updates run on the kernel's loop in the same way).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd

import msviz
from msviz.widgets import Dashboard, PlotPanel, TrialTable

OPTIONS = {"trials_per_batch": 8, "population_size": 32, "init_min_unmeasured": 16,
           "genetic_num_iters": 2}


def _loop() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    return loop, thread


def _tune(trials: int, seed: int, *, dashboard: bool) -> tuple[float, list[float], msviz.Session]:
    session = msviz.Session("GMM-0", work_dir=Path(tempfile.mkdtemp()) / "wd",
                            max_trials=trials, seed=seed, **OPTIONS)
    latencies: list[float] = []
    loop = thread = dash = None
    if dashboard:
        loop, thread = _loop()
        made = threading.Event()

        def build() -> None:
            nonlocal dash
            dash = Dashboard(session, loop=loop)
            dash.tabs.selected_index = dash.tabs.titles.index("Plots")  # worst case: plots redraw
            original = dash.on_events

            def timed(events: list) -> None:
                original(events)
                now = time.time()
                latencies.extend(now - e.time for e in events if e.kind == "measured")

            dash.adapter.handlers = [timed]
            made.set()

        loop.call_soon_threadsafe(build)
        made.wait(60)
    start = time.perf_counter()
    session.start()
    state = session.wait(1800)
    wall = time.perf_counter() - start
    assert state == "finished", state
    if loop is not None:
        time.sleep(0.3)  # let the last batch of events land
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
    return wall, latencies, session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    # warm up (first TuneContext imports tensor intrinsics) and get real trials with sidecar data
    _, _, session = _tune(16, 1, dashboard=False)
    base = session.trials
    start = time.perf_counter()
    import plotly.graph_objects as go

    go.FigureWidget()
    print(f"one-off: first FigureWidget import {time.perf_counter() - start:.2f} s (not counted)")
    big = pd.concat([base] * (10_000 // len(base) + 1), ignore_index=True).iloc[:10_000].copy()
    big["trial"] = range(len(big))
    big["task_trial"] = range(len(big))
    start = time.perf_counter()
    table = TrialTable(big)
    table_s = time.perf_counter() - start
    start = time.perf_counter()
    PlotPanel(big)
    plots_s = time.perf_counter() - start
    start = time.perf_counter()
    table.sort_by = "latency_us"
    sort_s = time.perf_counter() - start
    print(f"10,000 trials: trials table {table_s * 1e3:.0f} ms, plots {plots_s * 1e3:.0f} ms, "
          f"total {(table_s + plots_s):.2f} s (target <= 1 s); re-sort {sort_s * 1e3:.0f} ms")

    walls: dict[bool, list[float]] = {False: [], True: []}
    latencies: list[float] = []
    for r in range(args.repeats):
        for attached in (False, True) if r % 2 == 0 else (True, False):
            wall, lat, _ = _tune(args.trials, 100 + r, dashboard=attached)
            walls[attached].append(wall)
            latencies += lat
    if latencies:
        print(f"engine 'measured' event -> dashboard updated: median "
              f"{statistics.median(latencies) * 1e3:.0f} ms, max {max(latencies) * 1e3:.0f} ms "
              f"over {len(latencies)} events (target <= 100 ms)")
    without, with_ = statistics.median(walls[False]), statistics.median(walls[True])
    print(f"tuning wall time ({args.trials} trials, median of {args.repeats}): without "
          f"dashboard {without:.1f} s, with {with_:.1f} s, ratio {with_ / without:.3f} "
          f"(target <= 1.05)")


if __name__ == "__main__":
    main()
