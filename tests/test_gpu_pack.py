"""The CPU half of the GPU check (issue 42): packing what the GPU machine lacks into parts,
unpacking them into a site dir and importing msviz from it, and benchmarks/gpu_check.py without
a GPU (its clear exit, and its --dry-run building the CUDA code).

The real payload holds CPython 3.12 wheels downloaded by ``scripts/gpu/pack.py pack``; here the
same code packs distributions installed for the running interpreter (no network), with a tiny
part size so that the stream is split into several parts.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
PART = 96 * 1024  # bytes: forces msviz's source (~400 KiB compressed) into several parts


def _load_pack() -> Any:
    spec = importlib.util.spec_from_file_location("msviz_gpu_pack", REPO / "scripts/gpu/pack.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


pack = _load_pack()


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """msviz's source and cloudpickle (installed here), packed xz into small parts."""
    payload = tmp_path_factory.mktemp("payload")
    pack.pack(payload=payload, installed=["cloudpickle"], compress="xz", part_size=PART)
    return payload


def test_parts_are_split_under_the_limit_with_one_manifest(packed: Path) -> None:
    dirs = sorted(packed.glob("part-*"))
    assert len(dirs) >= 3  # split, not one file
    manifests = [json.loads((d / pack.MANIFEST).read_text()) for d in dirs]
    assert all(m == manifests[0] for m in manifests)
    manifest = manifests[0]
    assert len(manifest["parts"]) == len(dirs)
    assert manifest["installed"] == [f"cloudpickle=={_version('cloudpickle')}"]
    assert manifest["msviz_files"] > 50
    for d, part in zip(dirs, manifest["parts"], strict=True):
        files = [p for p in d.iterdir() if p.name != pack.MANIFEST]
        assert [f"{d.name}/{f.name}" for f in files] == [part["file"]]
        assert 0 < files[0].stat().st_size == part["bytes"] <= PART
    assert sum(p["bytes"] for p in manifest["parts"]) == manifest["bytes"]


def _version(dist: str) -> str:
    import importlib.metadata

    return importlib.metadata.version(dist)


def test_unpack_reassembles_the_tree(packed: Path, tmp_path: Path) -> None:
    site = pack.unpack(packed, tmp_path / "site")
    for rel in ("msviz/__init__.py", "msviz/compat/target.py", "msviz/static"):
        src, got = REPO / rel, site / rel
        if src.is_dir():
            assert sorted(p.name for p in got.iterdir()) == sorted(
                p.name for p in src.iterdir() if p.name != "__pycache__")
        else:
            assert got.read_bytes() == src.read_bytes()
    assert (site / "cloudpickle" / "__init__.py").is_file()
    assert not list(site.rglob("__pycache__"))
    assert list(site.glob("msviz-*.dist-info/METADATA"))
    # a second unpack of the same payload leaves it as it is
    stamp = (site / pack.STAMP).stat().st_mtime_ns
    pack.unpack(packed, site)
    assert (site / pack.STAMP).stat().st_mtime_ns == stamp


def test_msviz_imports_from_the_unpacked_dir(packed: Path, tmp_path: Path) -> None:
    """In a fresh interpreter without site (so no editable msviz, no .pth files), the unpacked
    dir first on PYTHONPATH and this environment's site-packages after it (standing in for the
    GPU machine's numpy and pandas): msviz and cloudpickle come from the unpacked dir."""
    site = pack.unpack(packed, tmp_path / "site")
    code = (
        "import json, msviz, cloudpickle\n"
        "from msviz import compat\n"
        "print(json.dumps({'msviz': msviz.__file__, 'cloudpickle': cloudpickle.__file__,\n"
        "  'target': compat.describe_target(compat.make_target('cuda'))}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), sysconfig.get_paths()["purelib"],
                                         sysconfig.get_paths()["platlib"]])
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(got["msviz"]).resolve() == (site / "msviz" / "__init__.py").resolve()
    assert Path(got["cloudpickle"]).resolve().is_relative_to(site.resolve())
    assert got["target"].startswith("cuda sm_90")


def test_unpack_names_missing_corrupted_and_mixed_parts(packed: Path, tmp_path: Path) -> None:
    payload = tmp_path / "payload"
    shutil.copytree(packed, payload)
    manifest = pack.read_manifest(payload)
    second = payload / manifest["parts"][1]["file"]
    data = bytearray(second.read_bytes())
    data[len(data) // 2] ^= 0xFF
    second.write_bytes(bytes(data))
    shutil.rmtree(payload / "part-3")
    with pytest.raises(pack.PayloadError, match=r"missing part-3/.*corrupted part-2/"):
        pack.unpack(payload, tmp_path / "site")
    assert not (tmp_path / "site").exists()  # nothing half-extracted
    # verify (what a payload run prints) says the same without failing
    assert pack.main(["verify", "--payload", str(payload)]) == 0
    # a part of another pack among them is refused by name
    (payload / "part-1" / pack.MANIFEST).write_text(json.dumps({**manifest, "sha256": "0"}))
    with pytest.raises(pack.PayloadError, match="different packs"):
        pack.read_manifest(payload)


def test_parts_of_a_plain_stream_unpack_in_python(tmp_path: Path) -> None:
    """gz through the standard library alone (the parts read back to back, no copy)."""
    payload = tmp_path / "payload"
    pack.pack(payload=payload, installed=["cloudpickle"], with_msviz=False, compress="gz",
              part_size=8 * 1024)
    assert len(list(payload.glob("part-*"))) >= 2
    site = pack.unpack(payload, tmp_path / "site")
    src = Path(importlib.util.find_spec("cloudpickle").origin)
    assert (site / "cloudpickle" / "__init__.py").read_bytes() == src.read_bytes()


def test_run_check_without_a_gpu_says_so(packed: Path, tmp_path: Path) -> None:
    """scripts/gpu/run_check.sh end to end, as on the device: unpack, then gpu_check.py, which
    finds no GPU here and stops with its message and exit status 3, msviz from the payload."""
    from msviz.engine.measure.runner import cuda_available

    if cuda_available() is None:
        pytest.skip("a GPU is here: the check would run for real")
    payload = tmp_path / "payload"
    shutil.copytree(packed, payload)
    env = {**os.environ, "GPU_PAYLOAD": str(payload), "OUT": str(tmp_path / "out"),
           "PYTHON": sys.executable, "MSVIZ_FROM_PAYLOAD": "1"}
    out = subprocess.run(["bash", str(REPO / "scripts/gpu/run_check.sh")], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 3, out.stdout[-2000:] + out.stderr[-2000:]
    assert "gpu_check: no GPU here (no CUDA device" in out.stdout
    assert "--dry-run builds the CUDA code" in out.stdout
    res = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert res["error"].startswith("no CUDA device")
    assert Path(res["msviz_file"]).resolve().is_relative_to((payload / "site").resolve())
    assert (tmp_path / "out" / "gpu_check.md").read_text().startswith("# msviz GPU check")


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """gpu_check.py --dry-run: the CUDA code built here, no GPU (about 30 s on 2 cores)."""
    out = tmp_path_factory.mktemp("gpu_dry")
    run = subprocess.run([sys.executable, str(REPO / "benchmarks/gpu_check.py"), "--dry-run",
                          "--out", str(out)], capture_output=True, text=True, timeout=400,
                         cwd=REPO)
    res = json.loads((out / "gpu_check.json").read_text())
    res["_rc"], res["_out"], res["_dir"] = run.returncode, run.stdout[-4000:], out
    return res


def test_dry_run_builds_cuda_and_tensor_core_code(dry_run: dict) -> None:
    assert dry_run["mode"] == "dry-run"
    assert dry_run["describe_target"].startswith("cuda sm_90")
    assert dry_run["steps"]["build_half"]["ok"], dry_run["_out"]
    gmm, fp16 = dry_run["dry_run"]["GMM-2"], dry_run["dry_run"]["fp16-matmul"]
    tc = fp16["tensor_core"]
    assert tc["trace_has_tc"]
    assert any(n.startswith("wmma_sync_") for n in tc["intrinsics"]), tc
    assert "wmma::" in tc["source_shows"]
    assert "wmma::mma_sync" in (dry_run["_dir"] / "fp16-matmul.cu").read_text()
    assert not gmm["tensor_core"]["trace_has_tc"]  # fp32: no tensor cores
    assert gmm["edit"]["source_differs"]
    if shutil.which("nvcc"):
        assert gmm["ptx_entry"] and gmm["edit"]["ptx_entry"] and fp16["ptx_entry"]
        assert "wmma.mma" in fp16["ptx_tc"]


def test_dry_run_trace_tab_rows_of_a_tensorized_trace(dry_run: dict) -> None:
    assert dry_run["steps"]["trace_tab_rows_tensorized"]["ok"], \
        dry_run["steps"]["trace_tab_rows_tensorized"]
    assert dry_run["_rc"] == 0
