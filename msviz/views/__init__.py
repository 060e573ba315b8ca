"""Pure view functions: data in, a small info NamedTuple out, then a plotly figure or HTML.

No widgets and no threads here: the HTML report and the notebook widgets share these infos.
"""

from msviz.views.history import HistoryInfo, TaskHistory, best_so_far_figure, best_so_far_info
from msviz.views.tables import failure_triage_info, task_table_info, trial_table_info

__all__ = [
    "HistoryInfo",
    "TaskHistory",
    "best_so_far_figure",
    "best_so_far_info",
    "failure_triage_info",
    "task_table_info",
    "trial_table_info",
]
