"""msviz: see and steer TVM MetaSchedule tuning from Jupyter."""

from msviz import models, workloads
from msviz.engine import RuleSet, Session
from msviz.engine.py_strategy import search_strategy as search_strategy
from msviz.engine.rpc import rpc
from msviz.errors import DecisionError, MsvizError, MsvizWarning, WorkDirError, WorkloadError
from msviz.records import Run, Trial
from msviz.records import open_work_dir as open
from msviz.trace import decision_sites, trace_rows, with_decisions

__all__ = [
    "DecisionError",
    "MsvizError",
    "MsvizWarning",
    "RuleSet",
    "Run",
    "Session",
    "Trial",
    "WorkDirError",
    "WorkloadError",
    "compare",
    "decision_sites",
    "models",
    "open",
    "rpc",
    "trace_rows",
    "with_decisions",
    "workloads",
]
__version__ = "0.1.0"


def compare(*sources, names=None):  # type: ignore[no-untyped-def]
    """Compare runs side by side (work dirs, Runs or Sessions; the first is the baseline):
    their best so far on one plot, by trial or wall time, over a summary table. See
    :func:`msviz.widgets.compare_view.compare`."""
    from msviz.widgets.compare_view import compare as compare_runs

    return compare_runs(*sources, names=names)
