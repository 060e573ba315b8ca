"""Reproduce: the environment a session stores, a bundle round trip, and ``msviz reproduce``
(re-timed best kernels, the first batch re-drawn with the same seed) on one tiny GMM-0 run."""

from __future__ import annotations

import json
import platform
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import tvm

import msviz
from msviz.cli import main
from msviz.engine.environment import config_of
from msviz.records.environment import rules_from_json
from msviz.records.sidecar import SIDECAR_FILE
from msviz.workflows.reproduce import redraw_first_batch
from tests.engine.conftest import make_tiny_session


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, Path]:
    """A finished 8-trial GMM-0 session (2 batches of 4), its work dir and its bundle."""
    root = tmp_path_factory.mktemp("reproduce")
    session = make_tiny_session(root / "wd")
    session.start()
    assert session.wait(600) == "finished", session.end_reason
    bundle = msviz.bundle(session.work_dir, root / "run.zip")
    return session, session.work_dir, bundle


def _sidecar_lines(work_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (work_dir / SIDECAR_FILE).read_text().splitlines()]


def _cpuinfo(field: str) -> str:
    """The first ``field`` line of /proc/cpuinfo (``model name``, ``flags``)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.split(":", 1)[0].strip() == field:
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {field} in /proc/cpuinfo")


def test_the_sidecar_holds_the_environment(tuned: tuple[Any, Path, Path]) -> None:
    session, work_dir, _ = tuned
    (env,) = [e for e in _sidecar_lines(work_dir) if e["kind"] == "environment"]
    assert env["versions"]["msviz"] == msviz.__version__
    assert env["versions"]["tvm"] == tvm.__version__
    assert env["versions"]["llvm"] == str(tvm.target.codegen.llvm_version_major())
    assert env["versions"]["python"] == platform.python_version()
    assert env["host"]["cpu"] == _cpuinfo("model name")
    assert env["host"]["features"] == sorted(set(_cpuinfo("flags").split()))
    mcpu = str(session.target.attrs["mcpu"]) if "mcpu" in session.target.attrs else None
    assert env["host"]["mcpu"] == mcpu == env["target"].get("mcpu")
    assert env["target"]["kind"] == "llvm"
    assert tvm.target.Target(env["target"]).export() == session.target.export()
    assert (env["seed"], env["preset"], env["strategy"]) == (1, "msviz", "evolutionary")
    assert (env["max_trials"], env["trials_per_batch"]) == (8, 4)
    assert env["knobs"]["population_size"] == 16 and env["knobs"]["genetic_num_iters"] == 1
    assert env["knobs"]["cost_model_task_warmup"] == 0 and env["knobs"]["eps_greedy"] == 0.05
    assert env["evaluator_config"] == {"number": 1, "repeat": 1, "min_repeat_ms": 0,
                                       "enable_cpu_cache_flush": False}
    assert env["workload"] == {"name": "GMM-0", "source": "GMM-0"}
    assert env["model"] is None
    assert env["first_line"] == 1  # the rules of every record from the first on
    assert str(rules_from_json(env["rules"])) == str(session.rules)
    # read back, the line is the session's config (what it does not keep: the defaults the
    # tiny session kept too)
    assert config_of(env) == session.config
    # Run.environment is that line (without the line's own "v" and "kind")
    assert msviz.open(work_dir).environment == {
        k: v for k, v in env.items() if k not in ("v", "kind")}


def test_a_resume_adds_an_environment_line(tuned: tuple[Any, Path, Path],
                                           tmp_path: Path) -> None:
    _, work_dir, _ = tuned
    copy = shutil.copytree(work_dir, tmp_path / "wd")
    again = make_tiny_session(copy, resume=True, seed=5)  # the budget is spent: ends at once
    again.start()
    assert again.wait(300) == "finished", again.end_reason
    envs = [e for e in _sidecar_lines(copy) if e["kind"] == "environment"]
    assert [e["seed"] for e in envs] == [1, 5]
    assert msviz.open(copy).environment["seed"] == 5


def test_a_stock_work_dir_has_no_environment(tuned: tuple[Any, Path, Path],
                                             tmp_path: Path) -> None:
    _, work_dir, _ = tuned
    copy = shutil.copytree(work_dir, tmp_path / "wd")
    (copy / SIDECAR_FILE).unlink()
    assert msviz.open(copy).environment is None
    result = msviz.reproduce(copy, retime=False)
    assert result.first_batch.error.startswith("the bundle has no environment")
    assert "Environment: the bundle has none" in str(result)


def test_a_bundle_round_trips(tuned: tuple[Any, Path, Path]) -> None:
    _, work_dir, bundle = tuned
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("manifest.json"))
    on_disk = {f"work_dir/{p.relative_to(work_dir).as_posix()}" for p in work_dir.rglob("*")
               if p.is_file() and p.name != "report.html"}
    assert names == on_disk | {"manifest.json"}
    run, opened = msviz.open(work_dir), msviz.open(bundle)
    assert manifest["msviz_version"] == msviz.__version__
    assert manifest["environment"] == run.environment
    pd.testing.assert_frame_equal(opened.trials, run.trials)
    pd.testing.assert_frame_equal(opened.tasks, run.tasks)
    assert opened.environment == run.environment
    assert opened.work_dir != work_dir and opened.work_dir.is_dir()
    # traces are read lazily from the extracted work dir
    assert str(opened.best().trace) == str(run.best().trace)
    assert opened.best().check().ok


def test_the_cli_bundles_and_says_where(tuned: tuple[Any, Path, Path], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    _, work_dir, _ = tuned
    out = tmp_path / "cli.zip"
    assert main(["bundle", str(work_dir), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    pd.testing.assert_frame_equal(msviz.open(out).trials, msviz.open(work_dir).trials)


def test_reproduce_retimes_and_redraws_the_first_batch(
        tuned: tuple[Any, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, work_dir, bundle = tuned
    assert main(["reproduce", str(bundle)]) == 0
    text = capsys.readouterr().out
    run = msviz.open(work_dir)
    best = run.tasks.iloc[0]
    # the first batch, read from the sidecar's trial lines
    first = sum(1 for e in _sidecar_lines(work_dir) if e["kind"] == "trial" and e["batch"] == 0)
    assert first == 4
    lines = text.splitlines()
    assert lines[0].startswith(f"Bundle {bundle}: GMM-0, tuned with msviz {msviz.__version__}, "
                               f"TVM {tvm.__version__}")
    header = lines.index("Best kernels re-timed here (µs; ratio = here / bundle):")
    assert lines[header + 1].split() == ["task", "trial", "bundle_us", "here_us", "ratio",
                                         "error"]
    task, trial, bundle_us, here_us, ratio = lines[header + 2].split()
    assert (task, int(trial)) == ("GMM-0", int(best["best_trial"]))
    assert bundle_us == f"{best['best_latency_us']:.4g}"
    assert float(here_us) > 0 and float(ratio) == pytest.approx(
        float(here_us) / best["best_latency_us"], rel=1e-3)
    assert (f"First batch re-drawn with seed 1: {first} candidates here, {first} in the "
            "bundle; the same candidates in the same order.") in lines
    assert lines[-1] == "Environment: versions and CPU are the same here."


def test_another_seed_draws_another_first_batch(tuned: tuple[Any, Path, Path]) -> None:
    """The comparison can fail: seed 2 does not draw seed 1's candidates."""
    _, work_dir, _ = tuned
    run = msviz.open(work_dir)
    batch = redraw_first_batch(run, {**run.environment, "seed": 2})
    assert batch.error is None and len(batch.bundle) == 4 and batch.here
    assert not batch.same and batch.matching < len(batch.here)
    assert f"re-drawn with seed 2: {len(batch.here)} candidates here, 4 in the bundle; " \
           f"{batch.matching} of {len(batch.here)} re-drawn candidates are in it." in batch.text()
