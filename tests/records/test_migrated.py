"""Work dirs written by TVM before the s_tir rename: opened (migrated on read) and migrated into a
copy the pinned TVM's compile_tir accepts. The fixture is GMM-0 in TVM 0.16's form
(tests/records/data/make_tvm016_work_dir.py says how it was made)."""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import msviz
from msviz import compat, workloads
from msviz.archive.migrate import migrate_work_dir
from msviz.cli import main as cli_main
from msviz.errors import MsvizWarning, WorkDirError
from msviz.records.database import RECORD_FILE, WORKLOAD_FILE
from msviz.trace.spaces import trial_decisions

OLD = Path(__file__).parent / "data" / "gmm_tvm016"
NOTE = (r"8 records written by an older TVM were migrated \(GetBlock -> GetSBlock, "
        r"Split attrs \+1; workload rebuilt from its log's TVMScript: tir -> tirx, ")


def _own_records(work_dir: Path) -> list[list]:
    return [json.loads(line) for line in (work_dir / RECORD_FILE).read_text().splitlines()]


def _digest(work_dir: Path) -> dict[str, str]:
    return {str(p.relative_to(work_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(work_dir.rglob("*")) if p.is_file()}


def _numpy_check(mod, target) -> None:
    """Build ``mod`` (GMM-0: Z = X @ Y, batch 1, 128x128) and compare with numpy."""
    lib = compat.compile_module(mod, target)
    dev = compat.device_of(target)
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((1, 128, 128), dtype="float32") for _ in range(2))
    z = compat.to_tensor(np.zeros((1, 128, 128), "float32"), dev)
    lib["main"](compat.to_tensor(x, dev), compat.to_tensor(y, dev), z)
    np.testing.assert_allclose(z.numpy(), x @ y, rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def old_run() -> msviz.Run:
    with pytest.warns(MsvizWarning, match=NOTE):
        return msviz.open(OLD)


def test_the_fixture_is_in_the_old_form() -> None:
    # the pinned TVM refuses it as it is: GetBlock is unknown, the workload's JSON is legacy
    (_, (trace, *_)), *_ = _own_records(OLD)
    assert trace[0][0][0] == "GetBlock"
    shash, payload = json.loads((OLD / WORKLOAD_FILE).read_text())
    with pytest.raises(Exception):
        compat.Workload.from_json([shash, payload])


def test_old_work_dir_opens_migrated(old_run: msviz.Run) -> None:
    records = _own_records(OLD)
    assert old_run.migrated and old_run.migration.migrated == len(records) == 8
    assert old_run.migration.skipped == {}
    means = [np.mean(secs) * 1e6 for _, (_, secs, _, _) in records]
    np.testing.assert_allclose(old_run.trials["latency_us"], means, rtol=1e-12)
    best = old_run.best()
    assert best.index == int(np.argmin(means))
    # its trace: renamed instructions, the same decisions as the file's, by instruction index
    kinds = [inst.kind.name for inst in best.trace.insts]
    old_insts, old_decisions = records[best.index][1][0]
    assert kinds == [{"GetBlock": "GetSBlock"}.get(i[0], i[0]) for i in old_insts]
    insts = list(best.trace.insts)
    got = {insts.index(inst): compat.to_jsonable(value)
           for inst, value in best.trace.decisions.items()}
    assert got == {k: v for k, v in old_decisions}
    splits = [inst for inst in insts if inst.kind.name == "Split"]
    assert [compat.to_jsonable(s.attrs) for s in splits] == [[1, 0]] * len(splits)


def test_best_trial_of_old_work_dir_computes_numpy(old_run: msviz.Run) -> None:
    best = old_run.best()
    assert "T.sblock" in best.mod.script()
    _numpy_check(best.mod, compat.make_target({"kind": "llvm", "num-cores": 2}))


def test_decisions_view_reads_old_traces(old_run: msviz.Run) -> None:
    frame = trial_decisions(old_run)
    records = _own_records(OLD)
    # the view keeps the trials of the most common decision sites (one design space), fastest
    # first; the sites read here from the old JSON (instruction index and old kind)
    shapes = [tuple(sorted(f"#{k} {r[1][0][0][k][0]}" for k, _ in r[1][0][1])) for r in records]
    common = max(set(shapes), key=shapes.count)
    fastest = sorted((k for k in range(len(records)) if shapes[k] == common),
                     key=lambda k: np.mean(records[k][1][1]))
    assert list(frame["trial"]) == fastest
    tiles = [c for c in frame.columns if c.endswith("SamplePerfectTile")]
    assert tiles
    for _, row in frame.iterrows():
        decisions = dict(records[int(row["trial"])][1][0][1])
        for column in tiles:
            assert row[column] == str(decisions[int(column.split()[0][1:])])


def test_migrate_writes_a_copy_compile_tir_accepts(tmp_path: Path) -> None:
    before = _digest(OLD)
    report = migrate_work_dir(OLD, tmp_path / "new")
    assert _digest(OLD) == before  # the original is only read
    assert (report.records, report.migrated, report.skipped) == (8, 8, {})
    assert [p.name for p in tmp_path.iterdir()] == ["new"]  # no temporary dir left behind
    with warnings.catch_warnings():
        warnings.simplefilter("error", MsvizWarning)  # the copy needs no migration
        copy = msviz.open(tmp_path / "new")
    assert not copy.migrated
    assert copy.trials["run_secs"].tolist() == [tuple(r[1][1]) for r in _own_records(OLD)]
    assert copy.trials["task"].tolist() == ["main"] * 8  # the copied logs still name the task

    target = compat.make_target({"kind": "llvm", "num-cores": 2})
    mod = workloads.get("GMM-0").mod
    database = compat.JSONDatabase(work_dir=str(tmp_path / "new"))
    sch = compat.ms.tir_integration.compile_tir(database, mod, target)
    assert sch is not None
    best_trace = copy.best().trace
    assert str(sch.trace) == str(best_trace)
    replayed = compat.Schedule(compat.normalize_mod(mod))
    sch.trace.apply_to_schedule(replayed, remove_postproc=False)
    assert compat.structural_equal(replayed.mod, sch.mod)
    _numpy_check(sch.mod, target)


def _with_removed_instruction(tmp_path: Path, line: int) -> Path:
    work_dir = tmp_path / "old"
    shutil.copytree(OLD, work_dir)
    lines = (work_dir / RECORD_FILE).read_text().splitlines()
    record = json.loads(lines[line - 1])
    record[1][0][0].insert(2, ["SetAxisSeparator", ["b0"], [0, 1, [1]], []])
    record[1][0][1] = [[k + 1 if k >= 2 else k, v] for k, v in record[1][0][1]]
    lines[line - 1] = json.dumps(record, separators=(",", ":"))
    (work_dir / RECORD_FILE).write_text("\n".join(lines) + "\n")
    return work_dir


def test_record_that_cannot_be_migrated_is_skipped(tmp_path: Path) -> None:
    work_dir = _with_removed_instruction(tmp_path, line=3)
    with pytest.warns(MsvizWarning) as caught:
        run = msviz.open(work_dir)
    messages = [str(w.message) for w in caught]
    assert messages[0].endswith(": 7 records written by an older TVM were migrated (GetBlock -> "
                                "GetSBlock, Split attrs +1; workload rebuilt from its log's "
                                "TVMScript: tir -> tirx, T.prim_func -> s_tir=True, T.block -> "
                                "T.sblock, tir.noalias -> tirx.noalias, T.bool -> bool)")
    assert messages[1] == (f"{work_dir / RECORD_FILE}: skipped 1 record(s) that cannot be "
                           "migrated to the pinned TVM (line 3: instruction 2 SetAxisSeparator: "
                           "the pinned TVM has no SetAxisSeparator schedule primitive)")
    assert len(messages) == 2
    assert run.trials["line"].tolist() == [1, 2, 4, 5, 6, 7, 8]
    assert run.migration.migrated == 7
    report = migrate_work_dir(work_dir, tmp_path / "new")
    assert report.records == 7 and list(report.skipped) == [3]
    assert len(_own_records(tmp_path / "new")) == 7


def test_migrate_refuses_an_existing_output(tmp_path: Path) -> None:
    (tmp_path / "new").mkdir()
    with pytest.raises(WorkDirError, match="exists"):
        migrate_work_dir(OLD, tmp_path / "new")
    assert list((tmp_path / "new").iterdir()) == []


def test_cli_migrate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["migrate", str(OLD), "-o", str(tmp_path / "new")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{tmp_path / 'new'}: 8 records written, 8 migrated (GetBlock -> "
                          "GetSBlock, Split attrs +1; workload rebuilt")
    assert cli_main(["migrate", str(OLD), "-o", str(tmp_path / "new")]) == 2
    assert "exists" in capsys.readouterr().err


def test_old_workload_without_its_log_is_given_by_name(tmp_path: Path) -> None:
    work_dir = tmp_path / "old"
    shutil.copytree(OLD, work_dir)
    shutil.rmtree(work_dir / "logs")
    with pytest.warns(MsvizWarning) as caught:
        run = msviz.open(work_dir)
    assert len(run.trials) == 0
    assert [str(w.message) for w in caught] == [
        f"{work_dir / RECORD_FILE}: skipped 8 record(s) that cannot be migrated to the pinned "
        "TVM (" + "; ".join(
            f"line {k}: its workload (line 1 of database_workload.json) is in an older TVM's "
            "form and no task log prints it: give it as workload 0 (msviz migrate --workload "
            "0=NAME_OR_SCRIPT, or Run(..., migrate_workloads={0: mod}))" for k in range(1, 6))
        + ")"]
    assert cli_main(["migrate", str(work_dir), "-o", str(tmp_path / "new"),
                     "--workload", "0=GMM-0"]) == 0
    copy = msviz.open(tmp_path / "new")
    assert len(copy.trials) == 8
    _numpy_check(copy.best().mod, compat.make_target({"kind": "llvm", "num-cores": 2}))
    assert cli_main(["migrate", str(work_dir), "-o", str(tmp_path / "x"), "--workload", "GMM"]) == 2
    assert not (tmp_path / "x").exists()
