"""A run bundle written: one zip of a work dir and its environment, to move a run to another
machine. (Reading one is :mod:`msviz.records.bundle`'s: the same bundle, the other way; its
docstring gives the layout.)"""

from __future__ import annotations

import json
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from msviz.archive.merge import impossible_records
from msviz.archive.writer import check_output, output_file
from msviz.errors import BundleError, WorkDirError
from msviz.records import database as db_files
from msviz.records.bundle import BUNDLE_FORMAT, MANIFEST_FILE, WORK_DIR_PREFIX
from msviz.records.environment import environments
from msviz.records.sidecar import SIDECAR_FILE, read_sidecar
from msviz.version import __version__

__all__ = ["write_bundle"]


def _work_dir_files(work_dir: Path) -> list[Path]:
    """The files of a work dir a bundle carries: the database, the sidecar and the logs."""
    files = [work_dir / name for name in (db_files.WORKLOAD_FILE, db_files.RECORD_FILE,
                                           SIDECAR_FILE)]
    files = [f for f in files if f.is_file()]
    logs = work_dir / "logs"
    if logs.is_dir():
        files += sorted(p for p in logs.rglob("*") if p.is_file() and not p.is_symlink())
    return files


def write_bundle(work_dir: str | Path, output: str | Path, *, overwrite: bool = False) -> Path:
    """Pack a work dir (database, logs, sidecar) and its environment into one zip.

    The zip is written next to ``output`` under a temporary name and renamed into place, so
    ``output`` is either the whole bundle or untouched.

    Parameters
    ----------
    work_dir : str | Path
        A MetaSchedule work dir (msviz's or stock ``tune_tir``'s).
    output : str | Path
        The zip to write.
    overwrite : bool
        Replace ``output`` if it exists (else that is refused, naming it).

    Returns
    -------
    path : Path
        ``output``.
    """
    work_dir, output = Path(work_dir), Path(output)
    if not all((work_dir / n).is_file() for n in (db_files.WORKLOAD_FILE, db_files.RECORD_FILE)):
        raise WorkDirError(f"{work_dir} is not a MetaSchedule work dir: a bundle needs its "
                           f"{db_files.WORKLOAD_FILE} and {db_files.RECORD_FILE}")
    if output.is_dir():
        raise BundleError(f"cannot write the bundle to {output}: it is a directory")
    check_output(output, overwrite=overwrite, what="bundle")  # before anything is read
    impossible = impossible_records(work_dir)
    if impossible:
        lines = sorted(impossible)
        raise BundleError(
            f"{work_dir} holds {len(lines)} record(s) that cannot be true ("
            + "; ".join(f"line {k}: {impossible[k]}" for k in lines[:3])
            + (" ..." if len(lines) > 3 else "") + "): a bundle would carry them to another "
            "machine, where MetaSchedule's compile_tir ranks them by their time; merge the work "
            f"dir without them first (msviz merge {work_dir} -o CLEAN_DIR, which leaves them out) "
            "and bundle that")
    envs = environments(read_sidecar(work_dir))
    files = _work_dir_files(work_dir)
    names = [f"{WORK_DIR_PREFIX}/{f.relative_to(work_dir).as_posix()}" for f in files]
    manifest = {"format": BUNDLE_FORMAT, "msviz_version": __version__,
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "name": work_dir.resolve().name, "environment": envs[-1] if envs else None,
                "files": names}
    with output_file(output, overwrite=overwrite, what="bundle", error=BundleError,
                     fail=f"cannot write the bundle to {output}") as tmp, \
            zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MANIFEST_FILE, json.dumps(manifest, indent=1))
        for path, name in zip(files, names, strict=True):
            zf.write(path, name)
    return output
