"""A run bundle read: one zip of a work dir and its environment, opened on another machine.
(Writing one is :mod:`msviz.archive.bundle`'s: the same bundle, the other way.)

``msviz bundle WORK_DIR -o run.zip`` (:func:`msviz.archive.bundle.write_bundle`) packs the
stock database files, the logs and msviz's sidecar under ``work_dir/`` in the zip, next to a
small ``manifest.json``::

    {"format": 1, "msviz_version": "0.1.0", "created": "...", "name": "my-run",
     "environment": {...the sidecar's last environment line, or null...},
     "files": ["work_dir/database_workload.json", ...]}

``msviz.open("run.zip")`` (:func:`open_bundle`) extracts it to a temporary directory that lives
as long as the :class:`~msviz.records.run.Run` (its traces are read lazily from there).
A bundle written by a newer msviz, or in a newer format, is refused with both versions named.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
import weakref
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from msviz.errors import BundleError
from msviz.records import database as db_files
from msviz.version import __version__

__all__ = ["BUNDLE_FORMAT", "MANIFEST_FILE", "WORK_DIR_PREFIX", "extract_bundle", "is_bundle",
           "open_bundle", "read_manifest"]

#: The layout version of the zip; a reader refuses a larger one.
BUNDLE_FORMAT = 1
MANIFEST_FILE = "manifest.json"
#: The folder of the zip that holds the work dir's files.
WORK_DIR_PREFIX = "work_dir"
#: At most this many bytes are extracted from one bundle (its declared sizes summed, and what
#: is actually read, in case the sizes lie): a bundle is untrusted input.
MAX_EXTRACTED_BYTES = 2 * 2**30
#: At most this many files are extracted from one bundle (a work dir has its two database
#: files, the sidecar and one log per task).
MAX_MEMBERS = 10_000
#: A member, or the whole bundle, larger than :data:`RATIO_CHECKED_FROM` bytes may expand at
#: most this many times its compressed size (tuning records compress about 10-30x; a zip bomb
#: about 1000x).
MAX_RATIO = 200
RATIO_CHECKED_FROM = 16 * 2**20


def is_bundle(path: str | Path) -> bool:
    """True for a path that :func:`open_bundle` should read: a file (a work dir is a folder)."""
    return Path(path).is_file()


def _version_key(text: str) -> tuple[int, ...]:
    """``"0.10.2.dev1"`` -> ``(0, 10, 2)``: release numbers, compared as numbers."""
    release = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(text))
    return tuple(int(x) for x in release.group(1).split(".")) if release else ()


def _check_readable(path: Path, manifest: dict[str, Any]) -> None:
    version = str(manifest.get("msviz_version", "?"))
    fmt = manifest.get("format")
    newer_format = not isinstance(fmt, int) or fmt > BUNDLE_FORMAT
    if _version_key(version) > _version_key(__version__) or newer_format:
        raise BundleError(
            f"{path} was written by msviz {version} (bundle format {fmt}), newer than this "
            f"msviz {__version__} (bundle format {BUNDLE_FORMAT}) can read: upgrade msviz "
            "(pip install -U msviz) to open it")


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of a bundle (format, msviz version, environment, files), checked: a path
    that is not a readable bundle, or one from a newer msviz, raises :class:`BundleError`."""
    path = Path(path)
    with _open_zip(path) as zf:
        return _manifest_of(path, zf)


@contextlib.contextmanager
def _open_zip(path: Path) -> Any:
    if not path.is_file():
        raise BundleError(f"{path} is not a bundle: "
                          f"{'it does not exist' if not path.exists() else 'it is not a file'}")
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        raise BundleError(
            f"{path} is neither a MetaSchedule work dir nor an msviz bundle (a zip written by "
            f"`msviz bundle`): {err}") from None
    with zf:
        yield zf


def _manifest_of(path: Path, zf: zipfile.ZipFile) -> dict[str, Any]:
    try:
        manifest = json.loads(zf.read(MANIFEST_FILE))
    except KeyError:
        raise BundleError(f"{path} is a zip but not an msviz bundle: it has no "
                          f"{MANIFEST_FILE}") from None
    except (ValueError, zipfile.BadZipFile, OSError) as err:
        raise BundleError(f"{path}: its {MANIFEST_FILE} cannot be read ({err})") from None
    if not isinstance(manifest, dict):
        raise BundleError(f"{path}: its {MANIFEST_FILE} is not a JSON object")
    _check_readable(path, manifest)
    return manifest


def _member_target(root: Path, name: str) -> Path | None:
    """Where a zip member under ``work_dir/`` goes in ``root`` (None: not a work-dir file, or a
    name that would escape ``root``)."""
    parts = PurePosixPath(name).parts
    if len(parts) < 2 or parts[0] != WORK_DIR_PREFIX or name.endswith("/"):
        return None
    if any(p in ("", ".", "..") or "\\" in p or ":" in p for p in parts[1:]):
        return None
    return root.joinpath(*parts[1:])


def extract_bundle(path: str | Path, into: str | Path) -> tuple[Path, dict[str, Any]]:
    """Extract a bundle's work dir into a new folder inside ``into`` (named as the bundled work
    dir); returns that work dir and the manifest."""
    path = Path(path)
    with _open_zip(path) as zf:
        manifest = _manifest_of(path, zf)
        name = re.sub(r"[^\w.-]", "_", str(manifest.get("name") or "")).strip(".") or "work_dir"
        work_dir = Path(into) / name
        members = [(info, target) for info in zf.infolist()
                   if (target := _member_target(work_dir, info.filename)) is not None]
        _check_members(path, zf.infolist(), [target for _, target in members], work_dir)
        left = _check_sizes(path, [info for info, _ in members])
        work_dir.mkdir(parents=True)
        member = ""
        try:
            for info, target in members:
                member = info.filename
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as dst:
                    left = _copy_at_most(path, member, src, dst, left)
        except BundleError:  # an OSError too: not "corrupt", the limit it names
            raise
        except (zipfile.BadZipFile, OSError, EOFError) as err:
            raise BundleError(f"{path} is corrupt: {member} cannot be extracted ({err})") from None
    missing = [n for n in (db_files.WORKLOAD_FILE, db_files.RECORD_FILE)
               if not (work_dir / n).is_file()]
    if missing:
        raise BundleError(f"{path} holds no work dir: {', '.join(missing)} missing")
    return work_dir, manifest


def _too_large(path: Path, why: str) -> BundleError:
    return BundleError(f"{path} is not extracted: {why} (a bundle of a real run is far "
                       f"smaller: at most {MAX_EXTRACTED_BYTES / 2**30:.0f} GiB in "
                       f"{MAX_MEMBERS:,} files, and over {RATIO_CHECKED_FROM // 2**20} MiB at "
                       f"most {MAX_RATIO}x its compressed size)")


def _check_members(path: Path, infos: list[zipfile.ZipInfo], targets: list[Path],
                   work_dir: Path) -> None:
    """Refuse a bundle with too many members, or with two members of one name (which of the
    two is the run's file is not known: a zip holds both, readers differ on which they use)."""
    if len(infos) > MAX_MEMBERS:
        raise _too_large(path, f"it holds {len(infos):,} files, more than the limit of "
                               f"{MAX_MEMBERS:,}")
    for names in ([i.filename for i in infos],  # and one file under two spellings (a//b)
                  [f"{WORK_DIR_PREFIX}/{t.relative_to(work_dir).as_posix()}" for t in targets]):
        seen: set[str] = set()
        for name in names:
            if name in seen:
                raise BundleError(
                    f"{path} is not extracted: it holds two copies of {name} (a bundle written "
                    "by msviz holds each file once; which copy is the run's is not known): "
                    "bundle the work dir again")
            seen.add(name)


def _check_sizes(path: Path, infos: list[zipfile.ZipInfo]) -> int:
    """Refuse a bundle whose declared sizes are too large, before writing anything; returns the
    bytes extracting it may write (its declared total)."""
    total = sum(i.file_size for i in infos)
    packed = sum(i.compress_size for i in infos)
    if total > MAX_EXTRACTED_BYTES:
        raise _too_large(path, f"its files would take {total / 2**30:.1f} GiB, more than the "
                               f"limit of {MAX_EXTRACTED_BYTES / 2**30:.0f} GiB in all")
    for info in infos:
        if info.file_size > RATIO_CHECKED_FROM and \
                info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise _too_large(path, f"{info.filename} would expand {info.compress_size:,} "
                                   f"bytes to {info.file_size:,}")
    if total > RATIO_CHECKED_FROM and total > MAX_RATIO * max(packed, 1):
        raise _too_large(path, f"its {len(infos):,} files would expand {packed:,} bytes to "
                               f"{total:,} in all")
    return total


def _copy_at_most(path: Path, member: str, src: Any, dst: Any, left: int) -> int:
    """Copy ``src`` to ``dst``; refuse past ``left`` bytes (a member may lie about its size).
    Returns the bytes still allowed."""
    while chunk := src.read(2**20):
        left -= len(chunk)
        if left < 0:
            raise _too_large(path, f"{member} holds more than the declared sizes allow")
        dst.write(chunk)
    return left


def open_bundle(path: str | Path, opener: Any) -> Any:
    """Open a bundle as a run: its work dir is extracted to a temporary folder that is removed
    when the returned run is garbage-collected.

    Parameters
    ----------
    path : str | Path
        A zip written by :func:`msviz.archive.bundle.write_bundle`.
    opener : callable
        Makes the run from the extracted work dir (:class:`~msviz.records.run.Run`).
    """
    tmp = Path(tempfile.mkdtemp(prefix="msviz-bundle-"))
    try:
        work_dir, manifest = extract_bundle(path, tmp)
        run = opener(work_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    weakref.finalize(run, shutil.rmtree, tmp, ignore_errors=True)
    run.bundle_path = Path(path).resolve()  # files made from it go beside it, not in tmp
    if run.environment is None and manifest.get("environment"):
        run.environment = manifest["environment"]
    return run
