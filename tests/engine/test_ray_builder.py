"""Builds on a Ray cluster (msviz.ray_builder), on a local Ray instance of 2 CPUs started once
for the module: sessions, build errors and timeouts as the local builder's, workers killed
mid-build, addresses that do not answer, Ray not installed."""

from __future__ import annotations

import functools
import ipaddress
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import pytest

import msviz
from msviz import compat, workloads
from msviz.cli import main
from msviz.engine.measure.builder import WarmLocalBuilder
from msviz.engine.measure.service import MeasuringService
from msviz.records.row import status
from msviz.records.sidecar import read_sidecar
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ray() -> Any:
    """Ray, with a local instance of 2 CPUs (shut down after the module's tests)."""
    ray = require("ray", "msviz[ray]")
    if ray.is_initialized():
        ray.shutdown()
    # The build hooks below are defined here: Ray sends them to its workers by value (a worker
    # cannot import this test module).
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    msviz.ray_builder(num_cpus=2)
    assert ray.cluster_resources()["CPU"] == 2
    yield ray
    ray.shutdown()


# -- build hooks run on the Ray workers -------------------------------------------------------


def _worker_pid() -> int:
    return os.getpid()


def _sleep_then_build(mod: Any, target: Any, params: Any) -> Any:
    time.sleep(300)  # slow on purpose: past any build timeout below it, on any host
    return compat.fast_build(mod, target, params)


def _die_while_tokens_last(token_dir: str, mod: Any, target: Any, params: Any) -> Any:
    """Each of the first len(tokens) builds takes a token and kills its own worker process
    (SIGKILL, as the OOM killer does); the builds after them build."""
    for name in sorted(os.listdir(token_dir)):
        try:
            os.remove(os.path.join(token_dir, name))
        except FileNotFoundError:  # another worker took it
            continue
        os.kill(os.getpid(), signal.SIGKILL)
    return compat.fast_build(mod, target, params)


def _gmm_output(func: Any) -> tuple[np.ndarray, np.ndarray]:
    """GMM-0 (Z = X @ Y, 1x128x128 float32) run by ``func``, and numpy's answer."""
    rng = np.random.default_rng(7)
    a, b = rng.random((1, 128, 128), "float32"), rng.random((1, 128, 128), "float32")
    dev = compat.device_of(compat.make_target("llvm"))
    c = compat.to_tensor(np.zeros((1, 128, 128), "float32"), dev)
    func(compat.to_tensor(a, dev), compat.to_tensor(b, dev), c)
    return c.numpy(), a @ b


# -- sessions ---------------------------------------------------------------------------------


def test_a_16_trial_session_built_on_ray_measures_16_and_its_best_kernel_is_right(
    ray: Any, tmp_path: Path, tiny_session: Any
) -> None:
    # build timeouts count from each task's submission, a new Ray worker's start-up (importing
    # TVM) included: generous ones (a build that works is not waited for), here and below
    builder = msviz.ray_builder(timeout=300)
    wd = tmp_path / "wd"
    session = tiny_session(wd, builder=builder, max_trials=16, trials_per_batch=8)
    session.start()
    assert session.wait(600) == "finished", session.end_reason
    assert session.trials_done == 16
    trials = msviz.open(wd).trials
    assert len(trials) == 16 and (trials["status"] == "ok").all()
    built = session.events.of_kind("built")
    assert builder.batches == len(built) >= 2  # every batch was built by the Ray builder
    assert sum(len(e["results"]) for e in built) == 16
    best = msviz.open(wd).best()
    assert best.latency_us == trials["latency_us"].min()
    # the engine's result check passed on the best candidate (its Ray-built artifact)...
    assert trials.loc[trials["latency_us"].idxmin(), "check"] == "ok"
    # ...and, built again here from its stored trace, it computes X @ Y
    out, expected = _gmm_output(compat.fast_build(best.mod, session.target))
    np.testing.assert_allclose(out, expected, rtol=1e-4)


def test_workers_killed_mid_build_give_infra_errors_never_trained_nor_counted(
    ray: Any, tmp_path: Path, tiny_session: Any
) -> None:
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    for i in range(2):
        (tokens / f"t{i}").touch()
    builder = msviz.ray_builder(timeout=300,
                                f_build=functools.partial(_die_while_tokens_last, str(tokens)))
    wd = tmp_path / "wd"
    session = tiny_session(wd, builder=builder, max_trials=8, trials_per_batch=4)
    session.start()
    assert session.wait(600) == "finished", session.end_reason
    assert not list(tokens.iterdir())  # 2 builds killed their workers
    trials = msviz.open(wd).trials
    side = read_sidecar(wd).trials
    kinds = [side[line]["error_kind"] for line in trials["line"]]
    lost = trials[[k == "infra" for k in kinds]]
    assert len(lost) == 2 and len(trials) == 10  # the 2 lost builds, and 8 real trials
    assert (lost["status"] == "infra_error").all()
    assert lost["error"].str.startswith(
        "RayBuilder: infrastructure error (WorkerCrashedError): the worker building it was "
        "lost").all()
    assert (trials.drop(lost.index)["status"] == "ok").all()
    assert session.trials_done == 8  # infrastructure failures do not count
    updates = session.events.of_kind("cost_model_updated")
    assert updates[-1]["samples"] == 8  # only real measurements train the model
    assert sum(u["trained_on"] for u in updates) == 8
    # the lost candidates are not in the search's measured set: they may be offered again
    assert len(session.tuners[0].search.measured) == 8


def test_a_build_function_the_workers_cannot_import_is_an_infra_error(
    ray: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "only_on_this_host.py").write_text(
        "from msviz import compat\n\n"
        "def build(mod, target, params):\n"
        "    return compat.fast_build(mod, target, params)\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver imports it; Ray's workers cannot
    import only_on_this_host

    builder = msviz.ray_builder(timeout=300, f_build=only_on_this_host.build)
    mod = workloads.get("GMM-0").mod
    measurer = MeasuringService(compat.make_target("llvm"), builder=builder)
    try:
        (built,) = measurer.build([mod])
    finally:
        measurer.close()
    assert built.infra and built.artifact is None
    assert built.error.startswith("RayBuilder: infrastructure error (")
    assert "needs the same TVM and msviz" in built.error
    assert "only_on_this_host" in built.error and "\x1b[" not in built.error


# -- errors as the local builder's --------------------------------------------------------------


def _unbuildable() -> Any:
    """GMM-0 with a loop bound to threadIdx.x: LLVM's CPU code generator rejects it."""
    sch = compat.Schedule(workloads.get("GMM-0").mod)
    sch.bind(sch.get_loops(sch.get_sblock("Z"))[1], "threadIdx.x")
    return sch.mod


def test_a_candidate_that_fails_to_build_fails_as_with_the_local_builder(ray: Any) -> None:
    target = compat.make_target("llvm")
    mods = [_unbuildable(), workloads.get("GMM-0").mod]
    args = compat.ArgInfo.from_entry_func(mods[1], remove_preproc=True)
    seen = {}
    for name, builder in (("local", WarmLocalBuilder(max_workers=1, timeout_sec=30)),
                          ("ray", msviz.ray_builder(timeout=300))):
        measurer = MeasuringService(target, builder=builder,
                            evaluator_config={"number": 1, "repeat": 1, "min_repeat_ms": 0})
        try:
            built = measurer.build(mods)
            results = measurer.run(built, [args, args])
            measurer.cleanup(built)
        finally:
            measurer.close()
        assert results[1].ok, (name, results[1])  # the good candidate builds and runs
        bad = results[0]
        seen[name] = (built[0].infra, bad.error_kind, status(None, bad.error_kind, bad.error),
                      bad.error.splitlines()[0], bad.error.strip().splitlines()[-1])
    assert seen["ray"] == seen["local"] == (
        False, "build", "build_error", "LocalBuilder: An exception occurred",
        "tvm.error.InternalError: not implemented")


def test_a_build_past_its_timeout_is_killed_and_reported_as_the_local_builder_does(
    ray: Any,
) -> None:
    builder = msviz.ray_builder(timeout=1.5, f_build=_sleep_then_build)
    inputs = [compat.ms.builder.BuilderInput(workloads.get("GMM-0").mod,
                                             compat.make_target("llvm"))] * 2
    start = time.perf_counter()
    results = builder.build(inputs)
    took = time.perf_counter() - start
    assert [(r.artifact_path, r.error_msg) for r in results] == [
        (None, "LocalBuilder: Timeout, killed after 1.5 seconds")] * 2
    assert builder.timeouts == 2
    # not the 300 s the builds would sleep (a generous bound: the 1.5 s runs from each task's
    # submission, which a loaded host may start late)
    assert took < 120
    assert status(None, "build", results[0].error_msg) == "build_timeout"
    again = msviz.ray_builder(timeout=300).build(inputs)  # the killed workers were replaced
    assert [r.error_msg for r in again] == [None, None]
    for r in again:
        out, expected = _gmm_output(compat.load_module(r.artifact_path))
        np.testing.assert_allclose(out, expected, rtol=1e-4)


# -- the local instance's network -------------------------------------------------------------


def _is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    return (getattr(address, "ipv4_mapped", None) or address).is_loopback  # ::ffff:127.0.0.1


def test_the_local_instance_listens_on_loopback_only(ray: Any) -> None:
    # The module's instance, started by msviz.ray_builder after `import ray` (as a notebook
    # may). Its processes are this one (the driver) and its descendants: gcs_server, raylet,
    # agents, monitor, workers. Their listening TCP sockets, read from the kernel, not from the
    # arguments msviz gave Ray.
    worker = ray.get(ray.remote(_worker_pid).remote())  # one tiny task: a worker that ran it
    me = psutil.Process()
    names = {}
    for proc in [me, *me.children(recursive=True)]:
        try:
            names[proc.pid] = proc.name()
        except psutil.Error:  # ended meanwhile (it listens no more)
            pass
    listening = [(names[c.pid], c.pid, c.laddr.ip, c.laddr.port)
                 for c in psutil.net_connections("tcp")
                 if c.status == psutil.CONN_LISTEN and c.pid in names]
    ports: dict[int, set[int]] = {}
    for _, pid, _, port in listening:
        ports.setdefault(pid, set()).add(port)
    # they are the instance's: its GCS port, the raylet, the worker and the driver listen
    # (else an empty list would pass the check below)
    gcs = [pid for pid, name in names.items() if name == "gcs_server"]
    raylet = [pid for pid, name in names.items() if name == "raylet"]
    assert len(gcs) == 1 and len(raylet) == 1, names
    gcs_port = int(ray.get_runtime_context().gcs_address.rsplit(":", 1)[1])
    assert gcs_port in ports.get(gcs[0], set()), listening
    for pid in (raylet[0], worker, me.pid):
        assert ports.get(pid), (pid, listening)
    beyond = [entry for entry in listening if not _is_loopback(entry[2])]
    assert not beyond, f"listening beyond loopback (process, pid, address, port): {beyond}"
    # msviz set Ray's "clusters off" for the start only: a later ray.init is as Ray made it
    # (the value Ray reads from the environment when imported)
    default = sys.platform not in ("darwin", "win32")
    setting = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", str(default)).lower()
    assert ray._private.ray_constants.ENABLE_RAY_CLUSTER == (setting in ("1", "true"))


# -- bad input --------------------------------------------------------------------------------


def test_an_address_that_does_not_answer_fails_clearly_within_the_timeout(ray: Any) -> None:
    # a refused connection fails at once, not after the timeout: a timeout of 120 s, and a
    # bound far below it that no host is slow enough to reach
    start = time.perf_counter()
    with pytest.raises(msviz.RayClusterError, match=r"no Ray cluster answers at 127\.0\.0\.1:1"):
        msviz.ray_builder("127.0.0.1:1", connect_timeout=120)
    assert time.perf_counter() - start < 60
    with pytest.raises(ValueError, match="not HOST:PORT"):
        msviz.ray_builder("10.0.0.5")
    with pytest.raises(ValueError, match="num_cpus"):
        msviz.ray_builder("127.0.0.1:1", num_cpus=2)


def test_a_port_that_answers_but_is_no_ray_head_fails_within_the_timeout(tmp_path: Path) -> None:
    require("ray", "msviz[ray]")
    # a fresh process: ray.init is left running there (Ray cannot cancel it)
    script = textwrap.dedent("""
        import socket, sys, time
        import msviz, ray  # imported before the clock starts: the timeout is for connecting
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(8)  # accepts TCP connections, says nothing
        address = f"127.0.0.1:{server.getsockname()[1]}"
        start = time.perf_counter()
        try:
            msviz.ray_builder(address, connect_timeout=3)
        except msviz.RayClusterError as err:
            print(f"{time.perf_counter() - start:.2f}", address, err, sep="\\n", flush=True)
            sys.exit(0)
        sys.exit(1)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    took, address, message = proc.stdout.split("\n", 2)
    # at least the timeout; past it msviz gives ray.init no grace and raises at once (the
    # upper bound only has to catch a wait that ignores the timeout: generous for a loaded host)
    assert 3 <= float(took) < 30
    assert f"could not connect to the Ray cluster at {address} within 3 s" in message


def test_without_ray_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(msviz.MissingExtraError, match=r"pip install msviz\[ray\]"):
        msviz.ray_builder()
    with pytest.raises(ImportError):  # catchable as what it is
        msviz.ray_builder("10.0.0.5:6379")


# -- the command line -------------------------------------------------------------------------


def test_cli_ray_flag_builds_on_ray_and_a_dead_address_is_a_clear_error(
    ray: Any, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["tune", "GMM-0", "--ray", "127.0.0.1:1", "--trials", "4"]) == 2
    assert "msviz: error: no Ray cluster answers at 127.0.0.1:1" in capsys.readouterr().err
    code = main(["tune", "GMM-0", "--ray", "local", "--trials", "4", "--batch", "4",
                 "--population-size", "16", "--genetic-num-iters", "1", "--min-repeat-ms", "0",
                 "--no-report", "--work-dir", str(tmp_path / "wd")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "msviz: building on Ray (a local instance, 2 CPUs)" in out
    trials = msviz.open(tmp_path / "wd").trials
    assert len(trials) == 4 and (trials["status"] == "ok").all()


def test_a_builder_whose_ray_was_shut_down_says_so_and_starts_nothing(ray: Any) -> None:
    # the module's last test: it shuts the module's Ray instance down
    builder = msviz.ray_builder()
    ray.shutdown()
    measurer = MeasuringService(compat.make_target("llvm"), builder=builder)
    (built,) = measurer.build([workloads.get("GMM-0").mod])
    assert built.infra and "no longer connected to Ray" in built.error
    assert not ray.is_initialized()  # the builder did not start an instance of its own
