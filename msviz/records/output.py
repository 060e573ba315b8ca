"""Where msviz writes a file the user asked for: never over an existing file unless told to,
never over something that is not a regular file, and for a bundle beside it (not inside the
temporary folder it is read from, which goes away)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msviz.errors import WriteError

__all__ = ["check_output", "default_output"]


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
        folder, a device, a link: replacing it would not be atomic, or not what was meant).
    """
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise WriteError(f"cannot write the {what} {path}: it exists and is not a regular file "
                         "(msviz replaces only regular files); choose another output")
    if path.exists() and not overwrite:
        raise WriteError(f"{path} exists: pass overwrite=True (--force on the command line) to "
                         f"replace it, or choose another output for the {what}")
    return path


def default_output(source: Any, name: str) -> Path:
    """Where a file made from ``source`` goes by default: ``WORK_DIR/<name>`` for a work dir,
    ``<folder>/<bundle stem>-<name>`` beside a bundle (a zip file)."""
    where = Path(getattr(source, "bundle_path", None) or getattr(source, "work_dir", source))
    if where.is_file():
        return where.with_name(f"{where.stem}-{name}")
    return where / name
