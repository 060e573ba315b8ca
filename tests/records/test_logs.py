"""MetaSchedule's log files: the task-scheduler table (N/A cells, totals) and per-task logs."""
# ruff: noqa: E501  (the log lines are as MetaSchedule prints them)

from __future__ import annotations

from pathlib import Path
from typing import Any

from msviz.records import logs

_TABLE = """\
2026-11-22 14:43:50 [INFO] [task_scheduler.cc:344]
 ID |  Name |  FLOP | Weight | Speed (GFLOPS) | Latency (us) | Weighted Latency (us) | Trials | Done
-----------------------------------------------------------------------------------------------------
  0 |  main |  1290 |      1 |            N/A |          N/A |                   N/A |      0 |
-----------------------------------------------------------------------------------------------------
Total trials: 0
Total latency (us): 0

2026-11-22 14:43:51 [INFO] [task_scheduler.cc:344]
 ID |    Name |  FLOP | Weight | Speed (GFLOPS) | Latency (us) | Weighted Latency (us) | Trials | Done
-----------------------------------------------------------------------------------------------------
  0 |    main |  1290 |      1 |         0.1985 |       6.4990 |                6.4990 |      3 |    Y
  1 | matmul1 | 16384 |      2 |            N/A |          N/A |                   N/A |      0 |
-----------------------------------------------------------------------------------------------------
Total trials: 3
Total latency (us): 6.499
"""


def test_scheduler_table_is_the_last_one_with_its_totals(tmp_path: Path) -> None:
    (tmp_path / "tvm.s_tir.meta_schedule.logging.task_scheduler.log").write_text(_TABLE)
    assert logs.read_scheduler_table(tmp_path) == logs.TaskTable(
        [
            logs.LogTask(0, "main", 1290.0, 1.0, 3, 0.1985, 6.499, 6.499, True),
            logs.LogTask(1, "matmul1", 16384.0, 2.0, 0, None, None, None, False),
        ],
        3,
        6.499,
    )
    assert logs.read_task_table(tmp_path) == logs.read_scheduler_table(tmp_path).rows


def test_scheduler_table_reads_from_the_last_header_only(tmp_path: Path,
                                                        monkeypatch: Any) -> None:
    """A long run prints a table per batch: only the text from the last header on is parsed
    (found from the end), never the whole log, whose tables all come before it."""
    (tmp_path / "tvm.s_tir.meta_schedule.logging.task_scheduler.log").write_text(_TABLE * 50)
    parsed: list[str] = []
    real = logs._last_table
    monkeypatch.setattr(logs, "_last_table", lambda text: parsed.append(text) or real(text))
    assert logs.read_scheduler_table(tmp_path).total_trials == 3
    last = _TABLE.rindex(" ID |")  # the last header line, to the end of the log
    assert parsed == [_TABLE[last:]]


def test_no_scheduler_log(tmp_path: Path) -> None:
    assert logs.read_scheduler_table(tmp_path) == logs.TaskTable([], None, None)


def test_task_log_files_are_named_by_task(tmp_path: Path) -> None:
    for name in ("task_0_fused_matmul_add.log", "task_1_matmul1.log", "task_scheduler.log"):
        (tmp_path / f"tvm.s_tir.meta_schedule.logging.{name}").write_text(
            "2026-11-22 14:43:50 [INFO] [task_scheduler.cc:175] Initializing Task\n"
            "2026-11-22 14:43:50 [INFO] [task_scheduler.cc:47] \n"
            "# from tvm.script import ir as I\n@I.ir_module\nclass Module: pass\n"
            "2026-11-22 14:43:50 [INFO] [task_scheduler.cc:179] Total 3 design space(s)\n")
    files = logs.read_task_log_files(tmp_path)
    assert {i: (f.id, f.name) for i, f in files.items()} == {
        0: (0, "fused_matmul_add"), 1: (1, "matmul1")}
    assert logs.read_task_workload_script(files[1].path) == (
        "# from tvm.script import ir as I\n@I.ir_module\nclass Module: pass\n")
