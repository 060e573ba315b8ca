"""The trials table widget: sortable, filterable, paged; selecting a row selects that trial."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import pandas as pd
import traitlets

from msviz.views.tables import trial_page_info

__all__ = ["TrialTable"]

_STATIC = Path(__file__).resolve().parents[1] / "static"


class TrialTable(anywidget.AnyWidget):
    """A page of a trials DataFrame in the notebook; sorting and filtering run in Python.

    Parameters
    ----------
    trials : pandas.DataFrame
        ``Run.trials`` or ``Session.trials``; replace it later with :meth:`set_trials`.
    page_size : int
        Rows per page.
    """

    _esm = _STATIC / "trial_table.js"
    _css = _STATIC / "trial_table.css"

    columns = traitlets.List(traitlets.Unicode()).tag(sync=True)
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    options = traitlets.Dict().tag(sync=True)
    total = traitlets.Int(0).tag(sync=True)
    pages = traitlets.Int(1).tag(sync=True)
    page = traitlets.Int(0).tag(sync=True)
    page_size = traitlets.Int(50).tag(sync=True)
    sort_by = traitlets.Unicode("trial").tag(sync=True)
    ascending = traitlets.Bool(True).tag(sync=True)
    filters = traitlets.Dict().tag(sync=True)
    selected = traitlets.Int(-1).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)

    def __init__(self, trials: pd.DataFrame | None = None, *, page_size: int = 50,
                 **kwargs: Any) -> None:
        super().__init__(page_size=page_size, **kwargs)
        self._trials = trials if trials is not None else pd.DataFrame({"trial": []})
        self.observe(self._refresh, names=["page", "page_size", "sort_by", "ascending", "filters"])
        self._refresh()

    @property
    def trials(self) -> pd.DataFrame:
        """The full (unfiltered) trials frame shown."""
        return self._trials

    def set_trials(self, trials: pd.DataFrame) -> None:
        """Show a new trials frame, keeping sort, filters, page and selection."""
        self._trials = trials
        self._refresh()

    def _refresh(self, _change: Any = None) -> None:
        try:
            info = trial_page_info(
                self._trials, sort_by=self.sort_by, ascending=self.ascending,
                filters=self.filters, page=self.page, page_size=self.page_size,
            )
        except ValueError as err:
            self.error = f"[TrialTable] {err}"
            return
        with self.hold_sync():
            self.error = ""
            self.columns = list(info.columns)
            self.options = info.options
            self.total, self.pages = info.total, info.pages
            if self.page != info.page:
                self.page = info.page
            self.rows = list(info.rows)
