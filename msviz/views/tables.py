"""The task table and the trials table as display-ready frames."""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from msviz.views.common import is_infra

__all__ = [
    "FILTER_COLUMNS",
    "TableInfo",
    "TrialPageInfo",
    "failure_triage_info",
    "task_table_info",
    "trial_page_info",
    "trial_table_info",
]


class TableInfo(NamedTuple):
    """A frame to show and a note on what was left out."""

    frame: pd.DataFrame
    note: str


def task_table_info(tasks: pd.DataFrame) -> TableInfo:
    """MetaSchedule's per-task table (ID, name, FLOP, weight, GFLOPS, latency, trials, failures)."""
    frame = pd.DataFrame(
        {
            "Name": tasks["task"],
            "FLOP": tasks["flop"].map(lambda f: f"{f:,.0f}" if f == f else "?"),
            "Weight": tasks["weight"],
            "Speed (GFLOPS)": tasks["best_gflops"].round(4),
            "Latency (us)": tasks["best_latency_us"].round(4),
            "Weighted Latency (us)": (
                tasks["best_latency_us"] * tasks["weight"].fillna(1)
            ).round(4),
            "Trials": tasks["trials"],
            "Failed": tasks["failed"],
        }
    )
    frame.index.name = "ID"
    return TableInfo(frame, "")


def trial_table_info(trials: pd.DataFrame, *, limit: int = 2000) -> TableInfo:
    """The trials to list: all of them up to ``limit``, else the fastest and every failure.

    Parameters
    ----------
    trials : pandas.DataFrame
        ``Run.trials``.
    limit : int
        Most rows to show.
    """
    columns = ["task", "trial", "task_trial", "status", "latency_us", "gflops", "error"]
    frame = trials[columns]
    if len(frame) <= limit:
        return TableInfo(frame, "")
    failed = frame[frame["status"] != "ok"].head(limit // 2)
    fastest = frame[frame["status"] == "ok"].nsmallest(limit - len(failed), "latency_us")
    shown = pd.concat([fastest, failed]).sort_values("trial")
    note = (
        f"showing {len(shown)} of {len(frame)} trials: the {len(fastest)} fastest and "
        f"{len(failed)} of {int((frame['status'] != 'ok').sum())} failures"
    )
    return TableInfo(shown, note)


#: Columns of the failure triage table.
TRIAGE_COLUMNS = ("status", "fault", "cause", "count", "trials")
#: Columns a trials table may be filtered by (when the trials carry them).
FILTER_COLUMNS = ("task", "status", "generation", "batch")
#: Columns the trials table shows, in order (those missing from a run are left out). A trial
#: carried from a tuning library has origin ``"library"``, one carried from a sibling task of
#: the run ``"carried"``; both say from where (``carry``, ``carried_from``) and which decisions
#: were changed (``adjusted``).
TABLE_COLUMNS = (
    "trial", "task", "status", "latency_us", "gflops", "generation", "batch",
    "origin", "carry", "carried_from", "adjusted", "predicted_score", "mutator", "design_space",
    "design_space_inferred", "check", "device", "error",
)


class TrialPageInfo(NamedTuple):
    """One page of a sorted, filtered trials table."""

    columns: tuple[str, ...]
    rows: tuple[dict, ...]  # JSON-ready records of the page
    total: int  # rows after filtering
    page: int  # the page shown (clamped to the pages there are)
    pages: int
    options: dict  # filter column -> the values present, for the filter menus


def _has_values(column: pd.Series) -> bool:
    """Whether a column holds something to show (not only missing values or empty text)."""
    present = column.notna()
    if column.dtype == object and present.any():
        present &= column != ""
    return bool(present.any())


def _json_value(value: object) -> object:
    if value is None:
        return None
    if isinstance(value, float):
        return None if value != value else round(value, 6)
    if hasattr(value, "item"):  # numpy scalars
        return _json_value(value.item())  # type: ignore[attr-defined]
    if isinstance(value, (int, str, bool)):
        return value
    return str(value)


def trial_page_info(
    trials: pd.DataFrame,
    *,
    sort_by: str = "trial",
    ascending: bool = True,
    filters: dict | None = None,
    page: int = 0,
    page_size: int = 50,
) -> TrialPageInfo:
    """The rows of one page of the trials table, after filtering and sorting.

    Only one page is ever turned into JSON, so a 10,000-row run renders as fast as a small one.

    Parameters
    ----------
    trials : pandas.DataFrame
        ``Run.trials`` or ``Session.trials``.
    sort_by : str
        Column to sort by; failed trials (NaN latency) sort last.
    ascending : bool
        Sort order.
    filters : dict, optional
        ``{column: value or [values]}`` for columns in :data:`FILTER_COLUMNS`.
    page, page_size : int
        Which page, and rows per page.
    """
    # msviz's sidecar columns are empty for stock work dirs (the library's, for a run
    # without one): leave those out
    core = ("trial", "task", "status", "latency_us", "gflops", "error")
    columns = tuple(
        c for c in TABLE_COLUMNS
        if c in trials.columns and (c in core or _has_values(trials[c]))
    )
    options = {
        c: sorted({_json_value(v) for v in trials[c].dropna().unique()}, key=str)
        for c in FILTER_COLUMNS
        if c in columns
    }
    frame = trials
    for column, wanted in (filters or {}).items():
        if column not in FILTER_COLUMNS or column not in frame.columns:
            raise ValueError(
                f"cannot filter by {column!r}; filterable columns: "
                f"{', '.join(c for c in FILTER_COLUMNS if c in trials.columns)}"
            )
        if wanted is None or wanted == "" or wanted == []:
            continue
        values = wanted if isinstance(wanted, (list, tuple, set)) else [wanted]
        frame = frame[frame[column].map(_json_value).isin(list(values))]
    if sort_by not in frame.columns:
        raise ValueError(f"cannot sort by {sort_by!r}; columns: {', '.join(columns)}")
    if sort_by != "trial" or not ascending:
        frame = frame.sort_values(sort_by, ascending=ascending, na_position="last", kind="stable")
    total = len(frame)
    pages = max(1, -(-total // page_size))
    page = min(max(0, page), pages - 1)
    chunk = frame.iloc[page * page_size : (page + 1) * page_size]
    rows = tuple(
        {c: _json_value(v) for c, v in zip(columns, values, strict=True)}
        for values in chunk[list(columns)].itertuples(index=False, name=None)
    )
    return TrialPageInfo(columns, rows, total, page, pages, options)


def failure_triage_info(trials: pd.DataFrame) -> TableInfo:
    """Failed trials grouped by cause: status and the error's last meaningful line, with counts
    and the trials they hit (most frequent first).

    ``fault`` says whom a failure blames: ``infrastructure`` (status ``infra_error``: the
    measuring machinery failed, not the candidate) or ``candidate``.
    """
    failed = trials[trials["status"] != "ok"]
    if failed.empty:
        return TableInfo(pd.DataFrame(columns=list(TRIAGE_COLUMNS)), "")

    def cause(error: object) -> str:
        if not isinstance(error, str) or not error.strip():
            return "(no error text: the stock database keeps only run_secs=[1e10])"
        if error.startswith("wrong result: "):  # one group per output, not per difference
            return error.split(" differs", 1)[0] + " differs from the untuned workload"
        lines = [ln.strip() for ln in error.strip().splitlines() if ln.strip()]
        # the exception line of a traceback says most; the first line says who failed
        exc = [ln for ln in lines if ln.split(":", 1)[0].endswith(("Error", "Exception"))]
        return (exc[-1] if exc else lines[-1])[:200]

    keyed = failed.assign(cause=failed["error"].map(cause))
    groups = [
        {"status": status, "fault": "infrastructure" if is_infra(status) else "candidate",
         "cause": why, "count": len(group),
         "trials": ", ".join(map(str, group["trial"].head(12)))
         + (" ..." if len(group) > 12 else "")}
        for (status, why), group in keyed.groupby(["status", "cause"], sort=False)
    ]
    frame = pd.DataFrame(groups, columns=list(TRIAGE_COLUMNS))
    frame = frame.sort_values("count", ascending=False, kind="stable")
    return TableInfo(frame.reset_index(drop=True), "")
