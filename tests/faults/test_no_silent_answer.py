"""Issue 53: no silent answer. An input a run was given and did not use is said where the user
looks (a library path that does not exist is an error on the command line and a warning at
``Session(...)``; one that holds nothing for the target is said); a shape cover never writes
into a folder of another run, nor into a file, and a refused ``msviz shapes`` leaves nothing
behind; the command line's numbers are refused naming what is wrong."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

import msviz
from msviz.cli import build_parser, main
from msviz.errors import MsvizError, MsvizWarning

# -- a library that is not there, or holds nothing for this target ------------------------------


def test_the_command_line_refuses_a_library_path_that_does_not_exist(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "lib" / "missing"
    code = main(["tune", "GMM-0", "--trials", "1", "--batch", "1", "--no-report", "--work-dir",
                 str(tmp_path / "wd"), "--library", str(missing)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"--library {missing}: does not exist" in err and "Traceback" not in err
    assert not (tmp_path / "wd").exists()  # refused before anything was tuned


def test_coverage_refuses_a_library_path_that_does_not_exist(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nothing-here"
    assert main(["coverage", "GMM-0", "--library", str(missing)]) == 2
    assert f"--library {missing}: does not exist" in capsys.readouterr().err


def test_a_session_warns_of_a_library_path_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "lib" / "missing"
    with pytest.warns(MsvizWarning, match=rf"library: {missing}: does not exist"):
        msviz.Session("GMM-0", work_dir=tmp_path / "wd", library=[missing], max_trials=1)


def test_a_session_warns_of_a_library_of_another_target(
        tuned: tuple[Path, Path], tmp_path: Path) -> None:
    """The library was tuned for this CPU; a session for a generic x86 CPU can use none of
    its records as they are: said when the session is made."""
    work_dir, _ = tuned
    generic = {"kind": "llvm", "mcpu": "x86-64", "num-cores": 1}
    with pytest.warns(MsvizWarning, match=r"library: wd: holds no record of .*x86-64"):
        msviz.Session("GMM-0", work_dir=tmp_path / "wd", library=[work_dir], max_trials=1,
                      target=generic)


# -- a shape cover's root -----------------------------------------------------------------------


def _family() -> msviz.models.shape_family.ShapeFamily:
    return msviz.shapes("GMM", sizes=[16, 32], dim="M")


def test_a_shape_cover_refuses_a_file_as_its_root(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    with pytest.raises(MsvizError, match=r"notes.txt is a file, not a folder"):
        msviz.tune_shapes(_family(), work_dir=a_file, trials=1, trials_per_batch=1)
    assert a_file.read_text() == "mine"


def test_a_shape_cover_refuses_the_work_dir_of_another_run(tuned: tuple[Path, Path],
                                                           tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(tuned[0], run)
    before = sorted(p.name for p in run.rglob("*"))
    with pytest.raises(MsvizError, match=r"run holds another run \(run: a work dir"):
        msviz.tune_shapes(_family(), work_dir=run, trials=1, trials_per_batch=1)
    root = tmp_path / "root"  # a folder holding another run's work dir
    shutil.copytree(tuned[0], root / "old")
    with pytest.raises(MsvizError, match=r"root holds another run \(old: a work dir"):
        msviz.tune_shapes(_family(), work_dir=root, trials=1, trials_per_batch=1)
    assert sorted(p.name for p in run.rglob("*")) == before


def test_a_refused_shapes_command_leaves_no_temp_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["shapes", "GMM", "--dim", "M", "--sizes", "16,32", "--batch", "0"]) == 2
    assert "trials_per_batch must be an int >= 1, got 0" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


# -- numbers on the command line ----------------------------------------------------------------


def test_a_large_time_budget_is_a_number_of_seconds() -> None:
    args = build_parser().parse_args(["tune", "GMM-0", "--time", "1e9"])
    assert args.time == 1e9
    assert build_parser().parse_args(["tune", "GMM-0", "--time", "1.5e3"]).time == 1500.0


@pytest.mark.parametrize(("argv", "said"), [
    (["shapes", "GMM", "--dim", "M", "--sizes", "16,32", "--weights", "-1,2"],
     "argument --weights: -1,2: each weight must be a number > 0"),
    (["tune", "GMM-0", "--trials", "-5"], "argument --trials: -5 is out of range"),
])
def test_a_negative_value_is_named_not_taken_for_a_flag(
        argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2 and said in err, err
    assert "expected one argument" not in err


# -- records that cannot be true never leave msviz ----------------------------------------------


@pytest.fixture
def with_impossible(tuned: tuple[Path, Path], tmp_path: Path) -> tuple[Path, int]:
    """A copy of the tiny run with one more record: its first, timed at 2 ns (a 128^3 matmul
    at 2 PFLOPS on this CPU: open flags it); and the number of records before it."""
    work_dir = tmp_path / "odd"
    shutil.copytree(tuned[0], work_dir)
    path = work_dir / "database_tuning_record.json"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first[1][1] = [2e-9]
    path.write_text("\n".join([*lines, json.dumps(first)]) + "\n")
    with pytest.warns(MsvizWarning, match=r"1 record\(s\) cannot be true"):
        run = msviz.open(work_dir)
    assert list(run.trials["status"])[-1] == "impossible"  # as open marks it
    return work_dir, len(lines)


def test_merge_keeps_out_a_record_that_cannot_be_true(with_impossible: tuple[Path, int],
                                                      tmp_path: Path) -> None:
    work_dir, n = with_impossible
    with pytest.warns(MsvizWarning, match=rf"skipped 1 record\(s\): .* line {n + 1}: cannot be "
                                          r"true \(.*GFLOPS .*is above"):
        result = msviz.merge([work_dir], tmp_path / "merged")
    assert result.records == n
    kept = (tmp_path / "merged" / "database_tuning_record.json").read_text().splitlines()
    assert len(kept) == n and all(json.loads(k)[1][1] != [2e-9] for k in kept)


def test_a_bundle_refuses_a_record_that_cannot_be_true(with_impossible: tuple[Path, int],
                                                       tmp_path: Path) -> None:
    work_dir, n = with_impossible
    out = tmp_path / "odd.zip"
    with pytest.raises(msviz.errors.BundleError,
                       match=rf"holds 1 record\(s\) that cannot be true \(line {n + 1}: "):
        msviz.bundle(work_dir, out)
    assert not out.exists()


def test_an_export_keeps_out_a_trial_that_cannot_be_true(with_impossible: tuple[Path, int],
                                                         tmp_path: Path) -> None:
    import pandas as pd

    work_dir, n = with_impossible
    with pytest.warns(MsvizWarning, match="cannot be true"):
        run = msviz.open(work_dir)
    with pytest.warns(MsvizWarning, match=rf"left out of the export: 1 trial\(s\) that cannot "
                                          rf"be true \(status 'impossible'\): trial {n}: "):
        run.export(tmp_path / "trials.csv")
    written = pd.read_csv(tmp_path / "trials.csv")
    assert len(written) == n and "impossible" not in set(written["status"])


# -- resources bounded by the host --------------------------------------------------------------


def _this_machines_cores() -> int:
    """Physical cores among the CPUs this process may use, counted here (not by msviz)."""
    import os

    import psutil

    return max(1, min(len(os.sched_getaffinity(0)), psutil.cpu_count(logical=False)))


def test_a_session_refuses_num_cores_above_this_machines(tmp_path: Path) -> None:
    cores = _this_machines_cores()
    for many in (cores + 1, 10**6):
        with pytest.raises(msviz.errors.TargetError,
                           match=rf"target num-cores={many:,} is above this machine's {cores} "
                                 r"core\(s\)"):
            msviz.Session("GMM-0", work_dir=tmp_path / "wd", max_trials=1,
                          target={"kind": "llvm", "num-cores": many})
    assert not (tmp_path / "wd").exists()
    msviz.Session("GMM-0", work_dir=tmp_path / "ok", max_trials=1,  # at most its cores: fine
                  target={"kind": "llvm", "num-cores": cores})


def test_the_command_line_names_num_cores_above_this_machines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["tune", "GMM-0", "--trials", "1", "--no-report", "--work-dir",
                 str(tmp_path / "wd"), "--target", '{"kind": "llvm", "num-cores": 1000000}'])
    err = capsys.readouterr().err
    assert code == 2 and "num-cores=1,000,000 is above this machine's" in err, err


def test_kernel_threads_never_exceed_this_machines_cores() -> None:
    from msviz import compat

    one = compat.make_target({"kind": "llvm", "num-cores": 1})
    if compat.kernel_threads(one) is None:
        pytest.skip("the user's TVM_NUM_THREADS is kept as it is")
    many = compat.make_target({"kind": "llvm", "num-cores": 10**6})
    assert int(many.attrs["num-cores"]) == 10**6  # a target for a larger machine is allowed
    assert compat.kernel_threads(many) == _this_machines_cores()
    assert compat.kernel_threads(one) == 1


# -- misleading messages ------------------------------------------------------------------------


@pytest.mark.parametrize(("paths", "said"), [
    (42, r"Library takes a path or a list of paths .*, not int 42"),
    ([42], r"Library takes a path .*: 42 \(int\) is not a path"),
    (b"runs", r"Library takes a path .*, not bytes"),
])
def test_a_library_of_something_else_than_paths_is_named(paths: object, said: str) -> None:
    with pytest.raises(TypeError, match=said):
        msviz.Library(paths)  # type: ignore[arg-type]


def test_a_spent_resume_suggests_a_budget_that_tunes_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The work dir holds 4 trials; resumed with --trials 2 nothing is measured, and the
    budget the message suggests (above the 4 held, not twice the 2 asked) does tune on."""
    wd = str(tmp_path / "wd")
    flags = ["tune", "GMM-0", "--batch", "2", "--work-dir", wd, "--no-report",
             "--min-repeat-ms", "0", "--population-size", "16", "--genetic-num-iters", "1"]
    assert main([*flags, "--trials", "4"]) == 0
    capsys.readouterr()
    assert main([*flags, "--trials", "2", "--resume"]) == 2
    err = capsys.readouterr().err
    assert f"the work dir {wd} already holds 4 trials, at or over this budget of 2" in err, err
    suggested = err.split("(e.g. ")[1].split(")")[0].split()
    assert suggested == ["--trials", "6"]
    assert main([*flags, *suggested, "--resume"]) == 0
    assert len(msviz.open(wd).trials) == 6


def _write_cover(root: Path, edit: object = None) -> None:
    import dataclasses

    from tests.views.test_view_shapes import cover

    data = dataclasses.asdict(cover())
    data.pop("root", None)
    if callable(edit):
        edit(data)
    root.mkdir()
    (root / "shapes.json").write_text(json.dumps(data))


def test_a_shape_cover_with_a_latency_as_text_is_refused_on_open(tmp_path: Path) -> None:
    _write_cover(tmp_path / "good")
    good = msviz.open_shapes(tmp_path / "good")
    assert good.matrix().shape == (2, 4)  # the untouched file opens and draws

    def as_text(data: dict) -> None:
        data["cells"][2]["us"] = "40.0"

    _write_cover(tmp_path / "edited", as_text)
    with pytest.raises(msviz.errors.WorkDirError,
                       match=r"shapes.json in .*edited does not read as a shape cover: "
                             r"cells\[2\] us='40.0' is not a number \(or null\)"):
        msviz.open_shapes(tmp_path / "edited")

    def trials_as_text(data: dict) -> None:
        data["tuned"][0]["trials"] = "8"

    _write_cover(tmp_path / "edited2", trials_as_text)
    with pytest.raises(msviz.errors.WorkDirError,
                       match=r"tuned\[0\] trials='8' is not a whole number"):
        msviz.open_shapes(tmp_path / "edited2")


def test_a_run_tuned_for_another_architecture_is_not_retimed_and_says_why(
        tuned: tuple[Path, Path], tmp_path: Path) -> None:
    """Its kernels cannot run here: said as that (not the builder's "An exception
    occurred"), and the environment names the other machine (not "CPU the same")."""
    import platform

    from msviz.workflows.reproduce import reproduce

    here = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                       platform.machine().lower())
    other = "aarch64" if here != "aarch64" else "x86_64"
    work_dir = tmp_path / "arm"
    shutil.copytree(tuned[0], work_dir)
    sidecar = work_dir / "msviz_sidecar.jsonl"
    lines = []
    for text in sidecar.read_text().splitlines():
        entry = json.loads(text)
        if entry.get("kind") == "environment":
            entry["target"]["mtriple"] = f"{other}-linux-gnu"
            entry["host"]["machine"] = other
        lines.append(json.dumps(entry))
    sidecar.write_text("\n".join(lines) + "\n")
    got = reproduce(work_dir, redraw=False)
    assert len(got.kernels) == 1
    why = f"not re-timed: its kernels were built for {other}, and this machine is {here}"
    assert all(e.startswith(why) for e in got.kernels["error"]), list(got.kernels["error"])
    assert got.kernels["here_us"].isna().all()
    text = got.text()
    assert f"machine: {other} -> {platform.machine()}" in text
    assert "are the same here" not in text and "An exception occurred" not in text


# -- this round's new entries: the ONNX export for other runtimes -------------------------------


def test_the_onnx_export_replaces_nothing_and_names_bad_inputs(tmp_path: Path) -> None:
    from msviz.models import export_onnx

    mine = tmp_path / "mine.onnx"
    mine.write_bytes(b"someone's file")
    with pytest.raises(msviz.errors.WorkloadError, match=r"mine.onnx exists: pass overwrite=True"):
        export_onnx("mlp", mine)
    assert mine.read_bytes() == b"someone's file"
    with pytest.raises(msviz.errors.WorkloadError, match="it is a folder"):
        export_onnx("mlp", tmp_path)
    with pytest.raises(msviz.errors.WorkloadError, match=r"its folder .*nowhere does not exist"):
        export_onnx("mlp", tmp_path / "nowhere" / "m.onnx")
    for seed in (-1, 1.5, True):
        with pytest.raises(ValueError, match=r"seed must be an int >= 0"):
            export_onnx("mlp", tmp_path / "s.onnx", seed=seed)  # type: ignore[arg-type]
    written = export_onnx("mlp", mine, overwrite=True)
    assert written == mine and mine.read_bytes() != b"someone's file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.onnx"]  # no temp file left
