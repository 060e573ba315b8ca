"""Cost-model scores of candidates, their features kept across generations.

MetaSchedule's ``XGBModel.predict`` extracts every candidate's per-store features
(``PerStoreFeature``: a lowering of the scheduled module, then one row per buffer store) and
sums the booster's predictions per candidate. Extracting is most of the cost (about 6 ms a
schedule of a 3x3 conv2d on 2 cores); the booster is cheap. A schedule's features depend only on
its module, so :class:`FeatureCache` keeps them by structural hash: a schedule met again in a
later generation (the database's best records replayed in every one, children equal to an
earlier generation's) is only re-scored by the current booster. The scores are those
``XGBModel.predict`` gives; any other cost model is asked as it is.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from msviz import compat

__all__ = ["FeatureCache"]


def _is_xgb(model: Any) -> bool:
    # the stock class (or a subclass) whose predict is its own: features, then _predict
    return (isinstance(model, compat.ms.cost_model.XGBModel)
            and type(model).predict is compat.ms.cost_model.XGBModel.predict)


class FeatureCache:
    """Features of scored schedules by structural hash, the least recently used dropped first.

    Parameters
    ----------
    max_bytes : int
        How much feature data to keep (default 8 MiB a task: some 4,000 schedules of a 3x3
        conv2d, more than a generation scores; a model has a cache per task).
    """

    def __init__(self, max_bytes: int = 8 << 20) -> None:
        self.max_bytes = int(max_bytes)
        self.nbytes = 0
        self._rows: OrderedDict[int, np.ndarray] = OrderedDict()
        #: Features extracted / found in the cache, over this cache's life.
        self.extracted = 0
        self.reused = 0

    def __len__(self) -> int:
        return len(self._rows)

    def _put(self, shash: int, rows: np.ndarray) -> None:
        self._rows[shash] = rows
        self.nbytes += rows.nbytes
        while self.nbytes > self.max_bytes and len(self._rows) > 1:
            _, old = self._rows.popitem(last=False)
            self.nbytes -= old.nbytes

    def scores(self, model: Any, context: Any, schedules: Sequence[tuple[int, Any]]) -> np.ndarray:
        """The trained ``model``'s scores of ``(structural hash, schedule)`` pairs, in order."""
        cands = list(schedules)
        if not _is_xgb(model):
            return np.asarray(model.predict(context, [_candidate(sch) for _, sch in cands]),
                              dtype="float64")
        rows: dict[int, np.ndarray] = {}
        missing: dict[int, Any] = {}
        for shash, sch in cands:
            if shash in self._rows:
                self._rows.move_to_end(shash)
                rows[shash] = self._rows[shash]
            else:
                missing[shash] = sch
        if missing:
            found = model.extractor.extract_from(
                context, [_candidate(sch) for sch in missing.values()])
            for shash, x in zip(missing, found):
                rows[shash] = x.numpy().astype("float32")
                self._put(shash, rows[shash])
        self.extracted += len(missing)
        self.reused += len(cands) - len(missing)
        xs = [rows[shash] for shash, _ in cands]
        return np.asarray(compat.xgb_predict(model, xs), dtype="float64")  # as XGBModel.predict


def _candidate(sch: Any) -> Any:
    return compat.ms.search_strategy.MeasureCandidate(
        sch, compat.ArgInfo.from_entry_func(sch.mod, remove_preproc=True))
