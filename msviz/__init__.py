"""msviz: see and steer TVM MetaSchedule tuning from Jupyter."""

from typing import Any

from msviz import models, workloads
from msviz.archive.bundle import write_bundle as bundle
from msviz.archive.merge import database, merge
from msviz.archive.migrate import migrate_work_dir as migrate
from msviz.engine import Session
from msviz.engine.measure.ray_builder import ray_builder
from msviz.engine.measure.rpc import rpc
from msviz.engine.measure.run_actions import open_run
from msviz.engine.search import search_strategy
from msviz.errors import (
    BundleError,
    DecisionError,
    MissingExtraError,
    MsvizError,
    MsvizWarning,
    RayClusterError,
    ReplayError,
    TargetError,
    WorkDirError,
    WorkloadError,
    WriteError,
)
from msviz.records import Run, Trial
from msviz.records.coverage import run_coverage
from msviz.records.library import Library
from msviz.records.many_runs import open_many
from msviz.records.shape_cover import ShapeCover
from msviz.records.shape_cover import read_shape_cover as open_shapes
from msviz.space_generator import RuleSet
from msviz.trace import decision_sites, trace_rows, with_decisions
from msviz.version import __version__ as __version__
from msviz.workflows.compare_models import compare_models
from msviz.workflows.coverage import coverage
from msviz.workflows.deploy import TunedModel, build
from msviz.workflows.reproduce import reproduce
from msviz.workflows.rerun import propose_restriction, rerun
from msviz.workflows.shapes import ShapeFamily, ShapeTuning, shapes, tune_shapes
from msviz.workflows.vs_runtimes import vs_runtimes

__all__ = [
    "BundleError",
    "DecisionError",
    "Library",
    "MissingExtraError",
    "MsvizError",
    "MsvizWarning",
    "RayClusterError",
    "ReplayError",
    "RuleSet",
    "Run",
    "Session",
    "ShapeCover",
    "ShapeFamily",
    "ShapeTuning",
    "TargetError",
    "Trial",
    "TunedModel",
    "WorkDirError",
    "WorkloadError",
    "WriteError",
    "build",
    "bundle",
    "compare",
    "compare_models",
    "coverage",
    "dashboard",
    "database",
    "decision_sites",
    "merge",
    "migrate",
    "models",
    "open",
    "open_many",
    "open_shapes",
    "propose_restriction",
    "ray_builder",
    "reproduce",
    "rerun",
    "rpc",
    "search_strategy",
    "shapes",
    "shapes_view",
    "trace_rows",
    "tune_shapes",
    "vs_runtimes",
    "why_not",
    "with_decisions",
    "workloads",
]


def open(work_dir: Any, *, library: Any = None, target: Any = None) -> Run:
    """Open a MetaSchedule work dir (or a bundle of one) without re-tuning: a :class:`Run`.

    ``library`` (paths, or a :class:`Library`): ``run.coverage`` says what that tuning library
    holds for each of the run's tasks, on ``target`` (default: the target the run tuned for),
    as the Tasks tab and the report show it. See :func:`msviz.records.open_work_dir`.
    """
    run = open_run(work_dir)
    if library is not None:
        lib = library if isinstance(library, Library) else Library(library)
        run.library_coverage = run_coverage(run, lib, target)
    return run


def dashboard(source: Any, **options: Any) -> Any:
    """A notebook dashboard of a :class:`Session` (live: controls, progress, views) or a
    :class:`Run` (a finished or stock work dir).

    The widgets are imported here, on first use: they are heavy (ipywidgets, plotly,
    anywidget: about a second) and the CLI and the engine never need them.
    """
    from msviz.widgets import Dashboard  # heavy: ipywidgets, plotly, anywidget

    return Dashboard(source, **options)


def compare(*sources: Any, names: Any = None) -> Any:
    """Compare runs side by side (work dirs, Runs or Sessions; the first is the baseline):
    their best so far on one plot, by trial or wall time, a model's time to quality (estimated
    model latency against wall time), and a summary table. See
    :func:`msviz.widgets.compare_view.compare` (imported on first use: widgets are heavy)."""
    from msviz.widgets.compare_view import compare as compare_runs  # heavy: the widgets

    return compare_runs(*sources, names=names)


def shapes_view(source: Any, **options: Any) -> Any:
    """A notebook view of a shape cover: a :class:`ShapeCover`, a work root holding one
    (``shapes.json``), or a live :class:`ShapeTuning` it follows (its regret heat map, dispatched
    against own latency, the dispatch table). See :class:`msviz.widgets.shapes_view.ShapesView`
    (imported on first use: widgets are heavy)."""
    from msviz.widgets.shapes_view import ShapesView  # heavy: ipywidgets, plotly

    return ShapesView(source, **options)


def why_not(workload: Any, *, target: Any = "llvm", rules: Any = None, **want: Any) -> Any:
    """Force a transformation MetaSchedule did not produce and say what blocks it: see
    :func:`msviz.whynot.answer.why_not` (imported on first use: it loads MetaSchedule's
    rules and tensor intrinsics)."""
    from msviz.whynot.answer import why_not as analyse  # heavy: MetaSchedule's rules

    return analyse(workload, target=target, rules=rules, **want)


