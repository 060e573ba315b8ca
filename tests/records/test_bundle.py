"""Bundles that cannot be read or written: clear errors naming the path (and both versions for
a newer bundle), nothing half-written left behind. The round trip of a tuned run is in
tests/engine/test_reproduce.py."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

import msviz
from msviz.archive.bundle import write_bundle
from msviz.cli import main
from msviz.errors import BundleError, WorkDirError
from msviz.records.bundle import extract_bundle, read_manifest


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    """A work dir's files (contents are not read when bundling)."""
    wd = tmp_path / "my-run"
    (wd / "logs").mkdir(parents=True)
    (wd / "database_workload.json").write_text('["w"]\n')
    (wd / "database_tuning_record.json").write_text('[0, []]\n')
    (wd / "logs" / "tvm.meta_schedule.logging.task_0_main.log").write_text("log\n")
    (wd / "report.html").write_text("<html></html>")  # not part of a bundle
    return wd


def _zip(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


def test_a_bundle_holds_the_work_dir_files_and_a_manifest(work_dir: Path, tmp_path: Path
                                                         ) -> None:
    out = write_bundle(work_dir, tmp_path / "run.zip")
    with zipfile.ZipFile(out) as zf:
        assert sorted(zf.namelist()) == [
            "manifest.json", "work_dir/database_tuning_record.json",
            "work_dir/database_workload.json",
            "work_dir/logs/tvm.meta_schedule.logging.task_0_main.log"]
    mask = os.umask(0o022)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask  # as any file the user writes
    manifest = read_manifest(out)
    assert (manifest["format"], manifest["msviz_version"], manifest["name"]) == (
        1, msviz.__version__, "my-run")
    assert manifest["environment"] is None
    extracted, _ = extract_bundle(out, tmp_path / "x")
    assert extracted == tmp_path / "x" / "my-run"
    assert (extracted / "database_tuning_record.json").read_text() == '[0, []]\n'
    assert not (extracted / "report.html").exists()


def test_a_bundle_from_a_newer_msviz_names_both_versions(tmp_path: Path) -> None:
    newer = _zip(tmp_path / "newer.zip", {
        "manifest.json": json.dumps({"format": 1, "msviz_version": "99.1.0"})})
    with pytest.raises(BundleError, match=r"msviz 99\.1\.0 .*newer than this msviz "
                       + msviz.__version__.replace(".", r"\.")):
        msviz.open(newer)
    later_format = _zip(tmp_path / "format.zip", {
        "manifest.json": json.dumps({"format": 2, "msviz_version": msviz.__version__})})
    with pytest.raises(BundleError, match=r"bundle format 2\), newer than .*bundle format 1"):
        msviz.open(later_format)


@pytest.mark.parametrize("what", ["text", "truncated", "no manifest", "no database"])
def test_what_is_not_a_bundle_says_so(what: str, work_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.zip"
    if what == "text":
        path.write_text("not a zip")
        expected = "is neither a MetaSchedule work dir nor an msviz bundle"
    elif what == "truncated":
        data = write_bundle(work_dir, tmp_path / "good.zip").read_bytes()
        path.write_bytes(data[: len(data) // 2])
        expected = "is neither a MetaSchedule work dir nor an msviz bundle"
    elif what == "no manifest":
        _zip(path, {"work_dir/database_workload.json": ""})
        expected = "is a zip but not an msviz bundle: it has no manifest.json"
    else:
        _zip(path, {"manifest.json": json.dumps({"format": 1, "msviz_version": "0.1.0"})})
        expected = "holds no work dir: database_workload.json, database_tuning_record.json"
    with pytest.raises(BundleError) as info:
        msviz.open(path)
    assert str(info.value).startswith(str(path)) and expected in str(info.value)
    assert isinstance(info.value, WorkDirError)  # caught like any path msviz.open refuses


def test_a_member_outside_the_work_dir_is_not_extracted(tmp_path: Path) -> None:
    path = _zip(tmp_path / "sly.zip", {
        "manifest.json": json.dumps({"format": 1, "msviz_version": "0.1.0", "name": "../up"}),
        "work_dir/database_workload.json": "", "work_dir/database_tuning_record.json": "",
        "work_dir/../../escaped.txt": "x", "elsewhere.txt": "y"})
    extracted, _ = extract_bundle(path, tmp_path / "into")
    assert extracted == tmp_path / "into" / "_up"
    assert sorted(p.name for p in (tmp_path / "into").rglob("*")) == [
        "_up", "database_tuning_record.json", "database_workload.json"]
    assert not (tmp_path / "escaped.txt").exists()


def test_an_output_that_cannot_be_written_is_named(work_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=f"cannot write the bundle to {tmp_path}/no/run.zip"):
        write_bundle(work_dir, tmp_path / "no" / "run.zip")
    with pytest.raises(BundleError, match="it is a directory"):
        write_bundle(work_dir, tmp_path)
    (tmp_path / "a-file").write_text("")
    with pytest.raises(BundleError, match=f"cannot write the bundle to {tmp_path}/a-file/run"):
        write_bundle(work_dir, tmp_path / "a-file" / "run.zip")
    with pytest.raises(WorkDirError, match="is not a MetaSchedule work dir"):
        write_bundle(tmp_path / "missing", tmp_path / "x.zip")


def test_a_write_that_fails_midway_leaves_the_old_bundle(
        work_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    old = write_bundle(work_dir, out / "run.zip").read_bytes()
    (work_dir / "database_tuning_record.json").write_text("[0, []]\n[0, []]\n")
    real_write = zipfile.ZipFile.write

    def disk_full(self: zipfile.ZipFile, filename: object, *args: object) -> None:
        if str(filename).endswith(".log"):  # the last member: the disk fills up
            raise OSError(28, "No space left on device")
        real_write(self, filename, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(zipfile.ZipFile, "write", disk_full)
    with pytest.raises(BundleError, match=f"cannot write the bundle to {out}/run.zip: No space"):
        write_bundle(work_dir, out / "run.zip", overwrite=True)
    assert [p.name for p in out.iterdir()] == ["run.zip"]  # no temporary file left
    assert (out / "run.zip").read_bytes() == old


def test_the_cli_names_a_path_that_is_not_a_bundle(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    assert main(["reproduce", str(text)]) == 2
    assert capsys.readouterr().err.startswith(f"msviz: error: {text} is neither a MetaSchedule "
                                              "work dir nor an msviz bundle")
    assert main(["bundle", str(tmp_path / "nowhere"), "-o", str(tmp_path / "x.zip")]) == 2
    assert f"{tmp_path / 'nowhere'} is not a MetaSchedule work dir" in capsys.readouterr().err
    assert not (tmp_path / "x.zip").exists()
