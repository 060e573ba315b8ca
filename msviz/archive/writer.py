"""The one writer of the files msviz writes for the user (exports, reports, bundles) and the
checks on the work dirs it writes (merge, migrate): never over an existing file unless told to,
never over something that is not a regular file, written atomically with the usual file mode,
and for a bundle beside it (not inside the temporary folder it is read from, which goes away)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from msviz.errors import MsvizError, WriteError

__all__ = ["check_output", "check_output_dir", "default_output", "output_dir", "output_file",
           "umask"]


def check_output(path: str | Path, *, overwrite: bool = False, what: str = "file") -> Path:
    """``path``, checked before anything is written to it.

    Parameters
    ----------
    path : str | Path
        The file to write.
    overwrite : bool
        Replace an existing regular file (``--force`` on the command line).
    what : str
        What the file is, for the message.

    Raises
    ------
    msviz.errors.WriteError
        ``path`` exists and ``overwrite`` is False, or it exists and is not a regular file (a
        folder, a FIFO, a device, a link: replacing it would not be atomic, or not what was
        meant).
    """
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise WriteError(f"cannot write the {what} {path}: it exists and is not a regular file "
                         "(msviz replaces only regular files); choose another output")
    if path.exists() and not overwrite:
        raise WriteError(f"{path} exists: pass overwrite=True (--force on the command line) to "
                         f"replace it, or choose another output for the {what}")
    return path


def check_output_dir(path: str | Path, *, what: str = "work dir", empty_ok: bool = False,
                     overwrite: bool | None = None) -> Path:
    """``path``, checked before a new directory is written there (merge, migrate, a deployed
    model): it must not exist (with ``empty_ok``: or be an empty directory, not a link to one;
    with ``overwrite``: or be a directory, which is replaced whole; ``False``, not None, says
    in the refusal that ``overwrite=True`` would replace it).

    Raises
    ------
    msviz.errors.WriteError
        Naming ``path`` and what is there.
    """
    path = Path(path)
    if path.is_symlink():
        raise WriteError(f"cannot write the {what} {path}: it is a symbolic link (msviz writes "
                         "a new directory there): name a new directory")
    if path.exists() and overwrite and not path.is_dir():
        raise WriteError(f"cannot write the {what} {path}: it exists and is not a directory "
                         "(msviz replaces only a directory): name a directory")
    if path.exists() and not overwrite and not (
            empty_ok and path.is_dir() and not any(path.iterdir())):
        how = ("pass overwrite=True (--overwrite on the command line) to replace it, or name "
               "a new directory" if overwrite is False else "name a new directory")
        raise WriteError(f"cannot write the {what} {path}: it exists and is not "
                         f"{'an empty directory' if empty_ok else 'new'} ({how})")
    return path


def umask() -> int:
    """This process's umask (read from /proc where it can be, as setting it is not
    thread-safe)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def output_file(path: str | Path, *, overwrite: bool = False, what: str = "file",
                error: type[Exception] = WriteError, fail: str | None = None) -> Iterator[Path]:
    """A temporary path next to ``path``, renamed to ``path`` when the block ends without error.

    ``path`` is checked (:func:`check_output`) before and again just before the rename; the
    file gets the mode any file the user writes gets (``0o666`` less the umask, not
    ``mkstemp``'s private ``0o600``). On any error the temporary file is removed and ``path`` is
    left as it was.

    Parameters
    ----------
    path : str | Path
        The file to write.
    overwrite : bool
        Replace an existing regular file.
    what : str
        What the file is, for the messages.
    error : type
        The exception raised when the file cannot be written (:class:`WriteError`).
    fail : str, optional
        The start of that message (default ``"cannot write the {what} {path}"``).

    Raises
    ------
    msviz.errors.WriteError
        As :func:`check_output`; ``error`` naming ``path`` when it cannot be written (no such
        folder, a folder in its place, no permission, a full disk).
    """
    path = check_output(path, overwrite=overwrite, what=what)
    fail = fail or f"cannot write the {what} {path}"
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                    dir=path.parent if str(path.parent) else ".")
    except OSError as err:
        raise error(f"{fail}: {err.strerror or err}") from None
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~umask())
        check_output(path, overwrite=overwrite, what=what)  # nothing appeared meanwhile
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, MsvizError):  # msviz's own errors are OSErrors too
            raise
        raise error(f"{fail}: {err.strerror or err}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def output_dir(path: str | Path, *, what: str = "work dir", empty_ok: bool = False,
               overwrite: bool | None = None) -> Iterator[Path]:
    """A temporary directory next to ``path``, renamed to ``path`` when the block ends without
    error (merge, migrate, a deployed model): checked as :func:`check_output_dir` before and
    just before the rename, with the mode any folder the user makes gets (``0o777`` less the
    umask, not ``mkdtemp``'s ``0o700``); removed on any error, leaving ``path`` as it was.
    With ``overwrite``, a directory at ``path`` is moved aside, the new one renamed in, and the
    old one removed.

    Raises
    ------
    msviz.errors.WriteError
        As :func:`check_output_dir`, or naming ``path`` when it cannot be written.
    """
    path = check_output_dir(path, what=what, empty_ok=empty_ok, overwrite=overwrite)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp",
                                    dir=path.parent if str(path.parent) else "."))
    except OSError as err:
        raise WriteError(f"cannot write the {what} {path}: {err.strerror or err}") from None
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~umask())
        check_output_dir(path, what=what, empty_ok=empty_ok, overwrite=overwrite)
        if overwrite and path.is_dir() and any(path.iterdir()):
            old = tmp.with_name(f"{tmp.name}.old")
            os.replace(path, old)  # aside, so the new one goes in by one rename
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(err, MsvizError):
            raise
        raise WriteError(f"cannot write the {what} {path}: {err.strerror or err}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def default_output(source: Any, name: str) -> Path:
    """Where a file made from ``source`` goes by default: ``WORK_DIR/<name>`` for a work dir,
    ``<folder>/<bundle stem>-<name>`` beside a bundle (a zip file)."""
    where = Path(getattr(source, "bundle_path", None) or getattr(source, "work_dir", source))
    if where.is_file():
        return where.with_name(f"{where.stem}-{name}")
    return where / name
