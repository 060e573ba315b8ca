"""Untrusted inputs bounded, and inputs that would change numbers refused: a bundle's report and
export go beside it, outputs never replace a file unless --force, a zip bomb is not extracted,
a bundle's huge knobs are refused before they take memory, and a resume with another workload
or target is refused."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import msviz
from msviz.cli import main
from msviz.errors import BundleError, WorkDirError
from msviz.records.sidecar import SIDECAR_FILE
from tests.engine.conftest import make_tiny_session


def test_a_bundles_report_and_export_go_beside_it(tuned: tuple[Path, Path], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _, original = tuned
    bundle = Path(shutil.copy(original, tmp_path / "run.zip"))
    assert main(["report", str(bundle)]) == 0
    report = tmp_path / "run-report.html"
    assert capsys.readouterr().out.strip() == f"wrote {report}"
    assert "<h1>msviz report:" in report.read_text()
    assert main(["export", str(bundle)]) == 0
    exported = tmp_path / "run-trials.parquet"
    assert capsys.readouterr().out.strip() == f"wrote {exported}"
    assert len(pd.read_parquet(exported)) == len(msviz.open(bundle).trials) == 2
    # the Python API too: a run opened from a bundle exports beside it, not into its temp dir
    exported.unlink()
    run = msviz.open(bundle)
    assert run.export() == exported and exported.is_file()
    assert not (run.work_dir / "trials.parquet").exists()


def test_outputs_replace_a_file_only_when_forced(tuned: tuple[Path, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    work_dir, _ = tuned
    unrelated = tmp_path / "notes.zip"
    unrelated.write_text("my notes")
    for argv in (["bundle", str(work_dir), "-o", str(unrelated)],
                 ["report", str(work_dir), "-o", str(unrelated)],
                 ["export", str(work_dir), "-o", str(tmp_path / "notes.csv")]):
        (tmp_path / "notes.csv").write_text("my table")
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "exists: pass overwrite=True (--force on the command line)" in err, err
    assert unrelated.read_text() == "my notes"
    assert (tmp_path / "notes.csv").read_text() == "my table"
    assert main(["bundle", str(work_dir), "-o", str(unrelated), "--force"]) == 0
    assert zipfile.is_zipfile(unrelated)
    # never over something that is not a regular file, even forced
    link = tmp_path / "link.html"
    link.symlink_to(tmp_path / "notes.csv")
    assert main(["report", str(work_dir), "-o", str(link), "--force"]) == 2
    assert "is not a regular file" in capsys.readouterr().err
    assert (tmp_path / "notes.csv").read_text() == "my table"


def test_a_zip_bomb_is_not_extracted(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps({"format": 1, "msviz_version": "0.1.0",
                                                 "name": "bomb"}))
        zf.writestr("work_dir/database_workload.json", "")
        zf.writestr("work_dir/database_tuning_record.json", b"\0" * (64 * 2**20))
    assert bomb.stat().st_size < 2**20  # 64 MiB in well under 1 MiB
    with pytest.raises(BundleError, match="is not extracted: work_dir/database_tuning_record"
                                          r"\.json would expand"):
        msviz.open(bomb)


def _bundle_with_knobs(work_dir: Path, out: Path, **changes: Any) -> Path:
    copy = Path(shutil.copytree(work_dir, out.with_suffix("")))
    lines = (copy / SIDECAR_FILE).read_text().splitlines()
    for i, line in enumerate(lines):
        entry = json.loads(line)
        if entry["kind"] == "environment":
            entry["knobs"].update(changes.pop("knobs", {}))
            entry.update(changes)
            lines[i] = json.dumps(entry)
    (copy / SIDECAR_FILE).write_text("\n".join(lines) + "\n")
    assert main(["bundle", str(copy), "-o", str(out)]) == 0
    return out


def test_reproduce_refuses_a_bundles_huge_knobs(tuned: tuple[Path, Path], tmp_path: Path
                                                ) -> None:
    work_dir, _ = tuned
    bundle = _bundle_with_knobs(work_dir, tmp_path / "huge.zip", trials_per_batch=100_000,
                                knobs={"population_size": 2_000_000})
    result = msviz.reproduce(bundle, retime=False)
    assert result.first_batch.error.startswith("cannot make the session again: ")
    assert "beyond msviz's range" in result.first_batch.error


def test_resume_with_another_workload_or_target_is_refused(tuned: tuple[Path, Path],
                                                           tmp_path: Path) -> None:
    work_dir = Path(shutil.copytree(tuned[0], tmp_path / "wd"))
    with pytest.raises(WorkDirError, match="holds records of another workload than GMM-1"):
        msviz.Session("GMM-1", work_dir=work_dir, resume=True)
    with pytest.raises(WorkDirError, match=r"holds records for the target .* not this "
                                           r"session's"):
        make_tiny_session(work_dir, resume=True, target={"kind": "llvm", "mcpu": "haswell"})
    assert make_tiny_session(work_dir, resume=True).state == "idle"  # the same: fine
