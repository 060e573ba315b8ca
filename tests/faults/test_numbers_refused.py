"""Inputs that would change numbers are refused or flagged: ``msviz migrate --workload`` with a
workload of other shapes than its records', and a restriction proposed from a handful of trials
says it is weak."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from msviz.cli import main
from msviz.errors import MsvizWarning

OLD = Path(__file__).parents[1] / "records" / "data" / "gmm_tvm016"


def test_migrate_refuses_a_workload_of_other_shapes(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    work_dir = Path(shutil.copytree(OLD, tmp_path / "old"))
    shutil.rmtree(work_dir / "logs")  # so the workload must be given
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MsvizWarning)  # the records it cannot migrate alone
        assert main(["migrate", str(work_dir), "-o", str(tmp_path / "new"),
                     "--workload", "0=GMM-2"]) == 2
    err = capsys.readouterr().err
    assert "workload 0 as given (GMM-2) is not the one its records were tuned on" in err, err
    assert '"float32", [1, 128, 128]' in err  # the records' shapes are named
    assert not (tmp_path / "new").exists()


def test_a_restriction_from_a_few_trials_says_it_is_weak(stock_work_dirs: dict) -> None:
    import msviz
    from msviz.workflows.rerun import WEAK_BELOW, propose_restriction

    run = msviz.open(stock_work_dirs["GMM"])
    restriction = propose_restriction(run)
    used = restriction.importance.trials
    assert 1 <= used <= len(run.trials) < WEAK_BELOW
    caveat = f"(weak: from only {used} trials; {WEAK_BELOW} or more make it reliable)"
    assert restriction.weak and restriction.summary.endswith(caveat)
    assert f"; weak: only {used} trials" in str(restriction).splitlines()[0]
