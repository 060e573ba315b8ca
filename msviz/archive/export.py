"""Trials out, typed, in files others read: Parquet (the ``parquet`` extra), CSV.

The exported table is :func:`msviz.records.typed_trials.export_frame`'s: :attr:`Run.trials`
(the stock database's and logs' columns, then the sidecar's) with each trial's task columns
joined onto it, and the record's target and workload
key. Tasks are joined rather than written as a second table: one flat file is what DuckDB,
Polars, Spark or a spreadsheet query without a join, the per-task values repeat only a few
times (a run has few tasks, and Parquet's dictionary encoding stores each once), and
``Run.tasks`` can be rebuilt from it with a ``groupby("workload_key")``.

Types: task and status are categorical, text is pandas' string dtype, latency and GFLOPS
float, sidecar integers nullable ``Int64``, both timestamps ``datetime64[ns, UTC]``;
``run_secs`` (one run's repeats) and ``remeasured_secs`` (one list per re-measurement) are list
columns in Parquet and JSON text in CSV.

Writes go through :func:`msviz.archive.writer.output_file`: atomic (written next to the final
path under a temporary name and renamed over it, so a reader never sees half a file and a failed
write leaves nothing behind), an existing file replaced only with ``overwrite=True``, never a
link, FIFO, device or folder, and the format the suffix names (Parquet is not written to a
``.csv`` file, nor CSV to a ``.parquet`` one).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from msviz.archive.writer import check_output, default_output, output_file
from msviz.errors import MissingExtraError, MsvizWarning, WriteError
from msviz.records.impossible import IMPOSSIBLE
from msviz.records.typed_trials import LIST_COLUMNS, export_frame

__all__ = ["EXPORT_FORMATS", "PARQUET_MODULE", "export", "to_csv", "to_parquet"]

#: The module Parquet is written with (the optional extra ``parquet``).
PARQUET_MODULE = "pyarrow"
#: The suffix of each format's file.
EXPORT_SUFFIX = {"Parquet": ".parquet", "CSV": ".csv"}
#: File suffixes :func:`export` writes.
EXPORT_FORMATS = tuple(EXPORT_SUFFIX.values())


def _frame_of(source: Any) -> pd.DataFrame:
    """The frame written, without the trials that cannot be true (``open`` flags them with
    the status ``"impossible"``; their times would leave msviz as if measured), warned about
    by trial and why."""
    frame = source if isinstance(source, pd.DataFrame) else export_frame(source)
    if "status" not in frame.columns:
        return frame
    bad = (frame["status"].astype(str) == IMPOSSIBLE).to_numpy()
    if bad.any():
        left = frame[bad]
        shown = "; ".join(f"trial {t}: {e}" for t, e in zip(left.get("trial", left.index),
                                                            left.get("error", [""] * len(left)))
                          )
        warnings.warn(f"left out of the export: {int(bad.sum())} trial(s) that cannot be true "
                      f"(status {IMPOSSIBLE!r}): {shown}", MsvizWarning, stacklevel=4)
        frame = frame[~bad].reset_index(drop=True)
    return frame


def _check_output(path: Path, written: str, overwrite: bool) -> None:
    """Refuse, before the frame is made, a file that exists (unless ``overwrite``), that is not
    a regular file, or whose suffix names the other export format than the one written."""
    named = {s: f for f, s in EXPORT_SUFFIX.items()}.get(path.suffix.lower())
    if named is not None and named != written:
        raise WriteError(f"cannot write {written} to {path}: its suffix {path.suffix} names "
                         f"{named}; name the file {path.with_suffix(EXPORT_SUFFIX[written]).name}"
                         f" (or write {named}: run.export(path) picks the format by suffix)")
    check_output(path, overwrite=overwrite)


def to_parquet(source: Any, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write the trials as one Parquet file (needs pyarrow: ``pip install msviz[parquet]``).

    Parameters
    ----------
    source : Run or pandas.DataFrame
        A run (its :func:`export_frame` is written) or a frame from :func:`open_many`.
    path : str | Path
        The file to write; not one named ``.csv``.
    overwrite : bool
        Replace an existing regular file (else that is refused, naming it); a link, FIFO,
        device or folder is never replaced.

    Returns
    -------
    path : Path

    Raises
    ------
    msviz.errors.MissingExtraError
        When pyarrow is not installed (write CSV instead: :func:`to_csv`).
    msviz.errors.WriteError
        When ``path`` exists (see ``overwrite``), names the other format, or cannot be written.
    """
    path = Path(path)
    _check_output(path, "Parquet", overwrite)
    try:
        importlib.import_module(PARQUET_MODULE)  # optional: the msviz[parquet] extra
    except ImportError as err:
        raise MissingExtraError(
            f"writing {path} as Parquet needs pyarrow, the optional extra 'parquet': install it "
            f"with `pip install msviz[parquet]`, or write CSV (run.to_csv, or msviz export -o "
            f"FILE.csv) ({err})") from None
    frame = _frame_of(source)
    with output_file(path, overwrite=overwrite) as tmp:
        frame.to_parquet(tmp, engine="pyarrow", index=False)
    return path


def to_csv(source: Any, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write the trials as one CSV file: list columns as JSON text, timestamps ISO 8601 UTC.

    Parameters and errors as :func:`to_parquet` (no extra needed; not to a ``.parquet`` file).
    """
    path = Path(path)
    _check_output(path, "CSV", overwrite)
    frame = _frame_of(source).copy()
    for column in LIST_COLUMNS:
        frame[column] = [None if v is None else json.dumps(v) for v in frame[column]]
    with output_file(path, overwrite=overwrite) as tmp:
        frame.to_csv(tmp, index=False)
    return path


def _has_pyarrow() -> bool:
    return importlib.util.find_spec(PARQUET_MODULE) is not None


def export(run: Any, path: str | Path | None = None, *, overwrite: bool = False) -> Path:
    """Export a run's trials: ``.parquet`` or ``.csv`` by the file's suffix (``Run.export``).

    Parameters
    ----------
    run : Run
        An opened work dir.
    path : str | Path, optional
        The file; by default ``WORK_DIR/trials.parquet`` (``<stem>-trials.parquet`` beside a
        bundle), or ``.csv`` (with a warning saying so) when pyarrow is not installed.
    overwrite : bool
        Replace an existing file (else that is refused, naming it).

    Returns
    -------
    path : Path
        The file written.
    """
    if path is None:
        if _has_pyarrow():
            path = default_output(run, "trials.parquet")
        else:
            path = default_output(run, "trials.csv")
            warnings.warn(f"pyarrow is not installed: wrote CSV ({path}); "
                          "`pip install msviz[parquet]` for Parquet", MsvizWarning, stacklevel=3)
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in EXPORT_FORMATS:
        raise WriteError(f"cannot write {path}: the export format is chosen by the suffix, "
                         f"one of {', '.join(EXPORT_FORMATS)}")
    write = to_parquet if suffix == ".parquet" else to_csv
    return write(run, path, overwrite=overwrite)
