"""The record-file reader on hand-written lines: fast path, full-parser fallback, bad lines;
run_secs read as stock ``JSONDatabase`` reads them, traces without a schedule instruction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from msviz.errors import MsvizWarning
from msviz.records.database import has_schedule, read_record_columns, read_records

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
        _line(0, '["1e-05"]'),  # not numbers: corrupt
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


def test_run_secs_as_stock_reads_them(tmp_path: Path) -> None:
    """What stock ``JSONDatabase`` reads is read (``true`` is 1.0, as stock reads it; times
    below 1 ns with a warning); what it refuses (it then opens nothing) is a corrupt line."""
    read = {"[0.0,2.0]": (0.0, 2.0), "[-1.0]": (-1.0,), "[true]": (1.0,), "[false]": (0.0,),
            "[3,10000000000]": (3.0, 1e10), "[1e-15]": (1e-15,), "[3.4e38]": (3.4e38,),
            "[2.2250738585072014e-308]": (2.2250738585072014e-308,)}
    refused = ["[NaN]", "[Infinity]", "[-Infinity]", "[3.5e38]", "[-3.5e38]", "[1e-310]",
               "[null]", "[1.0,null]", '[[1.0]]', "{}"]
    lines = [_line(0, secs) for secs in [*read, *refused]]
    lines.append(json.dumps(json.loads(_line(0, "[-1.0]"))))  # the full parser's path too
    path = tmp_path / "database_tuning_record.json"
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(MsvizWarning) as caught:
        columns = read_record_columns(path, num_workloads=1)
    low = [n for n, secs in enumerate(read, start=1) if min(read[secs]) < 1e-9] + [len(lines)]
    assert [str(w.message) for w in caught] == [
        f"{path}: skipped {len(refused)} torn or corrupt record line(s) (line "
        f"{', '.join(str(len(read) + k) for k in range(1, len(refused) + 1))}); "
        "the other lines were read",
        f"{path}: {len(low)} record line(s) hold run_secs below 1 ns, zero or negative (line "
        f"{', '.join(map(str, low))}): no kernel runs that fast, but MetaSchedule ranks them "
        "as they are (the least mean is what compile_tir picks); msviz never picks one faster "
        "than the machine can be (status 'impossible')"]
    assert columns.run_secs == [*read.values(), (-1.0,)]


def test_traces_without_a_schedule_instruction(tmp_path: Path) -> None:
    """Listed in ``unscheduled`` (``TuningRecord::IsValid`` is false), by both parsers."""
    post = '[[["EnterPostproc",[],[],[]],["SampleCategorical",[],[{"a":[1,2]}],[]]],[[1,1]]]'
    early = '[[["Enter",[],[],[]],["EnterPostproc",[],[],[]]],[]]'  # an "E" kind, not postproc
    traces = [TRACE, "[[],[]]", post, early, "[[],[]]", post]
    lines = [_line(0, "[1e-05]").replace(TRACE, t) for t in traces]
    lines[4:] = [json.dumps(json.loads(line)) for line in lines[4:]]  # spaced: the full parser
    path = tmp_path / "database_tuning_record.json"
    path.write_text("\n".join(lines) + "\n")
    columns = read_record_columns(path, num_workloads=1)
    assert columns.line == [1, 2, 3, 4, 5, 6] and columns.unscheduled == {2, 3, 5, 6}
    assert [has_schedule(json.loads(t)) for t in traces] == [True, False, False, True, False,
                                                             False]
    assert [r.line for r in read_records(path, 1)] == columns.line
