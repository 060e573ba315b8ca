"""The record-file reader on hand-written lines: fast path, full-parser fallback, bad lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from msviz.errors import MsvizWarning
from msviz.records.database import read_record_columns, read_records

TARGET = '{"kind":"llvm","tag":"","keys":["cpu"],"num-cores":2}'
ARGS = '[["TENSOR","float32",[128,128]],["TENSOR","float32",[128,128]]]'
TRACE = '[[["SampleCategorical",[],[{"a":[1,2]}],[]]],[[0,1]]]'


def _line(workload: int, secs: str) -> str:
    return f"[{workload},[{TRACE},{secs},{TARGET},{ARGS}]]"


def test_read_records_against_json(tmp_path: Path) -> None:
    lines = [
        _line(0, "[1e-05,3e-05]"),
        _line(1, "[10000000000.0]"),  # a stock failure
        _line(0, "null"),
        _line(0, "[true]"),  # not numbers: corrupt
        _line(7, "[1e-05]"),  # no such workload: corrupt
        json.dumps(json.loads(_line(1, "[2e-05]"))),  # spaced JSON: the full parser reads it
        "",
        _line(0, "[4, 5]"),  # integers are numbers too
    ]
    path = tmp_path / "database_tuning_record.json"
    path.write_text("\n".join(lines) + "\n" + _line(0, "[1e-05]")[:60])  # torn last line
    with pytest.warns(MsvizWarning) as caught:
        columns = read_record_columns(path, num_workloads=2)
    assert len(caught) == 1
    assert str(caught[0].message) == (
        f"{path}: skipped 3 torn or corrupt record line(s) (line 4, 5, 9); "
        "the other lines were read")
    good = [1, 2, 3, 6, 8]
    assert columns.line == good
    parsed = [json.loads(lines[n - 1]) for n in good]
    assert columns.workload == [w for w, _ in parsed]
    assert columns.run_secs == [None if s is None else tuple(map(float, s))
                                for _, (_, s, _, _) in parsed]
    assert [json.loads(t) for t in columns.target] == [t for _, (_, _, t, _) in parsed]
    text = path.read_bytes()
    offsets = [0]
    for raw in text.split(b"\n")[:-1]:
        offsets.append(offsets[-1] + len(raw) + 1)
    assert columns.offset == [offsets[n - 1] for n in good]
    with pytest.warns(MsvizWarning):
        records = read_records(path, num_workloads=2)
    assert [(r.line, r.offset, r.run_secs) for r in records] == list(
        zip(columns.line, columns.offset, columns.run_secs))


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "database_tuning_record.json"
    path.write_text("")
    assert read_record_columns(path, 1).line == [] and read_records(path, 1) == []
