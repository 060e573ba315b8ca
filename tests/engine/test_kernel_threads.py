"""Kernels are measured on the cores their target names, not on TVM's halved default.

TVM's runtime runs kernels on half the logical CPUs of an x86 machine unless ``TVM_NUM_THREADS``
is set (it assumes two hardware threads per core); on a VM without SMT that is half the cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tvm

from msviz import compat
from msviz.engine.measure.service import MeasuringService

PROBE = (
    "from msviz import compat\n"
    "from msviz.engine.measure.service import MeasuringService\n"
    "m = MeasuringService(compat.make_target('llvm', num_cores=2))\n"
    "import tvm\n"
    "print(tvm.runtime.num_threads(), m.runner.pool.submit(tvm.runtime.num_threads).result())\n"
)


def physical_cores_allowed() -> int | None:
    """Distinct (package, core) pairs among the CPUs this process may use, from /proc/cpuinfo."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    allowed = os.sched_getaffinity(0)
    cores = set()
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        if "core id" not in fields:
            return None
        if int(fields["processor"]) in allowed:
            cores.add((fields.get("physical id", "0"), fields["core id"]))
    return len(cores) or None


def probe(env_threads: str | None) -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if k not in ("TVM_NUM_THREADS", "OMP_NUM_THREADS")}
    if env_threads is not None:
        env["TVM_NUM_THREADS"] = env_threads
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         timeout=300, check=True)
    process, worker = out.stdout.split()[-2:]
    return int(process), int(worker)


@pytest.mark.parametrize("cores", [1, 2])
def test_runner_worker_runs_kernels_on_the_target_cores(cores: int) -> None:
    measurer = MeasuringService(compat.make_target("llvm", num_cores=cores))
    assert measurer.runner.pool.submit(tvm.runtime.num_threads).result() == cores


def test_msviz_runs_kernels_on_the_physical_cores_by_default() -> None:
    expected = physical_cores_allowed()
    if expected is None:
        pytest.skip("/proc/cpuinfo names no cores here")
    assert probe(None) == (expected, 2)


def test_a_user_set_thread_count_is_kept() -> None:
    assert probe("1") == (1, 1)
