"""The CLI speaks in flags: a bad value is refused by argparse naming the flag (exit 2, no
traceback, no Python argument name), and over RPC the wait says why it waits ("connection
refused") and ends after ``--rpc-wait`` seconds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import msviz
from msviz.cli import main
from msviz.engine.measure.loopback import free_port


@pytest.mark.parametrize(("argv", "said"), [
    (["--trials", "0"], "argument --trials: 0 is out of range: must be >= 1"),
    (["--batch", "100000"], "argument --batch: 100000 is out of range: must be from 1 to 4,096"),
    (["--seed", "-1"], "argument --seed: -1 is out of range: must be from 0 to 2,147,483,647"),
    (["--target", "{kind: llvm"], "argument --target: '{kind: llvm' is not a JSON dict"),
    (["--target", "no-such-kind"], "argument --target: 'no-such-kind' is not a target TVM "
                                   "knows"),
    (["--rpc", "localhost:9190"], "argument --rpc: want HOST:PORT:KEY"),
    (["--rpc-wait", "0"], "argument --rpc-wait: 0 must be a positive number of seconds"),
    (["--time", "0"], "argument --time: 0 must be a positive number of seconds"),
    (["--time", "5x"], "argument --time: '5x' is not a duration (seconds, or 90s, 20m, 1h30m)"),
    (["--time-per-task", "ten"], "argument --time-per-task: 'ten' is not a duration"),
    (["--population-size", "2000000"], "argument --population-size: 2000000 is out of range"),
])
def test_a_bad_flag_is_named(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
                             ) -> None:
    with pytest.raises(SystemExit) as done:
        main(["tune", "GMM-0", *argv])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err


def test_a_seed_out_of_range_is_refused_by_session() -> None:
    with pytest.raises(ValueError, match=r"seed must be within 0 \.\. 2147483647.*got -1"):
        msviz.Session("GMM-0", seed=-1)


def test_a_refused_rpc_connection_is_said_and_the_wait_ends(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    code = main(["tune", "GMM-0", "--trials", "2", "--batch", "2", "--no-report",
                 "--work-dir", str(tmp_path / "wd"), "--rpc", f"127.0.0.1:{free_port()}:cpu",
                 "--rpc-wait", "3"])
    assert time.monotonic() - started < 60
    out, err = capsys.readouterr()
    assert code == 1
    assert "msviz: waiting for an RPC server under key 'cpu'" in out, out
    assert "Connection refused" in out and "giving up after 3 s (--rpc-wait)" in out, out
    assert "Traceback" not in err
    assert "msviz: tuning failed: NoDevicesError: no RPC server registered under key 'cpu'" \
        in err and "within 3 s" in err, err


def test_durations_parse() -> None:
    from msviz.cli import build_parser

    args = build_parser().parse_args(["tune", "mlp", "--time", "1h30m", "--time-per-task", "90s"])
    assert (args.time, args.time_per_task, args.trials) == (5400.0, 90.0, None)
