"""What a tuning library covers of a model, before any trial: :func:`coverage` fills
:class:`~msviz.records.coverage_types.Coverage` from a :class:`~msviz.records.library.Library`
and a model's tasks; :func:`coverage_text` prints it as a table (the CLI's output).

The same concept one room up: :mod:`msviz.views.coverage` draws it; :mod:`msviz.workflows.coverage`
is ``msviz.coverage`` (a model's tasks, their untuned times measured)."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from msviz.records.coverage_types import MATCHES, Coverage, TaskCoverage
from msviz.records.library import Library, LibraryEntry, workload_keys
from msviz.records.targets import record_target

__all__ = ["coverage", "coverage_text", "run_coverage"]

#: The kinds of match whose best latency counts as the library's for a task.
_REUSED = ("exact", "anchor")


def _source(entry: LibraryEntry) -> str:
    return f"{entry.source}/{entry.task or f'workload {entry.workload}'}"


def _task_coverage(task: Any, library: Library, target: Any, untuned: float | None
                   ) -> TaskCoverage:
    mod = task.workload.mod
    kind, entries = library.match(mod, target)
    sibling_entries = entries if kind == "sibling" else library.siblings(mod, target)
    best = entries[0] if entries else None
    return TaskCoverage(
        index=int(task.index), name=str(task.name), weight=int(task.weight),
        op=workload_keys(mod)[2], match=kind,
        best_us=best.best_us if best is not None and kind in _REUSED else None,
        source=_source(best) if best is not None else None,
        source_target=best.target if best is not None else None,
        siblings=len({(e.source, e.workload) for e in sibling_entries}),
        untuned_us=untuned)


def coverage(tasks: list, library: Library, target: Any, *, model: str = "model",
             untuned_us: dict[int, float] | None = None) -> Coverage:
    """What ``library`` holds for each task of a model on ``target``.

    Parameters
    ----------
    tasks : list of msviz.models.model.ModelTask
        The model's tasks (``index``, ``name``, ``weight``, ``workload.mod``).
    library : Library
        The tuning library.
    target : tvm.target.Target | str | dict
        The target the model runs on (anything
        :func:`~msviz.records.targets.record_target` reads; ``"llvm"``: this CPU).
    model : str
        The model's name.
    untuned_us : dict of int to float, optional
        Each task's untuned latency (µs) by task index. The totals (``library_us``,
        ``untuned_us``, ``covered_share``) are computed only when every task has one.

    Returns
    -------
    Coverage
        One :class:`TaskCoverage` per task, in the order given; the library's problems
        followed by one message per source holding no record of ``target``.
    """
    target = record_target(target)
    given = untuned_us or {}
    rows = tuple(_task_coverage(t, library, target, given.get(t.index)) for t in tasks)
    library_us = untuned_total = share = None
    if untuned_us is not None and all(r.untuned_us is not None for r in rows):
        untuned_total = sum(r.weight * r.untuned_us for r in rows)
        library_us = sum(r.weight * (r.best_us if r.match in _REUSED else r.untuned_us)
                         for r in rows)
        covered = sum(r.weight * r.untuned_us for r in rows if r.match in _REUSED)
        share = covered / untuned_total if untuned_total > 0 else None
    return Coverage(model, library.target_text(target), tuple(library.sources), rows, library_us,
                    untuned_total, share,
                    tuple(library.problems) + tuple(library.other_targets(target)))


def _us(value: float | None) -> str:
    if value is None:
        return "-"
    return "inf" if math.isinf(value) else f"{value:,.1f}"


def coverage_text(cov: Coverage) -> str:
    """A coverage as plain text: one line per task (index, name, weight, match, best µs,
    source), then the tasks per match, the estimated latency against untuned, the covered
    share and the library's problems."""
    header = ("#", "task", "weight", "match", "best us", "source")
    rows = [(str(t.index), t.name, str(t.weight), t.match, _us(t.best_us), t.source or "-")
            for t in cov.tasks]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = {0, 2, 4}

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    counts = cov.counts()
    out = [f"coverage of {cov.model} on {cov.target} by {len(cov.library)} source(s)",
           line(header), "  ".join("-" * w for w in widths), *map(line, rows), "",
           f"tasks: {len(cov.tasks)} ("
           + ", ".join(f"{counts[m]} {m}" for m in MATCHES) + ")"]
    if cov.untuned_us is not None:
        out.append(f"estimated latency: {_us(cov.library_us)} us from the library, "
                   f"{_us(cov.untuned_us)} us untuned")
    else:
        out.append("estimated latency: untuned times not measured")
    if cov.covered_share is not None:
        out.append(f"covered share (exact or anchor) of the untuned latency: "
                   f"{cov.covered_share:.1%}")
    if cov.problems:
        out += ["", "problems:", *(f"  {p}" for p in cov.problems)]
    return "\n".join(out)


def run_coverage(run: Any, library: Library, target: Any = None) -> Coverage:
    """What ``library`` holds for each task of an opened work dir (``msviz.open(path,
    library=...)``): its tasks' workloads, on ``target`` (default: the target its session
    tuned for, as its environment line says; else this CPU)."""
    env = run.environment or {}
    target = record_target(target if target is not None else env.get("target") or "llvm")
    tasks = [SimpleNamespace(index=int(row.index), name=str(row.task), weight=int(row.weight),
                             workload=SimpleNamespace(mod=run.workload_mod(int(row.workload))))
             for row in run.tasks.itertuples()]
    name = (env.get("model") or {}).get("name") or run.work_dir.name
    return coverage(tasks, library, target, model=str(name))
