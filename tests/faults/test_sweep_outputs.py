"""Issue 41, part B: one writer of output files (nothing replaced unless told, never a
non-regular file, the usual file mode, the format the suffix names), archive limits on a
bundle's members and total size, a reproduce bounded in what a bundle's settings may cost and
leaving no temporary folder, and merge of a bundle (real tuned work dirs and bundles)."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import stat
import tempfile
import time
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import msviz
from msviz.archive.bundle import write_bundle
from msviz.cli import main
from msviz.engine.measure.service import MeasuringService
from msviz.errors import BundleError, WorkDirError, WriteError
from msviz.records import bundle as bundle_module
from msviz.records.sidecar import SIDECAR_FILE
from msviz.report import write_report


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


# -- 1. one writer of output files ---------------------------------------------------------------

@pytest.mark.parametrize("write", ["to_csv", "to_parquet"])
def test_an_export_replaces_a_file_only_when_told(tuned: tuple[Path, Path], tmp_path: Path,
                                                  write: str) -> None:
    run = msviz.open(tuned[0])
    path = tmp_path / ("t.csv" if write == "to_csv" else "t.parquet")
    path.write_text("my table")
    with pytest.raises(WriteError, match=f"{path} exists: pass overwrite=True"):
        getattr(run, write)(path)
    assert path.read_text() == "my table"
    assert getattr(run, write)(path, overwrite=True) == path
    read = pd.read_csv if write == "to_csv" else pd.read_parquet
    assert len(read(path)) == len(run.trials) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary left


def test_run_export_takes_the_overwrite_it_asks_for(tuned: tuple[Path, Path], tmp_path: Path
                                                    ) -> None:
    run = msviz.open(tuned[0])
    path = run.export(tmp_path / "t.csv")
    with pytest.raises(WriteError, match="pass overwrite=True"):
        run.export(path)
    path.write_text("old")
    assert run.export(path, overwrite=True) == path
    assert len(pd.read_csv(path)) == 2


def _specials(tmp_path: Path) -> dict[str, Path]:
    """A FIFO, a link to a file, a folder and (where this user may make one) a device node,
    each named as an export."""
    target = tmp_path / "target.txt"
    target.write_text("kept")
    out = {"fifo": tmp_path / "fifo.csv", "link": tmp_path / "link.csv",
           "folder": tmp_path / "folder.csv"}
    os.mkfifo(out["fifo"])
    out["link"].symlink_to(target)
    out["folder"].mkdir()
    with contextlib.suppress(OSError):  # a device node: root only, and not in every container
        os.mknod(tmp_path / "null.csv", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        out["device"] = tmp_path / "null.csv"
    return out


def test_an_export_never_replaces_what_is_not_a_regular_file(tuned: tuple[Path, Path],
                                                             tmp_path: Path) -> None:
    run = msviz.open(tuned[0])
    specials = _specials(tmp_path)
    for name, path in specials.items():
        for write in (run.to_csv, run.export):
            with pytest.raises(WriteError, match=f"cannot write the file {path}: it exists "
                                                 "and is not a regular file"):
                write(path, overwrite=True)
        parquet = path.with_name(path.stem + ".parquet")
        if name == "link":
            parquet.symlink_to(tmp_path / "target.txt")
            with pytest.raises(WriteError, match="is not a regular file"):
                run.to_parquet(parquet, overwrite=True)
    assert stat.S_ISFIFO(specials["fifo"].lstat().st_mode)
    assert specials["link"].is_symlink() and specials["link"].read_text() == "kept"
    assert specials["folder"].is_dir() and not any(specials["folder"].iterdir())
    if "device" in specials:
        assert stat.S_ISCHR(specials["device"].lstat().st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_written_files_have_the_usual_mode(tuned: tuple[Path, Path], tmp_path: Path,
                                           mask: int) -> None:
    work_dir, _ = tuned
    run = msviz.open(work_dir)
    with umask(mask):
        files = [run.to_csv(tmp_path / "t.csv"), run.to_parquet(tmp_path / "t.parquet"),
                 run.export(tmp_path / "e.csv"),
                 write_report(run, tmp_path / "r.html"),
                 write_bundle(work_dir, tmp_path / "b.zip")]
        merged = msviz.merge([work_dir], tmp_path / "merged").work_dir
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask, path
    assert stat.S_IMODE(merged.stat().st_mode) == 0o777 & ~mask
    assert stat.S_IMODE((merged / "database_tuning_record.json").stat().st_mode) == \
        0o666 & ~mask


def test_the_format_matches_the_suffix(tuned: tuple[Path, Path], tmp_path: Path) -> None:
    run = msviz.open(tuned[0])
    with pytest.raises(WriteError, match=r"cannot write Parquet to .*t\.csv: its suffix \.csv "
                                         r"names CSV; name the file t\.parquet"):
        run.to_parquet(tmp_path / "t.csv")
    with pytest.raises(WriteError, match=r"cannot write CSV to .*t\.PARQUET: its suffix "
                                         r"\.PARQUET names Parquet; name the file t\.csv"):
        run.to_csv(tmp_path / "t.PARQUET")
    assert not any(tmp_path.iterdir())
    assert run.to_csv(tmp_path / "t.txt").read_text().startswith("task,")  # any other suffix


def test_merge_and_migrate_never_write_through_a_link(tuned: tuple[Path, Path], tmp_path: Path
                                                      ) -> None:
    work_dir, _ = tuned
    empty = tmp_path / "empty"
    empty.mkdir()
    link = tmp_path / "link"
    link.symlink_to(empty)
    with pytest.raises(WriteError, match=f"cannot merge into {link}"):
        msviz.merge([work_dir], link)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(WorkDirError, match=f"{dangling} exists"):
        msviz.migrate(work_dir, dangling)
    assert link.is_symlink() and dangling.is_symlink() and not any(empty.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "empty", "link"]


# -- 2. archive limits ---------------------------------------------------------------------------

def _bundle(path: Path, members: list[tuple[str, bytes]]) -> Path:
    manifest = json.dumps({"format": 1, "msviz_version": "0.1.0", "name": "x"})
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        warnings.simplefilter("ignore", UserWarning)  # zipfile's "Duplicate name"
        zf.writestr("manifest.json", manifest)
        zf.writestr("work_dir/database_workload.json", "")
        for name, data in members:
            zf.writestr(name, data)
    return path


def test_many_members_of_the_size_not_checked_alone_are_refused(tmp_path: Path) -> None:
    """Eight members of exactly 16 MiB (the size from which one member's ratio is checked):
    128 MiB from a zip of well under 1 MiB."""
    size = bundle_module.RATIO_CHECKED_FROM
    bomb = _bundle(tmp_path / "bomb.zip", [("work_dir/database_tuning_record.json", b""), *[
        (f"work_dir/logs/{i}.log", b"\0" * size) for i in range(8)]])
    assert bomb.stat().st_size < 2**20
    with pytest.raises(BundleError, match=r"is not extracted: its 10 files would expand "
                                          r"[\d,]+ bytes to 134,217,728 in all"):
        msviz.open(bomb)


def test_too_many_members_are_refused(tmp_path: Path) -> None:
    many = bundle_module.MAX_MEMBERS
    path = _bundle(tmp_path / "many.zip", [("work_dir/database_tuning_record.json", b""), *[
        (f"work_dir/logs/{i}.log", b"") for i in range(many)]])
    with pytest.raises(BundleError, match=f"it holds {many + 3:,} files, more than the limit "
                                          f"of {many:,}"):
        msviz.open(path)


@pytest.mark.parametrize("second", ["work_dir/database_tuning_record.json",
                                    "work_dir//database_tuning_record.json"])
def test_two_copies_of_a_record_file_are_refused(tuned: tuple[Path, Path], tmp_path: Path,
                                                 second: str) -> None:
    records = (tuned[0] / "database_tuning_record.json").read_bytes()
    path = _bundle(tmp_path / "twice.zip", [("work_dir/database_tuning_record.json", records),
                                            (second, b"")])
    with pytest.raises(BundleError, match=r"it holds two copies of "
                                          r"work_dir/database_tuning_record\.json"):
        msviz.open(path)


# -- 3. reproduce bounded, its temporary folders removed -----------------------------------------

def _bundle_with(work_dir: Path, out: Path, **changes: Any) -> Path:
    """A bundle of a copy of ``work_dir`` whose environment line has ``changes`` (``knobs``
    and ``evaluator_config`` updated, the rest replaced)."""
    copy = Path(shutil.copytree(work_dir, out.with_suffix("")))
    lines = (copy / SIDECAR_FILE).read_text().splitlines()
    for i, line in enumerate(lines):
        entry = json.loads(line)
        if entry["kind"] == "environment":
            for key in ("knobs", "evaluator_config", "target"):
                entry[key].update(changes.get(key, {}))
            entry.update({k: v for k, v in changes.items()
                          if k not in ("knobs", "evaluator_config", "target")})
            lines[i] = json.dumps(entry)
    (copy / SIDECAR_FILE).write_text("\n".join(lines) + "\n")
    assert main(["bundle", str(copy), "-o", str(out)]) == 0
    return out


def test_a_bundle_at_the_allowed_maxima_is_not_redrawn(tuned: tuple[Path, Path], tmp_path: Path
                                                       ) -> None:
    bundle = _bundle_with(tuned[0], tmp_path / "max.zip", trials_per_batch=4096, knobs={
        "population_size": 65536, "init_min_unmeasured": 65536, "genetic_num_iters": 1000})
    started = time.monotonic()
    result = msviz.reproduce(bundle, retime=False)
    assert time.monotonic() - started < 60
    error = result.first_batch.error
    assert error.startswith("the bundle's trials_per_batch=4,096 (at most 128), "
                            "population_size=65,536 (at most 2,048), init_min_unmeasured=65,536 "
                            "(at most 2,048), genetic_num_iters=1,000 (at most 4) beyond what a "
                            "reproduce re-draws"), error
    assert "First batch not re-drawn: the bundle's trials_per_batch=4,096" in str(result)


def test_a_bundles_evaluator_config_is_brought_into_range(tuned: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    """``number: -1`` stalls MetaSchedule's runner until its timeout: re-timed with 1."""
    bundle = _bundle_with(tuned[0], tmp_path / "eval.zip",
                          evaluator_config={"number": -1, "repeat": 0, "min_repeat_ms": 10**9})
    result = msviz.reproduce(bundle, redraw=False)
    assert result.notes == [
        "the bundle's evaluator_config number=-1 is outside what a reproduce times with (1 to "
        "100): re-timed with 1",
        "the bundle's evaluator_config repeat=0 is outside what a reproduce times with (1 to "
        "10): re-timed with 1",
        "the bundle's evaluator_config min_repeat_ms=1,000,000,000 is outside what a reproduce "
        "times with (0 to 500): re-timed with 500"]
    assert result.kernels["here_us"].iloc[0] > 0, result.kernels
    assert f"Note: {result.notes[0]}" in str(result)


def test_retiming_leaves_no_build_artifacts_when_it_fails(
        tuned: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    real_build = MeasuringService.build

    def build(self: MeasuringService, mods: Any) -> Any:
        out = real_build(self, mods)
        built.extend(b.artifact for b in out if b.artifact)
        return out

    def run(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("injected")

    monkeypatch.setattr(MeasuringService, "build", build)
    monkeypatch.setattr(MeasuringService, "run", run)
    with pytest.raises(RuntimeError, match="injected"):
        msviz.reproduce(tuned[1], redraw=False)
    assert built and not [a for a in built if Path(a).parent.exists()]


def test_a_redraw_that_fails_stops_its_session_and_removes_its_folder(
        tuned: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from msviz.engine.session import Session

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    sessions: list[Any] = []
    real_from_config, real_wait = Session.from_config, Session.wait

    def from_config(*args: Any, **kwargs: Any) -> Any:
        sessions.append(real_from_config(*args, **kwargs))
        return sessions[-1]

    def wait(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self, "_injected", False):
            self._injected = True
            raise RuntimeError("injected")
        return real_wait(self, *args, **kwargs)

    monkeypatch.setattr(Session, "from_config", staticmethod(from_config))
    monkeypatch.setattr(Session, "wait", wait)
    with pytest.raises(RuntimeError, match="injected"):
        msviz.reproduce(tuned[1], retime=False)
    assert len(sessions) == 1 and sessions[0].state not in ("running", "paused", "idle")
    assert not list(tmp_path.glob("msviz-reproduce-*"))


def test_a_bundle_tuned_for_another_architecture_says_so(tuned: tuple[Path, Path],
                                                         tmp_path: Path) -> None:
    machine = platform.machine().lower()
    here = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    other = "x86_64-pc-linux-gnu" if here == "aarch64" else "aarch64-linux-gnu"
    bundle = _bundle_with(tuned[0], tmp_path / "arm.zip", target={"mtriple": other})
    text = str(msviz.reproduce(bundle, retime=False, redraw=False))
    assert "versions and CPU are the same here" not in text
    assert f"  target architecture: {other} -> {here}" in text.splitlines()


# -- 4. merge of a bundle ------------------------------------------------------------------------

def test_merge_reads_a_bundle_as_its_work_dir(tuned: tuple[Path, Path], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    work_dir, bundle = tuned
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = msviz.merge([bundle], tmp_path / "from_bundle")
    assert result.records == 2 and result.workloads == 1
    assert (tmp_path / "from_bundle" / "database_tuning_record.json").read_bytes() == \
        msviz.merge([work_dir], tmp_path / "from_dir").work_dir.joinpath(
            "database_tuning_record.json").read_bytes()
    both = msviz.merge([work_dir, bundle], tmp_path / "both")
    assert (both.records, both.duplicates) == (2, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["both", "from_bundle", "from_dir"]
