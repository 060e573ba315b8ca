"""``msviz.build``: the model a work dir tuned, built with its records, run, timed, exported and
loaded by TVM alone (:mod:`msviz.workflows.deploy`), and ``msviz build`` from a terminal. Real
TVM: the catalogue's mlp tuned once (8 trials), its outputs checked against numpy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import msviz
from msviz.cli import main
from msviz.engine.measure import requests
from msviz.records import database as db_files
from msviz.workflows import deploy
from tests.conftest import lock_free_elsewhere
from tests.numpy_models import forward


@pytest.fixture(scope="module")
def tuned(tuned_mlp: Any) -> Any:
    return tuned_mlp  # tests/conftest.py: shared with test_bad_inputs_deploy.py


@pytest.fixture(scope="module")
def model(tuned: Any) -> msviz.TunedModel:
    return msviz.build(tuned.work_dir)


def _inputs(seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((4, 64)).astype("float32")


def test_outputs_match_numpy_and_say_what_they_hold(tuned: Any,
                                                    model: msviz.TunedModel) -> None:
    x = _inputs()
    out = model(x)
    assert isinstance(out, np.ndarray) and out.shape == (4, 10) and out.dtype == np.float32
    np.testing.assert_allclose(out, forward("mlp", x), rtol=1e-4, atol=1e-5)
    # the tasks with no successful trial, read from the records independently
    trials = msviz.open(tuned.work_dir).trials
    ok = set(trials[trials["status"] == "ok"]["task"])
    assert sorted(model.tasks) == sorted(t.name for t in tuned.tasks)
    assert sorted(model.fallback) == sorted(set(model.tasks) - ok)
    assert 0 < len(model.fallback) < len(model.tasks)  # a budget of 8: some tuned, some not
    text = repr(model)
    assert text.startswith("TunedModel('mlp', graph='expert', tasks tuned "
                           f"{len(model.tasks) - len(model.fallback)} of {len(model.tasks)}")
    assert all(name in text for name in model.fallback) and "target=" in text
    # the Session and its Run give the same build
    for source in (tuned, msviz.open(tuned.work_dir)):
        again = msviz.build(source)
        assert again.fallback == model.fallback and again.graph == "expert"
        np.testing.assert_array_equal(again(x), out)


def test_bad_inputs_are_named(model: msviz.TunedModel) -> None:
    with pytest.raises(TypeError, match=r"model 'mlp' takes 1 input\(s\) \(x: \(4, 64\) "
                                        r"float32\), got 2"):
        model(_inputs(), _inputs())
    with pytest.raises(ValueError, match=r"input 'x' of model 'mlp': expected shape \(4, 64\) "
                                         r"float32, got shape \(4, 63\)"):
        model(_inputs()[:, :63])
    with pytest.raises(ValueError, match=r"input 'x' of model 'mlp': expected dtype float32, "
                                         r"got float64"):
        model(_inputs().astype("float64"))


LOAD_WITH_TVM_ALONE = """
import json, sys
import numpy as np
import tvm
from tvm import relax
lib = tvm.runtime.load_module("model.so")
vm = relax.VirtualMachine(lib, tvm.cpu())
spec = json.load(open("model.json"))
out = vm[spec["entry"]](tvm.runtime.tensor(np.load("x.npy")))
np.save("y.npy", out.numpy())
assert not any(m == "msviz" or m.startswith("msviz.") for m in sys.modules), "msviz imported"
"""


def _fresh(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # no msviz on the path
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def test_export_loads_in_tvm_alone(model: msviz.TunedModel, tmp_path: Path) -> None:
    out = model.export(tmp_path / "deployed")
    assert sorted(p.name for p in out.iterdir()) == ["load.py", "model.json", "model.so"]
    spec = json.loads((out / "model.json").read_text())
    assert spec["inputs"] == [{"name": "x", "shape": [4, 64], "dtype": "float32"}]
    assert (spec["entry"], spec["graph"], spec["library"]) == ("main", "expert", "model.so")
    assert spec["fallback"] == model.fallback and spec["target"] == str(model.target)
    x = _inputs(5)
    np.save(out / "x.npy", x)
    proc = _fresh(["-c", LOAD_WITH_TVM_ALONE], out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    np.testing.assert_array_equal(np.load(out / "y.npy"), model(x))
    np.testing.assert_allclose(np.load(out / "y.npy"), forward("mlp", x), rtol=1e-4, atol=1e-5)
    proc = _fresh(["load.py"], out)  # the script written beside it runs too
    assert proc.returncode == 0 and proc.stdout.strip() == "(4, 10) float32", proc.stderr[-2000:]


def test_export_is_whole_or_nothing(model: msviz.TunedModel, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out"
    target.mkdir()  # an empty directory is written into
    model.export(target)
    with pytest.raises(msviz.WriteError, match=r"out: it exists and is not an empty directory "
                                               r"\(pass overwrite=True"):
        model.export(target)
    (target / "model.so").write_bytes(b"old")
    model.export(target, overwrite=True)
    assert (target / "model.so").stat().st_size > 100

    def fail(exe: Any, path: Any) -> None:
        Path(path).write_bytes(b"half")
        raise RuntimeError("compiler failed")

    monkeypatch.setattr(requests.deploy, "export_build", fail)
    with pytest.raises(RuntimeError, match="compiler failed"):
        model.export(tmp_path / "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing half-written


def test_time_is_paired_and_holds_the_lock(model: msviz.TunedModel,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    held = []
    real = requests.compare_builds

    def spy(*args: Any, **kw: Any) -> Any:
        held.append(not lock_free_elsewhere(requests.MEASURING_LOCK))
        return real(*args, **kw)

    monkeypatch.setattr(requests, "compare_builds", spy)
    result = model.time(rounds=2, draws=1, number=2, repeat=1, min_repeat_ms=0)
    assert held == [True]
    assert result.names == ("untuned", "tuned") and len(result.ratio) == 2
    assert all(t > 0 for t in result.a_us + result.b_us) and result.low <= result.high
    assert "tuned / untuned: paired median" in str(result)
    with pytest.raises(ValueError, match=r"TunedModel\.time: "):
        model.time(number=0)


def _copy(work_dir: Path, to: Path) -> Path:
    shutil.copytree(work_dir, to, ignore=shutil.ignore_patterns("*.lock"))
    return to


def test_bad_sources_are_named(tuned: Any, tmp_path: Path) -> None:
    with pytest.raises(msviz.WorkDirError, match=r"nowhere is not a work dir \(it does not "
                                                 r"exist\)"):
        msviz.build(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(msviz.WorkDirError, match=r"empty is not a work dir \(it holds no "):
        msviz.build(tmp_path / "empty")
    blank = _copy(tuned.work_dir, tmp_path / "blank")
    (blank / db_files.RECORD_FILE).write_text("")
    with pytest.raises(msviz.MsvizError, match=r"blank holds no tuning record: there is "
                                               r"nothing of it to build"):
        msviz.build(blank)
    with pytest.raises(msviz.MsvizError, match=r"mlp-wd was tuned for 'mlp', none of them a task "
                                               r"of the model built \('resnet-block'"):
        msviz.build(tuned.work_dir, model="resnet-block")
    # a PrimFunc's work dir: its environment line names no model
    prim = _copy(tuned.work_dir, tmp_path / "prim")
    sidecar = next(prim.glob("*sidecar*.jsonl"))
    lines = [json.loads(x) for x in sidecar.read_text().splitlines() if x.strip()]
    lines = [{**x, "model": None} if x.get("kind") == "environment" else x for x in lines]
    sidecar.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(msviz.MsvizError, match=r"prim was tuned for one PrimFunc, not a model: "
                                               r"use msviz.open\(.*\)\.best\(\)"):
        msviz.build(prim)
    with pytest.raises(TypeError, match="takes a work dir, a Session or a Run, got int"):
        msviz.build(3)


def test_cli_build(tuned: Any, model: msviz.TunedModel, tmp_path: Path,
                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli-out"
    assert main(["build", str(tuned.work_dir), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}/: model.so" in printed
    assert f"fallback (untuned schedule): {', '.join(model.fallback)}" in printed
    assert sorted(p.name for p in out.iterdir()) == ["load.py", "model.json", "model.so"]
    assert main(["build", str(tuned.work_dir), "-o", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["build", str(tuned.work_dir), "-o", str(out), "--overwrite"]) == 0
    assert main(["build", str(tmp_path / "missing"), "-o", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("msviz: error: ") and "missing is not a work dir" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "x").exists()


def test_build_is_in_the_package() -> None:
    assert msviz.build is deploy.build and "build" in msviz.__all__
