"""Bad Session arguments fail in the constructor, naming the argument
(msviz/engine/arguments.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import msviz
from msviz.engine import arguments as options


def test_work_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a work dir")
    with pytest.raises(msviz.WorkDirError, match=r"work_dir '.*notes\.txt' is a file"):
        msviz.Session("GMM-0", work_dir=path)


@pytest.mark.parametrize("seed", [True, 1.7, "abc", 2.0])
def test_seed_must_be_an_int(seed: object) -> None:
    with pytest.raises(TypeError, match=rf"seed must be an int .*not {type(seed).__name__}"):
        msviz.Session("GMM-0", seed=seed)


def test_integer_seeds_are_accepted() -> None:
    assert options.check_seed(np.int64(7)) == 7 and type(options.check_seed(np.int64(7))) is int
    assert options.check_seed(3) == 3 and options.check_seed(None) is None


def test_resume_of_a_missing_work_dir_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "tyop"
    with pytest.raises(msviz.WorkDirError, match=r"resume=True but work_dir '.*tyop' does not "
                       r"exist.*resume=False"):
        msviz.Session("GMM-0", work_dir=missing, resume=True)
    assert not missing.exists()
    with pytest.raises(msviz.WorkDirError, match="resume=True needs the work_dir"):
        msviz.Session("GMM-0", resume=True)
