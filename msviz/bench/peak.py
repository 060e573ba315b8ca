"""This machine's fp32 peak and its CPU's name: what a kernel's GFLOPS are a share of.

The peak is measured, not looked up: ``peak_fma.c`` (beside this file) runs 12 independent FMA
chains in registers on every core with AVX-512 (where ``-march=native`` has it) and AVX2, built
with ``gcc -O3 -march=native -fopenmp`` and run with ``OMP_NUM_THREADS`` = the threads the
kernels use; the larger of the two is the peak. Measured once per process (``lru_cache``): it
takes about half a second and the cores do not change under a process.

These shared 2-core VMs fall into a slow mode for a while (every program ~1.4-2x slower
together), and a peak measured in it makes a kernel timed in the fast mode run "above the
peak". :func:`best_fp32_peak` measures again at other moments (around long timings) and keeps
the largest.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["PEAK_SOURCE", "best_fp32_peak", "cpu_name", "fp32_peak", "measure_fp32_peak",
           "physical_cores"]

#: The C source of the measurement.
PEAK_SOURCE = Path(__file__).with_name("peak_fma.c")
#: FMA iterations per chain and repeats (the best repeat is kept): ~0.1 s a repeat on 3 GHz.
_ITERS, _REPEATS = 30_000_000, 3


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what :mod:`platform` says, else ``"?"``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "?"


def physical_cores() -> int:
    """The physical cores (``psutil``), else the CPUs this process may use."""
    try:
        import psutil  # optional: the physical count

        cores = psutil.cpu_count(logical=False)
        if cores:
            return int(cores)
    except ImportError:
        pass
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


@functools.lru_cache(maxsize=8)
def fp32_peak(threads: int | None = None) -> dict:
    """The fp32 peak of ``threads`` cores (None: :func:`physical_cores`), measured once per
    process (:func:`measure_fp32_peak`)."""
    return measure_fp32_peak(threads)


def best_fp32_peak(samples: list[dict]) -> dict:
    """The sample of :func:`measure_fp32_peak` with the largest peak (measured at several
    moments: one in the machine's slow mode is too low), with ``samples_gflops``: every
    sample's peak (None where it failed), in order."""
    if not samples:
        raise ValueError("best_fp32_peak needs at least one sample")
    measured = [s for s in samples if s.get("gflops")]
    best = max(measured, key=lambda s: s["gflops"]) if measured else samples[-1]
    return {**best, "samples_gflops": [s.get("gflops") for s in samples]}


def measure_fp32_peak(threads: int | None = None) -> dict:
    """The fp32 peak of ``threads`` cores (None: :func:`physical_cores`), measured now.

    Returns
    -------
    peak : dict
        ``gflops`` (the larger of ``avx512_gflops`` and ``avx2_gflops``; None when it could not
        be measured), ``threads``, ``cpu`` (:func:`cpu_name`) and ``error`` (why there is no
        peak: no ``gcc``, a failed build or run; None otherwise).
    """
    threads = physical_cores() if threads is None else int(threads)
    out = {"gflops": None, "avx512_gflops": None, "avx2_gflops": None, "threads": threads,
           "cpu": cpu_name(), "error": None}
    gcc = shutil.which("gcc")
    if gcc is None:
        return {**out, "error": "no gcc on PATH to build the FMA peak measurement"}
    with tempfile.TemporaryDirectory(prefix="msviz-peak-") as tmp:
        exe = Path(tmp) / "peak_fma"
        try:
            subprocess.run([gcc, "-O3", "-march=native", "-fopenmp", str(PEAK_SOURCE), "-o",
                            str(exe)], check=True, capture_output=True, text=True, timeout=60)
            run = subprocess.run([str(exe), str(_ITERS), str(_REPEATS)], check=True,
                                 capture_output=True, text=True, timeout=120,
                                 env={**os.environ, "OMP_NUM_THREADS": str(threads)})
        except (OSError, subprocess.SubprocessError) as err:
            text = getattr(err, "stderr", None) or str(err)
            lines = [x for x in str(text).splitlines() if x.strip()]
            return {**out, "error": f"the FMA peak measurement failed: "
                                    f"{lines[-1] if lines else type(err).__name__}"}
    words = run.stdout.split()
    avx512, avx2 = float(words[1]), float(words[3])
    return {**out, "gflops": max(avx512, avx2), "avx512_gflops": avx512 or None,
            "avx2_gflops": avx2}
