"""The runtimes view: a tuned model against ONNX Runtime and OpenVINO, whole (each runtime's
time beside TVM's, the paired gap with its range over the rounds, whether the outputs match)
and per task (TVM's time in the model beside ONNX Runtime's for the nodes it covers, largest
gap first, with GFLOPS and shares of this machine's fp32 peak), as an info, a plotly figure and
an HTML table (Tasks tab, report).

Fed from a work dir's ``runtimes`` sidecar line (``msviz.vs_runtimes`` writes it;
:func:`msviz.records.runtimes.recorded_runtimes` reads it).

The same concept at its other layers: :mod:`msviz.bench.runtimes`,
:mod:`msviz.engine.measure.runtimes`, :mod:`msviz.records.runtimes`.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

from msviz.errors import MsvizWarning
from msviz.views._plotly_imports import go
from msviz.views.common import log_axis, note_figure

__all__ = ["RuntimeTask", "RuntimeWhole", "RuntimesInfo", "runtimes_figure", "runtimes_html",
           "runtimes_info"]

#: Colours of the bars: TVM, ONNX Runtime.
TVM_COLOR, ORT_COLOR = "#1a73e8", "#9aa0a6"


class RuntimeWhole(NamedTuple):
    """The whole model in one runtime against the TVM build."""

    runtime: str
    runtime_us: float  # its least round
    tvm_us: float  # TVM's least round
    gap: float  # the paired median of TVM's time over the runtime's (> 1: TVM is slower)
    gap_low: float
    gap_high: float
    spread: float | None  # the runtime's slowest round over its fastest
    match: bool | None  # its outputs match the reference's (None: not checked)
    max_abs_diff: float | None  # the largest difference over its outputs
    verdict: str


class RuntimeTask(NamedTuple):
    """One task: per model run, TVM's time in the model and ONNX Runtime's for its nodes."""

    task: str
    calls: int
    tvm_us: float | None
    ort_us: float | None  # None: no ONNX Runtime node matched
    gap: float | None  # tvm_us / ort_us
    tvm_gflops: float | None
    ort_gflops: float | None
    tvm_peak: float | None  # share of the fp32 peak
    ort_peak: float | None
    ops: tuple[str, ...]  # ONNX Runtime's ops matched


class RuntimesInfo(NamedTuple):
    """A runtime comparison."""

    model: str
    cpu: str
    threads: int | None
    peak_gflops: float | None
    reference: str | None  # whose outputs the others are checked against
    tvm_match: bool | None  # TVM's outputs match the reference's
    tvm_max_abs_diff: float | None
    whole: tuple[RuntimeWhole, ...]
    tasks: tuple[RuntimeTask, ...]  # largest gap first
    other_us: float  # ONNX Runtime's nodes of no task, per run
    other_nodes: int
    nodes: int  # ONNX Runtime's nodes profiled
    matched: int  # of them, matched to a task
    rounds: int | None
    draws: int | None
    tvm_scale: float | None = None  # the factor TVM's profiled task times were scaled by
    ort_scale: float | None = None  # and ONNX Runtime's profiled nodes' (None: not scaled)


def _largest(diffs: Any) -> float | None:
    seen = [float(d) for d in diffs or () if d is not None]
    return max(seen) if seen else None


def runtimes_info(data: Mapping[str, Any] | None) -> RuntimesInfo:
    """The info of a ``runtimes`` sidecar line (or ``RuntimeComparison.data``); None or an
    empty line gives an empty info and a warning."""
    if not data or not data.get("whole"):
        warnings.warn("no runtime comparison to show (run msviz.vs_runtimes(work_dir) first)",
                      MsvizWarning, stacklevel=2)
        data = dict(data or {})
    outputs = data.get("outputs") or {}
    whole = tuple(
        RuntimeWhole(str(w["runtime"]), float(w["runtime_us"]), float(w["tvm_us"]),
                     float(w["gap"]), float(w["gap_low"]), float(w["gap_high"]),
                     None if w.get("spread") is None else float(w["spread"]),
                     (outputs.get(w["runtime"]) or {}).get("match"),
                     _largest((outputs.get(w["runtime"]) or {}).get("max_abs_diff")),
                     str(w.get("verdict", "")))
        for w in data.get("whole") or ())
    tasks = tuple(
        RuntimeTask(str(t["task"]), int(t.get("calls") or 0), t.get("tvm_us"), t.get("ort_us"),
                    t.get("gap"), t.get("tvm_gflops"), t.get("ort_gflops"), t.get("tvm_peak"),
                    t.get("ort_peak"), tuple(t.get("ops") or ()))
        for t in sorted(data.get("tasks") or (),
                        key=lambda t: (t.get("gap") is None, -(t.get("gap") or 0.0))))
    peak = data.get("peak") or {}
    tvm = outputs.get("tvm") or {}
    return RuntimesInfo(
        model=str(data.get("model") or ""), cpu=str(data.get("cpu") or peak.get("cpu") or ""),
        threads=data.get("threads"), peak_gflops=peak.get("gflops"),
        reference=data.get("reference"), tvm_match=tvm.get("match"),
        tvm_max_abs_diff=_largest(tvm.get("max_abs_diff")), whole=whole, tasks=tasks,
        other_us=float(data.get("other_us") or 0.0), other_nodes=len(data.get("other") or ()),
        nodes=int(data.get("ort_nodes") or 0), matched=int(data.get("ort_matched") or 0),
        rounds=data.get("rounds"), draws=data.get("draws"), tvm_scale=data.get("tvm_scale"),
        ort_scale=data.get("ort_scale"))


def _f(value: float | None, spec: str = ".1f", unit: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{unit}"


def runtimes_figure(info: RuntimesInfo) -> Any:
    """Per task, TVM's µs per run in the model beside ONNX Runtime's for its nodes, largest
    gap first (the gap written at TVM's bar), and ONNX Runtime's unmatched nodes as "other"."""
    tasks = [t for t in info.tasks if t.tvm_us is not None or t.ort_us is not None]
    fig = go.Figure(layout={
        "title": {"text": "TVM in the model vs ONNX Runtime", "x": 0.01},
        "barmode": "group", "height": 140 + 44 * max(1, len(tasks) + 1),
        "margin": {"l": 60, "r": 30, "t": 60, "b": 45}, "xaxis": {"title": "µs per model run"},
        "yaxis": {"autorange": "reversed", "automargin": True},
        "legend": {"orientation": "h", "y": -0.2}})
    if not tasks:
        return note_figure(fig, "no per-task comparison (ONNX Runtime was not profiled)")
    labels = [t.task for t in tasks] + ["other (ORT nodes of no task)"]
    fig.add_trace(go.Bar(
        y=labels, x=[t.tvm_us for t in tasks] + [None], orientation="h", name="TVM (tuned)",
        marker={"color": TVM_COLOR}, text=[_f(t.gap, ".2f", "x") for t in tasks] + [""],
        textposition="outside", cliponaxis=False,
        hovertemplate="%{y}<br>TVM %{x:.2f} µs (gap %{text})<extra></extra>"))
    fig.add_trace(go.Bar(
        y=labels, x=[t.ort_us for t in tasks] + [info.other_us], orientation="h",
        name="ONNX Runtime", marker={"color": ORT_COLOR},
        hovertemplate="%{y}<br>ONNX Runtime %{x:.2f} µs<extra></extra>"))
    values = [v for t in tasks for v in (t.tvm_us, t.ort_us) if v]
    if values and max(values) / min(values) > 30:
        fig.update_xaxes(**log_axis(values))
    elif values:
        fig.update_xaxes(range=[0, 1.2 * max([*values, info.other_us])])
    return fig


def _peak(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f}%"


def _scaled(info: RuntimesInfo) -> str:
    """What the per-task times were scaled by ("" when neither side was)."""
    parts = [f"{who} x{scale:.2f}" for who, scale in (
        ("TVM's profiled calls", info.tvm_scale),
        ("ONNX Runtime's profiled nodes", info.ort_scale)) if scale is not None]
    return ("; per-task times scaled to add up to each side's whole-model time ("
            + ", ".join(parts) + ")") if parts else ""


def runtimes_html(info: RuntimesInfo | None) -> str:
    """The comparison as two HTML tables (whole model, per task) and a note ("" for None)."""
    if info is None:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("Runtime", "Runtime (µs)", "TVM (µs)",
                                             "Gap (TVM / runtime)", "Range", "Spread",
                                             "Outputs", "Max abs diff"))
    rows = []
    for w in info.whole:
        ok = "-" if w.match is None else ("match" if w.match else "DIFFER")
        rows.append(
            f"<tr class='msviz-runtime-row' title='{html.escape(w.verdict)}'>"
            f"<td style='text-align:left'>{html.escape(w.runtime)}</td>"
            f"<td>{w.runtime_us:.1f}</td><td>{w.tvm_us:.1f}</td><td>{w.gap:.2f}x</td>"
            f"<td>{w.gap_low:.2f}-{w.gap_high:.2f}x</td><td>{_f(w.spread, '.2f', 'x')}</td>"
            f"<td>{ok}</td><td>{_f(w.max_abs_diff, '.2e')}</td></tr>")
    task_head = "".join(f"<th>{h}</th>" for h in (
        "Task", "Calls", "TVM (µs/run)", "ORT (µs/run)", "Gap", "TVM GFLOPS", "ORT GFLOPS",
        "TVM % peak", "ORT % peak", "ORT ops"))
    wide = " style='background:#fce8e6'"  # TVM over 1.5x ONNX Runtime's time
    task_rows = [
        f"<tr class='msviz-runtime-task'{wide if (t.gap or 0) > 1.5 else ''}>"
        f"<td style='text-align:left'>{html.escape(t.task)}</td><td>{t.calls}</td>"
        f"<td>{_f(t.tvm_us, '.2f')}</td><td>{_f(t.ort_us, '.2f')}</td>"
        f"<td>{_f(t.gap, '.2f', 'x')}</td><td>{_f(t.tvm_gflops)}</td><td>{_f(t.ort_gflops)}</td>"
        f"<td>{_peak(t.tvm_peak)}</td><td>{_peak(t.ort_peak)}</td>"
        f"<td style='text-align:left'>{html.escape(', '.join(t.ops))}</td></tr>"
        for t in info.tasks]
    task_rows.append(f"<tr class='msviz-runtime-other'><td style='text-align:left'>other "
                     f"({info.other_nodes} ORT node{'' if info.other_nodes == 1 else 's'} of no "
                     "task)</td><td></td><td></td>"
                     f"<td>{info.other_us:.2f}</td><td colspan='6'></td></tr>")
    peak = (f"fp32 peak {info.peak_gflops:.1f} GFLOPS" if info.peak_gflops else
            "fp32 peak not measured")
    tvm_ok = "" if info.tvm_match is None else (
        f"; TVM's outputs {'match' if info.tvm_match else 'DIFFER from'} {info.reference}'s "
        f"(max abs diff {_f(info.tvm_max_abs_diff, '.2e')})")
    note = (f"{html.escape(info.cpu)}, {info.threads} threads, {peak}; least of "
            f"{info.rounds} alternating rounds x {info.draws} fresh processes, the gap their "
            f"paired median{html.escape(tvm_ok)}; {info.matched} of {info.nodes} ONNX Runtime "
            f"nodes matched to tasks{_scaled(info)}")
    style = ("<style>.msviz-runtimes td,.msviz-runtimes th{border:1px solid #ddd;"
             "padding:2px 6px;text-align:right}</style>")
    table = "<table style='border-collapse:collapse;font-size:12px'>"
    return (f"<div class='msviz-runtimes'><b>Against the runtimes: {html.escape(info.model)}"
            f"</b>{style}{table}<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}"
            f"</tbody></table><b>Per task, largest gap first</b>{table}<thead><tr>{task_head}"
            f"</tr></thead><tbody>{''.join(task_rows)}</tbody></table>"
            f"<div class='msviz-runtimes-note'>{note}</div></div>")
