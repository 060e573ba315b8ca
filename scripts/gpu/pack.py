"""Pack what the lent GPU machine lacks, in parts a device run can carry; unpack it there.

The GPU machine has Python 3.12, PyTorch, numpy, pandas and CUDA but no network and no TVM, and
one device run carries at most 64 MiB of files. This script:

``pack``
    downloads (or takes from ``--wheels DIR``) the wheels msviz needs there -- TVM, tvm-ffi,
    ml_dtypes, xgboost's CPU build and scipy (xgboost imports it), plotly and narwhals,
    psutil, cloudpickle, typing_extensions, packaging -- for CPython 3.12 on manylinux x86_64,
    extracts them into one site dir with msviz's own source, tars that (xz by default), and
    splits the stream into parts under ``--part-size`` (60 MiB), each in a folder of its own:
    ``gpu_payload/part-1/``, ``gpu_payload/part-2/`` ... (ignored by git). Each part folder
    holds ``MANIFEST.json`` (every part's size and sha256, the whole stream's sha256), so any
    one part says what the set must be. ``--from-installed DIST ...`` packs distributions
    installed for the running interpreter instead (no network; the CI test uses it).
``unpack``
    checks the parts against the manifest, reassembles the stream and extracts it into
    ``--target`` (default ``gpu_payload/site``); a second unpack of the same payload is a no-op.
``env``
    prints the ``PYTHONPATH`` that imports msviz and its dependencies from the unpacked dir.

Run on the device machine as ``scripts/gpu/run_check.sh`` does (see docs/measuring.md)::

    python scripts/gpu/pack.py pack                       # here: gpu_payload/part-{1,2}
    python scripts/gpu/pack.py unpack                     # there: gpu_payload/site
    PYTHONPATH=gpu_payload/site python -c "import msviz"

Only the standard library is used, so it runs on the bare device machine's Python.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as md
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAYLOAD = REPO / "gpu_payload"
MIB = 1 << 20
#: The most one part may hold: a device run carries at most 64 MiB in all (the working tree's
#: untracked files included), so a margin is left.
DEFAULT_PART_SIZE = 60 * MIB
STREAM = "payload.tar"
MANIFEST = "MANIFEST.json"
STAMP = ".msviz-payload.json"

#: What the GPU machine lacks (it has numpy, pandas, PyTorch): pinned where msviz pins them.
REQUIREMENTS = (
    "apache-tvm==0.27.0.post1",
    "apache-tvm-ffi==0.1.14.post1",
    "ml_dtypes",
    "typing_extensions",
    "xgboost-cpu==3.2.0",
    "scipy",
    "plotly==7.1.0",
    "narwhals",
    "packaging",
    "psutil",
    "cloudpickle",
)
PYTHON_VERSION = "3.12"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_12_x86_64",
             "manylinux2010_x86_64")


# -- gathering ------------------------------------------------------------------------------------

def download_wheels(dest: Path, requirements: Iterable[str] = REQUIREMENTS, *,
                    python_version: str = PYTHON_VERSION) -> list[Path]:
    """``pip download`` the binary wheels for ``python_version`` on manylinux x86_64 into
    ``dest`` (wheels already there are reused by pip). Returns the wheels, one per requirement."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--python-version", python_version, "--implementation", "cp", "-d", str(dest)]
    for plat in PLATFORMS:
        cmd += ["--platform", plat]
    cmd += list(requirements)
    subprocess.run(cmd, check=True)
    return wheels_for(dest, requirements)


def _norm(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def wheels_for(folder: Path, requirements: Iterable[str]) -> list[Path]:
    """The wheel in ``folder`` of each requirement (the newest file name if several)."""
    found = []
    for req in requirements:
        name = _norm(req.split("==")[0].split(">=")[0])
        match = sorted(p for p in folder.glob("*.whl") if _norm(p.name.split("-")[0]) == name)
        if not match:
            raise FileNotFoundError(f"no wheel of {req} in {folder}")
        found.append(match[-1])
    return found


def extract_wheel(wheel: Path, site: Path) -> None:
    """A wheel is a zip of its site-packages files: extract it, keeping executable bits."""
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            out = zf.extract(info, site)
            mode = info.external_attr >> 16
            if mode & 0o111:
                os.chmod(out, mode & 0o777)


def copy_installed(dist: str, site: Path) -> int:
    """Copy an installed distribution's files (its RECORD) into ``site``; returns how many."""
    files = md.distribution(dist).files or []
    n = 0
    for f in files:
        src = Path(f.locate()).resolve()
        rel = Path(str(f))
        skip = rel.is_absolute() or ".." in rel.parts or "__pycache__" in rel.parts
        if skip or not src.is_file():
            continue  # scripts in bin/, compiled caches
        out = site / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out)
        n += 1
    if not n:
        raise FileNotFoundError(f"{dist}: no installed files found")
    return n


def msviz_files(repo: Path = REPO) -> list[Path]:
    """msviz's package files in the working tree (tracked or not, never caches)."""
    root = repo / "msviz"
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def copy_msviz(site: Path, repo: Path = REPO) -> int:
    """msviz's source into ``site`` plus a dist-info, as an installed wheel would lay it out."""
    files = msviz_files(repo)
    for src in files:
        out = site / src.relative_to(repo)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out)
    version = "0.0.0"
    for line in (repo / "msviz" / "version.py").read_text().splitlines():
        if line.startswith("__version__"):
            version = line.split("=")[1].strip().strip("\"'")
    info = site / f"msviz-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: msviz\nVersion: {version}\n")
    return len(files)


# -- the stream and its parts ---------------------------------------------------------------------

def _tar_filter(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def write_stream(site: Path, out: Path, compress: str) -> Path:
    """Tar ``site`` (its contents at the root) into ``out`` + the compression suffix."""
    suffix = {"none": "", "gz": ".gz", "xz": ".xz"}[compress]
    path = out.with_name(out.name + suffix)
    if compress == "xz" and shutil.which("xz"):  # multi-threaded, much faster than lzma
        raw = path.with_suffix("")
        with tarfile.open(raw, "w") as tf:
            for child in sorted(site.iterdir()):
                tf.add(child, arcname=child.name, filter=_tar_filter)
        subprocess.run(["xz", "-T0", "-6", "-f", str(raw)], check=True)
        return path
    mode = {"none": "w", "gz": "w:gz", "xz": "w:xz"}[compress]
    kw = {"compresslevel": 6} if compress == "gz" else {}
    with tarfile.open(path, mode, **kw) as tf:
        for child in sorted(site.iterdir()):
            tf.add(child, arcname=child.name, filter=_tar_filter)
    return path


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            h.update(block)
    return h.hexdigest()


def split_stream(stream: Path, payload: Path, part_size: int, *, contents: dict) -> list[Path]:
    """Split ``stream`` into ``payload/part-<i>/<stream name>.<i>`` of at most ``part_size``
    bytes, each folder with the same MANIFEST.json. Old ``part-*`` folders are removed."""
    if part_size < 1024:
        raise ValueError(f"part_size must be at least 1 KiB, got {part_size}")
    payload.mkdir(parents=True, exist_ok=True)
    for old in payload.glob("part-*"):
        shutil.rmtree(old)
    total = stream.stat().st_size
    count = max(1, -(-total // part_size))
    part_size = max(1, -(-total // count))  # even parts: each run carries about as much
    parts, dirs = [], []
    with open(stream, "rb") as f:
        for i in range(1, count + 1):
            folder = payload / f"part-{i}"
            folder.mkdir()
            path = folder / f"{stream.name}.{i:03d}"
            left = part_size
            h = hashlib.sha256()
            with open(path, "wb") as out:
                while left:
                    block = f.read(min(MIB, left))
                    if not block:
                        break
                    out.write(block)
                    h.update(block)
                    left -= len(block)
            parts.append({"file": f"part-{i}/{path.name}", "bytes": path.stat().st_size,
                          "sha256": h.hexdigest()})
            dirs.append(folder)
    manifest = {"stream": stream.name, "bytes": total, "sha256": _sha256(stream),
                "parts": parts, "part_size": part_size, **contents}
    for folder in dirs:
        (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return dirs


def pack(*, payload: Path = PAYLOAD, wheels: list[Path] | None = None,
         installed: Iterable[str] = (), with_msviz: bool = True, compress: str = "xz",
         part_size: int = DEFAULT_PART_SIZE, repo: Path = REPO) -> list[Path]:
    """Build the site dir from ``wheels`` and ``installed`` distributions (and msviz), tar it,
    split it into parts under ``payload``. Returns the part folders."""
    tic = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="msviz-pack-") as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        contents: dict = {"wheels": [], "installed": [], "msviz_files": 0}
        for wheel in wheels or []:
            extract_wheel(wheel, site)
            contents["wheels"].append(wheel.name)
        for dist in installed:
            copy_installed(dist, site)
            contents["installed"].append(f"{dist}=={md.version(dist)}")
        if with_msviz:
            contents["msviz_files"] = copy_msviz(site, repo)
            contents["msviz_commit"] = _git_head(repo)
        contents["packed_by"] = f"python {sys.version.split()[0]}"
        contents["site_bytes"] = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
        stream = write_stream(site, Path(tmp) / STREAM, compress)
        dirs = split_stream(stream, payload, part_size, contents=contents)
    manifest = json.loads((dirs[0] / MANIFEST).read_text())
    print(f"pack: {len(dirs)} part(s) of {manifest['stream']} under {payload} "
          f"({manifest['bytes'] / MIB:.1f} MiB from {contents['site_bytes'] / MIB:.0f} MiB of "
          f"files, {time.perf_counter() - tic:.0f} s):")
    for p in manifest["parts"]:
        print(f"  {p['file']}: {p['bytes'] / MIB:.1f} MiB")
    return dirs


def _git_head(repo: Path) -> str | None:
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "msviz"],
                               capture_output=True, text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


# -- unpacking ------------------------------------------------------------------------------------

class PayloadError(RuntimeError):
    """Parts missing, of the wrong size, or corrupted."""


def read_manifest(payload: Path) -> dict:
    """The manifest of the parts under ``payload`` (all parts carry the same one)."""
    found = sorted(payload.glob(f"part-*/{MANIFEST}"))
    if not found:
        raise PayloadError(f"no part-*/{MANIFEST} under {payload}: carry the parts first")
    manifests = [json.loads(p.read_text()) for p in found]
    if any(m["sha256"] != manifests[0]["sha256"] for m in manifests):
        raise PayloadError(f"the parts under {payload} come from different packs: carry the "
                           "parts of one pack (pack again, then carry every part)")
    return manifests[0]


def check_parts(payload: Path, manifest: dict) -> list[Path]:
    """Each part present, of its size and sha256; says which are missing or wrong."""
    paths, missing, wrong = [], [], []
    for part in manifest["parts"]:
        path = payload / part["file"]
        if not path.is_file():
            missing.append(part["file"])
        elif path.stat().st_size != part["bytes"] or _sha256(path) != part["sha256"]:
            wrong.append(part["file"])
        paths.append(path)
    if missing or wrong:
        raise PayloadError(
            f"payload under {payload} incomplete: "
            + "; ".join(s for s in (f"missing {', '.join(missing)}" if missing else "",
                                    f"corrupted {', '.join(wrong)}" if wrong else "") if s)
            + f" (of {len(manifest['parts'])} parts)")
    return paths


class _Chain(io.RawIOBase):
    """The parts read back to back as one file (no reassembled copy on disk)."""

    def __init__(self, paths: list[Path]) -> None:
        self._paths: Iterator[Path] = iter(paths)
        self._f = None
        self._next()

    def _next(self) -> None:
        if self._f is not None:
            self._f.close()
        path = next(self._paths, None)
        self._f = open(path, "rb") if path is not None else None

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[override]
        while self._f is not None:
            n = self._f.readinto(buf)
            if n:
                return n
            self._next()
        return 0

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
        super().close()


def unpack(payload: Path = PAYLOAD, target: Path | None = None, *, force: bool = False) -> Path:
    """Check, reassemble and extract the parts into ``target`` (default ``payload/site``).

    Extracts into a fresh folder next to ``target`` and renames it into place, so an unpack that
    stops halfway leaves no half-filled site dir. Skipped when ``target`` already holds this
    payload (its stamp names the same sha256) unless ``force``.
    """
    target = Path(target) if target is not None else payload / "site"
    manifest = read_manifest(payload)
    stamp = target / STAMP
    if not force and stamp.is_file() and json.loads(stamp.read_text()).get("sha256") == \
            manifest["sha256"]:
        print(f"unpack: {target} already holds this payload ({manifest['sha256'][:12]})")
        return target
    tic = time.perf_counter()
    paths = check_parts(payload, manifest)
    name = manifest["stream"]
    target.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
    try:
        if name.endswith(".xz") and shutil.which("xz"):  # multi-threaded decompression
            cat = subprocess.Popen(["cat", *map(str, paths)], stdout=subprocess.PIPE)
            xz = subprocess.Popen(["xz", "-d", "-c", "-T0"], stdin=cat.stdout,
                                  stdout=subprocess.PIPE)
            cat.stdout.close()  # xz holds it now
            with tarfile.open(fileobj=xz.stdout, mode="r|") as tf:
                _extract_all(tf, fresh)
            if xz.wait() != 0 or cat.wait() != 0:
                raise PayloadError(f"xz failed on the parts under {payload}")
        else:
            mode = "r|xz" if name.endswith(".xz") else "r|gz" if name.endswith(".gz") else "r|"
            with _Chain(paths) as raw, tarfile.open(fileobj=io.BufferedReader(raw, MIB),
                                                    mode=mode) as tf:
                _extract_all(tf, fresh)
        (fresh / STAMP).write_text(json.dumps({"sha256": manifest["sha256"],
                                               "parts": len(paths),
                                               "wheels": manifest.get("wheels"),
                                               "msviz_commit": manifest.get("msviz_commit")}))
        if target.exists():
            shutil.rmtree(target)
        fresh.rename(target)
    finally:
        if fresh.exists():
            shutil.rmtree(fresh, ignore_errors=True)
    print(f"unpack: {len(paths)} part(s) into {target} ({time.perf_counter() - tic:.1f} s)")
    return target


def _extract_all(tf: tarfile.TarFile, dest: Path) -> None:
    if hasattr(tarfile, "data_filter"):  # 3.12+ and patched 3.8+: refuse links out of dest
        tf.extractall(dest, filter="data")
    else:  # pragma: no cover - old Pythons
        tf.extractall(dest)


def env_path(target: Path) -> str:
    """The PYTHONPATH that imports from the unpacked ``target`` first."""
    rest = os.environ.get("PYTHONPATH")
    return str(Path(target).resolve()) + (os.pathsep + rest if rest else "")


# -- command line ---------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="build the parts (downloads cp312 wheels unless told)")
    p.add_argument("--payload", type=Path, default=PAYLOAD)
    p.add_argument("--wheels", type=Path, default=None,
                   help="take the wheels from this folder (default: pip download into "
                        "PAYLOAD/wheels, reusing what is there)")
    p.add_argument("--from-installed", nargs="*", default=None, metavar="DIST",
                   help="pack these distributions installed for this interpreter instead of "
                        "wheels (no download)")
    p.add_argument("--no-msviz", action="store_true", help="leave msviz's source out")
    p.add_argument("--compress", choices=("xz", "gz", "none"), default="xz")
    p.add_argument("--part-size", type=float, default=DEFAULT_PART_SIZE / MIB,
                   help="MiB per part (default %(default)s; a run carries 64 MiB at most)")
    u = sub.add_parser("unpack", help="check, reassemble and extract the parts")
    u.add_argument("--payload", type=Path, default=PAYLOAD)
    u.add_argument("--target", type=Path, default=None, help="default: PAYLOAD/site")
    u.add_argument("--force", action="store_true")
    v = sub.add_parser("verify", help="check the parts present (sizes, sha256) and say so")
    v.add_argument("--payload", type=Path, default=PAYLOAD)
    e = sub.add_parser("env", help="print the PYTHONPATH importing from the unpacked dir")
    e.add_argument("--target", type=Path, default=PAYLOAD / "site")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "pack":
            part_size = int(args.part_size * MIB)
            if args.from_installed is not None:
                wheels, installed = [], args.from_installed
            else:
                folder = args.wheels or args.payload / "wheels"
                wheels = (wheels_for(folder, REQUIREMENTS) if args.wheels
                          else download_wheels(folder))
                installed = []
            pack(payload=args.payload, wheels=wheels, installed=installed,
                 with_msviz=not args.no_msviz, compress=args.compress, part_size=part_size)
        elif args.cmd == "unpack":
            unpack(args.payload, args.target, force=args.force)
        elif args.cmd == "verify":
            manifest = read_manifest(args.payload)
            present = [p for p in manifest["parts"] if (args.payload / p["file"]).is_file()]
            try:
                check_parts(args.payload, manifest)
                print(f"verify: all {len(present)} part(s) present and intact")
            except PayloadError as err:
                print(f"verify: {err}")  # not an error: the other parts may come next run
        else:
            print(env_path(args.target))
    except (PayloadError, FileNotFoundError) as err:
        print(f"{args.cmd}: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
