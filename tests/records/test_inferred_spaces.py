"""Design spaces of a stock work dir's trials, inferred under the target's default rules and
checked against our own match of the stored trace JSON with the design spaces' JSON."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import msviz
from msviz import compat
from msviz.errors import MsvizWarning
from msviz.records.database import RECORD_FILE
from msviz.records.inferred_spaces import INFERRED_COLUMN
from msviz.space_generator import RuleSet
from msviz.views.tables import trial_page_info

#: A stock tune_tir work dir of GMM-0 (written in TVM 0.16's form; migrated on read).
STOCK = Path(__file__).parent / "data" / "gmm_tvm016"
TARGET = {"kind": "llvm", "num-cores": 2}


def _sketch(insts: list) -> list:
    """The sampled instructions (up to EnterPostproc) in the pinned TVM's names, the extent of
    meta_schedule.parallel (MutateParallel's) left out, and getters whose results nothing uses
    left out (records keep the simplified trace)."""
    out = []
    for k, (kind, inputs, attrs, outputs) in enumerate(insts):
        if kind == "EnterPostproc":
            break
        used_later = {x for inst in insts[k + 1:] for x in json.dumps(inst[1]).split('"')}
        if kind.startswith("Get") and not set(outputs) & used_later:
            continue
        if attrs == ["meta_schedule.parallel"]:
            inputs = inputs[:1]
        if kind == "Split" and len(attrs) == 1:
            attrs = [*attrs, 0]
        out.append([{"GetBlock": "GetSBlock"}.get(kind, kind), inputs, attrs, outputs])
    return out


def _own_spaces(run: msviz.Run) -> list[int | None]:
    context = compat.ms.TuneContext(
        mod=run.workload_mod(0), target=compat.make_target(TARGET),
        space_generator=RuleSet.default(compat.make_target(TARGET)).space_generator(
            compat.make_target(TARGET)), num_threads=1)
    spaces = [_sketch(compat.to_jsonable(s.trace.as_json(remove_postproc=True))[0])
              for s in context.generate_design_space()]
    out = []
    for line in (STOCK / RECORD_FILE).read_text().splitlines():
        sketch = _sketch(json.loads(line)[1][0][0])
        out.append(next((k for k, space in enumerate(spaces) if space == sketch), None))
    return out


@pytest.fixture
def stock_run() -> msviz.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MsvizWarning)  # the migration note (test_migrated)
        return msviz.open(STOCK)


def test_stock_trials_get_inferred_design_spaces(stock_run: msviz.Run) -> None:
    assert stock_run.trials["design_space"].isna().all()  # tune_tir does not record them
    assert INFERRED_COLUMN not in stock_run.trials
    got = stock_run.infer_design_spaces()
    expected = _own_spaces(stock_run)
    assert None not in expected and len(set(expected)) > 1
    assert got.tolist() == expected
    assert stock_run.trials[INFERRED_COLUMN].tolist() == [True] * len(expected)
    # the trials table shows the label next to the space
    page = trial_page_info(stock_run.trials)
    assert page.columns[page.columns.index("design_space") + 1] == INFERRED_COLUMN
    assert [(r["design_space"], r[INFERRED_COLUMN]) for r in page.rows] == [
        (k, True) for k in expected]


def test_trials_from_other_rules_stay_without_a_space(stock_run: msviz.Run) -> None:
    rules = RuleSet.default(compat.make_target(TARGET)).remove("MultiLevelTiling")
    got = stock_run.infer_design_spaces(rules)
    assert got.isna().all()
    assert not stock_run.trials[INFERRED_COLUMN].any()
