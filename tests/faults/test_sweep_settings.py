"""The last bad inputs of issue 41's sweep, each refused where it enters and named: a tile or
decision ``why_not`` cannot force (a zero factor killed the process in TVM), measurement
settings (the evaluator, timeouts, ``min_repeat_ms``, a target's ``num-cores``), an empty work
dir, a resume with no budget left, a restriction of a session with no trials, a Ray address out
of range or a local Ray open to the network, ``open_many`` of one path, and ``compute_at`` of a
block the workload lacks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import msviz
from msviz.errors import DecisionError, TargetError

# -- why_not: what with_decisions refuses, refused before TVM sees it ---------------------------


@pytest.mark.parametrize("want", [
    "tile={'j': [1, 0, 1, 128]}",
    "decision=(8, [1, 0, 1, 128])",
    "trial=True, tile={'j': [1, 0, 1, 128]}",
])
def test_why_not_refuses_a_zero_factor_without_crashing(want: str, tmp_path: Path) -> None:
    # in a subprocess: before the fix TVM divides by zero (SIGFPE) and would take pytest with it
    script = textwrap.dedent(f"""
        import sys
        import msviz
        def ask(trial=False, **want):
            if trial:
                session = msviz.Session("GMM-0", max_trials=2, trials_per_batch=2,
                                        work_dir={str(tmp_path / 'wd')!r})
                session.start()
                assert session.wait() == "finished", session.end_reason
                return session.open().trial(0).why_not(**want)
            return msviz.why_not("GMM-0", **want)
        try:
            ask({want})
        except msviz.DecisionError as err:
            print(err)
            sys.exit(3)
        print("no error")
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 3, (done.returncode, done.stdout, done.stderr[-2000:])
    said = done.stdout
    assert said.startswith("why_not(tile={'j': [1, 0, 1, 128]})" if "tile" in want else
                           "why_not(decision=(8, [1, 0, 1, 128]))"), said
    assert "(SamplePerfectTile of j): [1, 0, 1, 128] has a factor below 1. Allowed: 4 " \
           "positive integers whose product is 128" in said


@pytest.mark.parametrize(("want", "said"), [
    ({"tile": {"j": [3, 3, 3, 3]}}, "[3, 3, 3, 3] multiplies to 81, not to the loop extent 128"),
    ({"tile": {"j": [2, 64]}}, "[2, 64] has 2 factors, not 4"),
    ({"tile": {"j": [1, -2, -1, 64]}}, "[1, -2, -1, 64] has a factor below 1"),
    ({"tile": {"j": ["a", 1, 1, 128]}}, "['a', 1, 1, 128] is not a list of integers"),
    ({"decision": (18, 9)}, "9 is not a valid choice. Allowed: an index 0..3 into the "
                            "candidates [0, 16, 64, 512]"),
])
def test_why_not_refuses_what_with_decisions_refuses(want: dict, said: str) -> None:
    with pytest.raises(DecisionError, match=r"^why_not") as err:
        msviz.why_not("GMM-0", **want)
    assert said in str(err.value)


def test_why_not_still_forces_an_innermost_factor_never_sampled() -> None:
    big = msviz.why_not("GMM-0", tile={"j": [1, 1, 1, 128]})
    assert (big.possible, big.blocked_by) == (False, "SamplePerfectTile")
    assert "innermost factor 128 > max_innermost_factor 64" in big.reason and big.schedule


def test_why_not_compute_at_of_a_missing_block_names_it() -> None:
    got = msviz.why_not("GMM-0", compute_at=("X", "y"))
    assert (got.possible, got.blocked_by) == (False, "compute_at")
    assert got.reason == "no block X in the workload (its blocks: Z)"
    assert "AutoInline" not in got.reason


# -- measurement settings: checked when the session or command is made --------------------------


@pytest.mark.parametrize(("options", "error", "said"), [
    ({"evaluator_config": {"number": -1}}, ValueError,
     "evaluator_config number=-1 is out of range: it must be from 1 to 100,000"),
    ({"evaluator_config": {"number": 0}}, ValueError, "evaluator_config number=0 is out of range"),
    ({"evaluator_config": {"repeat": 0}}, ValueError,
     "evaluator_config repeat=0 is out of range: it must be from 1 to 1,000"),
    ({"evaluator_config": {"number": 1.5}}, TypeError,
     "evaluator_config number must be an int from 1 to 100,000, not float 1.5"),
    ({"evaluator_config": {"repeat": True}}, TypeError, "evaluator_config repeat must be an int"),
    ({"evaluator_config": {"numbr": 2}}, TypeError,
     "evaluator_config has no 'numbr'; its keys: number, repeat, min_repeat_ms"),
    ({"evaluator_config": [3, 1]}, TypeError,
     "evaluator_config must be a dict or an EvaluatorConfig, not list"),
    ({"evaluator_config": {"min_repeat_ms": -5}}, ValueError,
     "evaluator_config min_repeat_ms=-5 is out of range: it must be from 0 to 600,000"),
    ({"evaluator_config": {"min_repeat_ms": 100_000_000}}, ValueError,
     "evaluator_config min_repeat_ms=100000000 is out of range"),
    ({"evaluator_config": {"min_repeat_ms": 40_000}}, ValueError,
     "evaluator_config min_repeat_ms=40000 x repeat=1 times each candidate for at least 40 s, "
     "not within runner_timeout=30 s (every candidate would time out)"),
    ({"builder_timeout": -1}, ValueError,
     "builder_timeout must be a finite number of seconds > 0, got -1"),
    ({"runner_timeout": 0}, ValueError, "runner_timeout must be a finite number of seconds > 0"),
    ({"runner_timeout": float("nan")}, ValueError, "runner_timeout must be a finite number"),
    ({"runner_timeout": float("inf")}, ValueError, "runner_timeout must be a finite number"),
    ({"runner_timeout": "30"}, ValueError, "runner_timeout must be a finite number"),
    ({"target": {"kind": "llvm", "num-cores": 0}}, TargetError,
     "target num-cores 0 is not a number of cores: it must be >= 1"),
    ({"target": {"kind": "llvm", "num-cores": -1}}, TargetError,
     "target num-cores -1 is not a number of cores: it must be >= 1"),
])
def test_a_measurement_setting_out_of_range_is_refused_by_the_session(
        options: dict, error: type, said: str, tmp_path: Path) -> None:
    from msviz.engine.config import SessionConfig

    with pytest.raises(error) as raised:
        msviz.Session("GMM-0", max_trials=2, work_dir=tmp_path / "wd", **options)
    assert said in str(raised.value)
    assert not (tmp_path / "wd").exists()  # refused before anything was made
    with pytest.raises(error, match="^" + said.split(" ")[0]):
        SessionConfig(**options)


def test_many_cores_are_still_allowed() -> None:
    from msviz import compat

    made = compat.make_target({"kind": "llvm", "num-cores": 4096})
    assert int(made.attrs["num-cores"]) == 4096
    with pytest.raises(TargetError, match="num_cores must be an int >= 1"):
        compat.make_target("llvm", num_cores=-1)


@pytest.mark.parametrize(("argv", "said"), [
    (["--min-repeat-ms", "100000000"],
     "argument --min-repeat-ms: 100000000 is out of range: must be from 0 to 600,000"),
    (["--min-repeat-ms", "-1"], "argument --min-repeat-ms: -1 is out of range"),
    (["--target", '{"kind": "llvm", "num-cores": 0}'],
     "argument --target: target num-cores 0 is not a number of cores: it must be >= 1"),
    (["--target", '{"kind": "llvm", "num-cores": -1}'],
     "argument --target: target num-cores -1 is not a number of cores"),
    (["--work-dir", ""], "argument --work-dir: an empty path would tune into the current "
                         "directory"),
    (["--work-dir", "  "], "argument --work-dir: an empty path"),
])
def test_the_cli_refuses_a_bad_setting_naming_the_flag(
        argv: list, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from msviz.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        main(["tune", "GMM-0", "--trials", "2", "--no-report", *argv])
    assert done.value.code == 2
    assert said in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # nothing tuned into the current directory


def test_an_empty_work_dir_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(msviz.WorkDirError, match="work_dir '' is empty, which would put the "
                                                  "records in the current directory"):
        msviz.Session("GMM-0", max_trials=2, work_dir="")
    assert list(tmp_path.iterdir()) == []


# -- a resume with no budget left -----------------------------------------------------------------


def test_resume_into_a_dir_at_its_budget_says_so(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from msviz.cli import main

    wd = str(tmp_path / "wd")
    flags = ["tune", "GMM-0", "--trials", "2", "--batch", "2", "--work-dir", wd, "--no-report",
             "--min-repeat-ms", "0", "--population-size", "16", "--genetic-num-iters", "1"]
    assert main(flags) == 0
    capsys.readouterr()
    assert main([*flags, "--resume"]) == 2
    err = capsys.readouterr().err
    assert f"the work dir {wd} already holds 2 trials, at or over this budget of 2, so nothing " \
           "was measured: resume with a budget above 2 (e.g. --trials 4) to tune on" in err, err
    assert len(msviz.open(wd).trials) == 2


# -- a restriction of a session with no trials ----------------------------------------------------


def test_propose_restriction_before_start_says_there_are_no_trials(tmp_path: Path) -> None:
    from msviz.workflows.rerun import propose_restriction

    session = msviz.Session("GMM-0", max_trials=2, work_dir=tmp_path / "wd")
    with pytest.raises(ValueError, match=r"the session has no trials yet \(state idle\): start "
                                         r"it \(session.start\(\)\) and wait"):
        propose_restriction(session)


# -- Ray: a port in range --------------------------------------------------------------------------


@pytest.mark.parametrize("address", ["127.0.0.1:99999", "ray://10.0.0.5:0"])
def test_ray_builder_port_out_of_range(address: str) -> None:
    port = address.rsplit(":", 1)[1]
    with pytest.raises(ValueError, match=f"port {port} is out of range \\(a port is 1..65535\\)"):
        msviz.ray_builder(address)


# -- open_many of one path ------------------------------------------------------------------------


def test_open_many_of_one_path_is_one_run(stock_work_dirs: dict) -> None:
    wd = stock_work_dirs["GMM"]
    for one in (str(wd), wd, msviz.open(wd)):
        frame = msviz.open_many(one)
        assert list(frame["run"].cat.categories) == [wd.name]
        assert len(frame) == len(msviz.open(wd).trials)
    assert list(msviz.open_many(str(wd), names="base")["run"].cat.categories) == ["base"]
