"""What the fault tests share: a tiny real run and its bundle."""

from __future__ import annotations

from pathlib import Path

import pytest

from msviz.cli import main
from tests.engine.conftest import make_tiny_session


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny msviz run of GMM-0 (2 trials) and its bundle (one per test module)."""
    root = tmp_path_factory.mktemp("tuned")
    session = make_tiny_session(root / "wd", max_trials=2, trials_per_batch=2)
    session.start()
    assert session.wait(300) == "finished", session.end_reason
    bundle = root / "run.zip"
    assert main(["bundle", str(session.work_dir), "-o", str(bundle)]) == 0
    return session.work_dir, bundle
