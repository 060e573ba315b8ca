"""One self-contained HTML file for a run: task table, best-so-far plots, best schedules, trials.

The file works offline: plotly's JavaScript is inlined once, nothing is fetched from a CDN.
"""

from __future__ import annotations

import datetime
import html
from pathlib import Path
from typing import Any

from msviz.analysis.restriction import REPORT_READ_AT_MOST, REPORT_TASKS, task_proposals
from msviz.archive.writer import check_output, default_output, output_file
from msviz.compat import describe_target
from msviz.errors import WriteError
from msviz.records import Run, open_work_dir
from msviz.records.environment import graph_summary
from msviz.records.model_profile import recorded_model_profile
from msviz.records.runtimes import recorded_runtimes
from msviz.records.shape_cover import ShapeCover, read_shape_cover
from msviz.records.sidecar import quarantine_of
from msviz.views import (
    best_so_far_figure,
    best_so_far_info,
    failure_triage_info,
    task_table_info,
    trial_table_info,
)
from msviz.views import tasks as model_views
from msviz.views._plotly_imports import pio
from msviz.views.common import quiet_empty
from msviz.views.coverage import (
    coverage_figure,
    coverage_html,
    coverage_info,
    library_trials,
    library_trials_text,
)
from msviz.views.end_to_end import end_to_end_html
from msviz.views.history import SMALL_MULTIPLES_FROM
from msviz.views.importance import importance_figure, importance_html
from msviz.views.model_profile import (
    model_profile_figure,
    model_profile_html,
    model_profile_info,
)
from msviz.views.profile import (
    SOURCES,
    profile_batches_figure,
    profile_info,
    profile_table_text,
    profile_tasks_figure,
    profile_totals_figure,
)
from msviz.views.quality import run_quality_info, time_to_quality_figure
from msviz.views.quarantine import quarantine_info
from msviz.views.runtimes import runtimes_figure, runtimes_html, runtimes_info
from msviz.views.shapes import (
    coverage_bars,
    dispatch_text,
    regret_heatmap,
    shape_cover_html,
    shape_cover_info,
)

__all__ = ["render_report", "render_shapes_report", "write_report", "write_shapes_report"]

_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 2em auto;
       max-width: 1200px; color: #1d1d1f; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table.msviz { border-collapse: collapse; font-size: 13px; }
table.msviz th, table.msviz td { border: 1px solid #ddd; padding: 3px 8px; text-align: right;
                                  vertical-align: top; }
table.msviz th { background: #f4f4f6; }
table.msviz td.text { text-align: left; }
tr.failed td { background: #fff0f0; }
tr.wrong td { background: #fff4d6; }
pre { background: #f7f7f9; padding: 10px; overflow-x: auto; font-size: 12px; max-height: 480px; }
td pre { max-height: 120px; margin: 0; padding: 4px; background: none; }
.note { color: #666; font-style: italic; }
"""


def _table(frame: Any, *, text_columns: tuple[str, ...] = (), failed: Any = None,
           wrong: Any = None) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in [frame.index.name or "", *frame])
    rows = []
    for pos, (index, row) in enumerate(frame.iterrows()):
        cells = [f"<td>{html.escape(str(index))}</td>"]
        for col, value in row.items():
            if value is None or (isinstance(value, float) and value != value):
                shown = ""
            elif isinstance(value, float):
                shown = f"{value:.4g}"
            else:
                shown = str(value)
            if col in text_columns:
                body = f"<pre>{html.escape(shown)}</pre>" if "\n" in shown else html.escape(shown)
                cells.append(f'<td class="text">{body}</td>')
            else:
                cells.append(f"<td>{html.escape(shown)}</td>")
        cls = ' class="failed"' if failed is not None and failed[pos] else ""
        if wrong is not None and wrong[pos]:  # ran fast, computed the wrong answer
            cls = ' class="wrong"'
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    body = "".join(rows)
    return f'<table class="msviz"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def graph_note(run: Run) -> list[str]:
    """What the graph passes did to the model, as its environment line records it (nothing
    for a work dir that does not say)."""
    summary = graph_summary(getattr(run, "environment", None))
    if summary is None:
        return []
    return [f'<p class="note msviz-graph">Graph: {html.escape(summary)}.</p>']


def _model_section(run: Run, end_to_end: Any, plotly_js: bool | str) -> list[str]:
    """The model: the per-task table, the estimated model latency and trials per task over the
    run, and the end-to-end result when there is one."""

    untuned = model_views.untuned_times(run=run)
    info = model_views.tasks_info(run.tasks, run.trials, untuned_us=untuned)
    frame = info.frame.drop(columns=["Gradient", "Next"])
    frame["Done"] = ["Y" if v else "" for v in frame["Done"]]
    frame["FLOP"] = [f"{v:,.0f}" if v == v else "?" for v in frame["FLOP"]]
    total = model_views.total_text(info, unit=" µs")
    parts = ['<h2 id="model">Model</h2>',
             f'<p class="note">{len(frame)} tasks; estimated model latency (sum of weight x '
             f"best latency, a task not tuned yet at its untuned time): {html.escape(total)}"
             + ("" if getattr(run, "total_latency_us", None) is None else
                f"; MetaSchedule's log says {run.total_latency_us:.4f} µs") + ".</p>",
             *graph_note(run), _table(frame, text_columns=("Name",))]
    latency = model_views.model_latency_info(run.tasks, run.trials, end_to_end,
                                             untuned_us=untuned)
    quality = _quality_parts(run, plotly_js)
    plotly_js = plotly_js if not quality else False
    parts += quality
    for fig in (model_views.model_latency_figure(latency),
                model_views.task_trials_figure(latency)):
        fig.update_layout(template="plotly_white")
        parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=plotly_js))
        plotly_js = False
    if latency.end_to_end is not None:
        parts.append(end_to_end_html(latency.end_to_end))
    profile = recorded_model_profile(run)
    if profile is not None:
        info_profile = model_profile_info(profile)
        fig = model_profile_figure(info_profile)
        fig.update_layout(template="plotly_white")
        parts += [model_profile_html(info_profile),
                  pio.to_html(fig, full_html=False, include_plotlyjs=plotly_js)]
    runtimes = recorded_runtimes(run)
    if runtimes is not None:  # msviz.vs_runtimes' line: the model against ORT and OpenVINO
        info_runtimes = runtimes_info(runtimes)
        fig = runtimes_figure(info_runtimes)
        fig.update_layout(template="plotly_white")
        parts += [runtimes_html(info_runtimes),
                  pio.to_html(fig, full_html=False, include_plotlyjs=plotly_js)]
    return parts


def _quality_parts(run: Run, plotly_js: bool | str) -> list[str]:
    """Time to quality: the estimated model latency after each batch against wall time (a
    task not tuned yet at its untuned time); nothing when the work dir has no timed batch."""
    with quiet_empty():
        info = run_quality_info(run)
    if not info.seconds:
        return []
    fig = time_to_quality_figure(info)
    fig.update_layout(template="plotly_white")
    where = {"sidecar": "as the session recorded it after each batch",
             "logs": "rebuilt from the records and the task-scheduler log (stamped to the "
                     "second); tasks without an untuned time count once they have a trial"}
    note = where.get(info.source, info.source)
    if info.missing and info.source != "sidecar":
        note += f"; no untuned time for {len(info.missing)} task(s)"
    return [f'<h3 id="time-to-quality">Time to quality</h3><p class="note">Estimated model '
            f"latency (weight x best latency, a task not tuned yet at its untuned time) "
            f"against wall time, {html.escape(note)}.</p>",
            pio.to_html(fig, full_html=False, include_plotlyjs=plotly_js)]


def render_report(run: Run | str | Path, *, title: str | None = None,
                  end_to_end: Any = None) -> str:
    """The HTML text of a run's report.

    Parameters
    ----------
    run : Run | str | Path
        A run, or a work dir to open.
    title : str, optional
        Heading of the page (default: the work dir).
    end_to_end : Event | dict, optional
        A model's ``end_to_end`` event (untuned vs tuned latency, match, fallback tasks),
        shown in the model section (default: the last one the work dir's sidecar holds).
    """
    if not isinstance(run, Run):
        run = open_work_dir(run)
    if end_to_end is None:
        end_to_end = run.end_to_end
    title = title or f"msviz report: {run.work_dir}"
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">{len(run.trials)} trials in {len(run.tasks)} task(s); generated '
        f"{datetime.datetime.now().isoformat(timespec='seconds')} by msviz.</p>",
    ]
    info = best_so_far_info(run.trials)
    plotly_js: bool | str = True
    if len(run.tasks) > 1 or end_to_end is not None:  # a model: its section comes first,
        parts += _model_section(run, end_to_end, plotly_js)  # with the task table (once)
        plotly_js = False
    else:
        parts += ["<h2>Tasks</h2>", _table(task_table_info(run.tasks).frame,
                                           text_columns=("Name",))]
    library = _library_section(run, plotly_js)
    if library:
        parts += library
        plotly_js = False
    # many tasks: one figure of a panel per task (WebGL once it holds many points), not a
    # figure per task (28 figures of 20,000 SVG points took 10 s to open)
    panels = len(run.tasks) >= SMALL_MULTIPLES_FROM
    if panels:
        fig = best_so_far_figure(info)
        fig.update_layout(template="plotly_white")
        parts += ['<h2 id="best-so-far">Best so far</h2>',
                  pio.to_html(fig, full_html=False, include_plotlyjs=plotly_js)]
        plotly_js = False
    for _, task in run.tasks.iterrows():
        name = str(task["task"])
        parts.append(f"<h2>Task {html.escape(name)}</h2>")
        if not panels:
            fig = best_so_far_figure(info, task=name)
            fig.update_layout(template="plotly_white")
            parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=plotly_js))
            plotly_js = False
        parts.append(_best_section(run, name))
    parts += _time_section(run, plotly_js)
    parts += _importance_section(run)
    plotly_js = False
    triage = failure_triage_info(run.trials).frame
    if len(triage):
        parts.append("<h2>Failures by cause</h2>")
        parts.append(_table(triage.set_index("status"), text_columns=("cause", "trials")))
    parts += _quarantine_section(run)
    table = trial_table_info(run.trials)
    parts.append("<h2>Trials</h2>")
    if table.note:
        parts.append(f'<p class="note">{html.escape(table.note)}</p>')
    frame = table.frame.set_index("trial")
    parts.append(
        _table(frame, text_columns=("task", "status", "error"),
               failed=list(frame["status"] != "ok"),
               wrong=list(frame["status"] == "wrong_result"))
    )
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(parts)
        + "</body></html>"
    )


def _library_section(run: Run, plotly_js: bool | str) -> list[str]:
    """What a tuning library covered of the model before tuning, and the trials that came
    from it (nothing when the work dir holds no coverage)."""
    cov = run.coverage
    if cov is None:
        return []
    with quiet_empty():  # a coverage of no task: the figure says so
        info = coverage_info(cov)
    fig = coverage_figure(info)
    fig.update_layout(template="plotly_white")
    parts = ['<h2 id="library">Library coverage</h2>', coverage_html(info),
             pio.to_html(fig, full_html=False, include_plotlyjs=plotly_js),
             f'<p class="msviz-library-trials">{html.escape(library_trials_text(run.trials))}'
             "</p>"]
    carried = library_trials(run.trials)
    if len(carried):
        parts.append(_table(carried.set_index("trial"), text_columns=("task", "from")))
    return parts


def _quarantine_section(run: Run) -> list[str]:
    """What the search skipped because it raised (nothing when nothing did)."""
    info = quarantine_info(quarantine_of(run))
    if not info.lines:
        return []
    return [f'<h2 id="quarantine">{html.escape(info.title)}</h2>',
            "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in info.lines) + "</ul>"]


def _time_section(run: Run, plotly_js: bool | str) -> list[str]:
    """Where the time went: MetaSchedule's Profiler table, the totals and the batches."""
    with quiet_empty():
        info = profile_info(run.profile)
    if info.source == "none":
        return ['<h2 id="time">Time</h2><p class="note">This work dir holds no timings (its logs '
                "stamp only one batch per task).</p>"]
    parts = ['<h2 id="time">Time</h2>',
             f'<p class="note">{html.escape(SOURCES[info.source])}.</p>',
             f"<pre>{html.escape(profile_table_text(info))}</pre>"]
    figures = [profile_totals_figure(info), profile_batches_figure(info)]
    if info.tasks["task"].nunique() > 1:
        figures.append(profile_tasks_figure(info))
    for fig in figures:
        fig.update_layout(template="plotly_white")
        parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=plotly_js))
        plotly_js = False
    return parts


def _importance_section(run: Run) -> list[str]:
    """What mattered: each costly task's decision importance and the proposed restriction."""
    with quiet_empty():
        proposals = task_proposals(run)
    if not proposals:
        return []
    parts = ['<h2 id="importance">What mattered</h2>',
             f'<p class="note">PED-ANOVA importance of each decision site over the trials of '
             f"the best design space (at most {REPORT_READ_AT_MOST} of them, spread over the "
             f"latency ranking), for the tasks that cost most (weight x best latency; at most "
             f"{REPORT_TASKS}), and the rule edits that keep only what the fastest trials "
             "chose (from the target's default rules).</p>"]
    for found in proposals:
        fig = importance_figure(found.importance)
        fig.update_layout(template="plotly_white")
        parts += [f"<h3>{html.escape(found.task)}</h3>",
                  pio.to_html(fig, full_html=False, include_plotlyjs=False),
                  importance_html(found.importance, found.changes)]
    return parts


def _best_section(run: Run, task: str) -> str:
    try:
        best = run.best(task)
    except ValueError as err:
        return f'<p class="note">{html.escape(str(err))}</p>'
    trace_py = "\n".join(best.trace.as_python(remove_postproc=False))
    target = describe_target(best.record.target)
    return (
        f"<h3>Best trial #{best.index}: {best.latency_us:.3f} µs, {best.gflops:.3f} GFLOPS</h3>"
        f'<p class="target">Target: {html.escape(target)}</p>'
        f"<h4>Trace</h4><pre>{html.escape(trace_py)}</pre>"
        f"<h4>TVMScript</h4><pre>{html.escape(best.mod.script())}</pre>"
    )


def write_report(run: Run | str | Path, path: str | Path | None = None, *,
                 title: str | None = None, end_to_end: Any = None,
                 overwrite: bool = False) -> Path:
    """Write :func:`render_report` to ``path`` and return the path.

    ``path`` defaults to ``WORK_DIR/report.html``, or ``<bundle stem>-report.html`` beside a
    bundle; an existing file is replaced only with ``overwrite=True``.
    """
    path = check_output(default_output(run, "report.html") if path is None else path,
                        overwrite=overwrite, what="report")  # before the report is made
    text = render_report(run, title=title, end_to_end=end_to_end)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise WriteError(f"cannot write the report {path}: {err.strerror or err}") from None
    with output_file(path, overwrite=overwrite, what="report") as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def render_shapes_report(cover: ShapeCover | str | Path, *, title: str | None = None) -> str:
    """The HTML text of a shape cover's report: the summary, the regret heat map, dispatched
    against own latency, the dispatch and a row per shape, each tuned shape's tuning.

    Parameters
    ----------
    cover : ShapeCover | str | Path
        A cover, or the work root holding its ``shapes.json``.
    title : str, optional
        Heading of the page (default: the family and the work root).
    """
    if not isinstance(cover, ShapeCover):
        cover = read_shape_cover(cover)
    info = shape_cover_info(cover)
    title = title or (f"msviz shapes report: {info.family} over {info.dim}"
                      + (f" ({cover.root})" if cover.root else ""))
    parts = [f"<h1>{html.escape(title)}</h1>",
             f'<p class="note">{len(info.labels)} shapes, target '
             f"{html.escape(_target_text(cover.target))}, {cover.trials} trials a tuned "
             f"shape; generated {datetime.datetime.now().isoformat(timespec='seconds')} by "
             "msviz.</p>",
             '<h2 id="cover">Cover</h2>', shape_cover_html(info)]
    plotly_js: bool | str = True
    for fig in (regret_heatmap(info), coverage_bars(info)):
        fig.update_layout(template="plotly_white")
        parts.append(pio.to_html(fig, full_html=False, include_plotlyjs=plotly_js))
        plotly_js = False
    parts += ['<h2 id="dispatch">Dispatch</h2>',
              f"<pre>{html.escape(dispatch_text(info))}</pre>"]
    if cover.work_dir:
        parts.append(f'<p class="note">The dispatch work dir (every shape\'s records, for '
                     f"<code>compile_tir</code>): <code>{html.escape(cover.work_dir)}</code> "
                     "in the work root.</p>")
    if cover.tuned:
        rows = "".join(
            f'<tr><td class="text">{html.escape(t.label)}</td><td>{t.order + 1}</td>'
            f"<td>{t.trials}</td><td>{t.seconds:,.1f}</td>"
            f'<td class="text">{html.escape(t.why)}</td></tr>'
            for t in sorted(cover.tuned, key=lambda t: t.order))
        parts += ['<h2 id="tuned">Tuned shapes</h2>',
                  '<table class="msviz"><thead><tr><th>shape</th><th>order</th><th>trials</th>'
                  f"<th>seconds</th><th>why</th></tr></thead><tbody>{rows}</tbody></table>"]
    return ('<!DOCTYPE html><html><head><meta charset="utf-8">'
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>")


def _target_text(target: str) -> str:
    """The cover's target in words; as written when TVM cannot read it back."""
    try:
        return describe_target(target)
    except ValueError:
        return target


def write_shapes_report(cover: ShapeCover | str | Path, path: str | Path | None = None, *,
                        title: str | None = None, overwrite: bool = False) -> Path:
    """Write :func:`render_shapes_report` to ``path`` (default ``ROOT/report.html`` of the
    cover's work root) and return the path; an existing file is replaced only with
    ``overwrite=True``."""
    if path is None:
        root = cover.root if isinstance(cover, ShapeCover) else cover
        if root is None:
            raise WriteError("this shape cover has no work root: give the report's path")
        path = Path(root) / "report.html"
    path = check_output(path, overwrite=overwrite, what="report")
    text = render_shapes_report(cover, title=title)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise WriteError(f"cannot write the report {path}: {err.strerror or err}") from None
    with output_file(path, overwrite=overwrite, what="report") as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
