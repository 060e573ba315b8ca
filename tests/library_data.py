"""A hand-built tuning-library coverage of the stock 4-task model (:data:`tests.conftest.
MODEL_TASKS`), with and without untuned times, and a copy of a work dir whose sidecar holds it
and three trials carried from the library."""

from __future__ import annotations

import shutil
from pathlib import Path

import msviz
from msviz.archive.sidecar_writer import SidecarWriter
from msviz.records.coverage_types import Coverage, TaskCoverage, coverage_to_dict

#: One task of each kind of match, in MATCHES order; untuned 10, 20 (weight 2), 30, 40 µs:
#: the model untuned 120 µs, from the library alone 2.5 + 2 x 4 + 30 + 40 = 80.5 µs, the exact
#: and anchor tasks 10 + 40 of the 120 (5/12).
COVERAGE = Coverage(
    model="mlp", target="llvm -keys=cpu", library=("mlp_v1", "resnet18"),
    tasks=(
        TaskCoverage(0, "fused_matmul3_add1", 1, "matmul", "exact", 2.5,
                     "mlp_v1/fused_matmul3_add1", "llvm -keys=cpu", 2, 10.0),
        TaskCoverage(1, "fused_matmul2_add_relu", 2, "matmul", "anchor", 4.0,
                     "mlp_v1/fused_matmul2_add", "llvm -keys=cpu", 3, 20.0),
        TaskCoverage(2, "matmul1", 1, "matmul", "sibling", None, "resnet18/fused_dense_add",
                     None, 4, 30.0),
        TaskCoverage(3, "matmul", 1, "matmul", "none", None, None, None, 0, 40.0),
    ),
    library_us=80.5, untuned_us=120.0, covered_share=50.0 / 120.0,
    problems=("old_run: database_tuning_record.json line 3 cannot be read",))

#: The same without untuned times (not measured): no estimate, no share.
COVERAGE_UNTIMED = COVERAGE._replace(
    tasks=tuple(t._replace(untuned_us=None) for t in COVERAGE.tasks), library_us=None,
    untuned_us=None, covered_share=None, problems=())

#: What the copied work dir's sidecar says of three trials: task -> (carry, carried_from,
#: adjusted positions), each on the task's first successful trial.
CARRIED = {
    "fused_matmul3_add1": ("exact", "mlp_v1/fused_matmul3_add1 trial 12", []),
    "fused_matmul2_add_relu": ("anchor", "mlp_v1/fused_matmul2_add trial 4", []),
    "matmul1": ("sibling", "resnet18/fused_dense_add trial 7", [3, 7]),
}


def library_work_dir(src: Path, dst: Path, coverage: Coverage | None = COVERAGE) -> dict:
    """Copy the work dir ``src`` to ``dst`` and append, with msviz's sidecar writer, a
    ``library_coverage`` line of ``coverage`` (none when None) and a ``trial`` line for each
    task of :data:`CARRIED` (on its first successful trial). Returns task -> record line."""
    shutil.copytree(src, dst)
    trials = msviz.open(src).trials
    ok = trials[trials["status"] == "ok"]
    lines = {task: int(ok[ok["task"] == task]["line"].iloc[0]) for task in CARRIED}
    with SidecarWriter(dst) as writer:
        if coverage is not None:
            writer.write("library_coverage", coverage=coverage_to_dict(coverage))
        for task, (carry, source, adjusted) in CARRIED.items():
            writer.trial(lines[task], task=task, origin="library", carried_from=source,
                         carry=carry, adjusted=adjusted)
    return lines
