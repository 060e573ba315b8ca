"""A tuned model against the runtimes users would pick instead, whole and operator by operator:
``msviz.vs_runtimes(work_dir)``.

The model is built with the work dir's database (:meth:`msviz.models.Model.compile`) and timed
against ONNX Runtime and OpenVINO on the same ONNX file (same weights) in alternating rounds in
fresh processes; every output is checked against ONNX Runtime's; each task's time in the model
(its model profile) is set beside the time ONNX Runtime's profiler gives the nodes it covers,
with both GFLOPS and their share of this machine's fp32 peak. Measured by the measuring service
(:func:`msviz.engine.measure.runtimes.compare_runtimes`, under its lock); the result is written
to the work dir's sidecar as a ``runtimes`` line, which the Tasks tab and the report show later
without running anything.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from msviz import models
from msviz.archive.sidecar_writer import SidecarWriter
from msviz.engine.arguments import check_seed
from msviz.engine.measure.requests import DEFAULT_DRAWS, check_rounds
from msviz.engine.measure.runtimes import compare_runtimes
from msviz.errors import MissingExtraError, MsvizError
from msviz.records.model_profile import MODEL_PROFILE_KIND, last_entry
from msviz.records.runtimes import RUNTIMES, RUNTIMES_KIND
from msviz.records.sidecar import read_sidecar
from msviz.workflows.compare_models import check_work_dir
from msviz.workflows.deploy import tuned_model_of

__all__ = ["DEFAULT_ROUNDS", "RuntimeComparison", "vs_runtimes"]

#: Rounds per fresh process by default (each: one timing of TVM and of every runtime).
DEFAULT_ROUNDS = 4


@dataclass(frozen=True)
class RuntimeComparison:
    """What ``msviz.vs_runtimes`` measured: ``data`` is the sidecar's ``runtimes`` line."""

    data: dict

    @property
    def whole(self) -> pd.DataFrame:
        """Per runtime: its and TVM's least round (µs), the paired gap (TVM / runtime) with
        its range, whether the outputs match ONNX Runtime's."""
        outputs = self.data.get("outputs") or {}
        return pd.DataFrame([
            {"runtime": w["runtime"], "runtime_us": w["runtime_us"], "tvm_us": w["tvm_us"],
             "gap": w["gap"], "gap_low": w["gap_low"], "gap_high": w["gap_high"],
             "match": (outputs.get(w["runtime"]) or {}).get("match")}
            for w in self.data.get("whole") or ()])

    @property
    def tasks(self) -> pd.DataFrame:
        """Per task, largest gap first: TVM's and ONNX Runtime's µs per run, the gap, GFLOPS
        and shares of the fp32 peak."""
        columns = ["task", "calls", "tvm_us", "ort_us", "gap", "tvm_gflops", "ort_gflops",
                   "tvm_peak", "ort_peak", "ops"]
        return pd.DataFrame(self.data.get("tasks") or [], columns=columns)

    def __str__(self) -> str:
        lines = [f"{self.data.get('model')} on {self.data.get('cpu')} "
                 f"({self.data.get('threads')} threads)"]
        for row in self.whole.itertuples(index=False):
            lines.append(f"  {row.runtime}: {row.runtime_us:.1f} us, TVM {row.tvm_us:.1f} us, "
                         f"gap {row.gap:.2f}x ({row.gap_low:.2f}-{row.gap_high:.2f}), "
                         f"outputs {'match' if row.match else 'DIFFER'}")
        if self.data.get("ort_nodes"):
            lines.append(f"  {self.data['ort_matched']} of {self.data['ort_nodes']} ONNX "
                         "Runtime nodes matched to tasks")
        return "\n".join(lines)


def _checked_runtimes(runtimes: Any) -> list[str]:
    """``runtimes`` as a list, refused (naming what is wrong) unless a non-empty sequence of
    distinct known runtime names whose packages are installed."""
    accepted = ", ".join(repr(r) for r in RUNTIMES)
    if isinstance(runtimes, str) or not isinstance(runtimes, Sequence):
        raise TypeError(f"runtimes must be a sequence of runtime names, e.g. ('onnxruntime',) "
                        f"(of {accepted}), got {type(runtimes).__name__} {runtimes!r}")
    names = list(runtimes)
    if not names:
        raise ValueError(f"runtimes is empty: name at least one of {accepted}")
    unknown = [n for n in names if not isinstance(n, str) or n not in RUNTIMES]
    if unknown:
        raise ValueError(f"unknown runtime(s) {unknown!r}: vs_runtimes compares against "
                         f"{accepted}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"runtimes names {', '.join(map(repr, twice))} more than once: name "
                         "each runtime once")
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    if missing:
        raise MissingExtraError(
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed: "
            f"pip install {' '.join(RUNTIMES[n] for n in missing)} (or pip install "
            "msviz[compare])")
    return names


def _onnx_inputs(path: Path) -> list[tuple[str, tuple, str]]:
    """``(name, shape, dtype)`` of an ONNX file's graph inputs (initializers left out; a
    symbolic dimension is None)."""
    if importlib.util.find_spec("onnx") is None:
        raise MissingExtraError("reading an ONNX file needs onnx: pip install onnx")
    import onnx  # optional: the compare extra

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as err:
        raise MsvizError(f"{path} is not an ONNX model onnx can read: {err}") from None
    weights = {i.name for i in proto.graph.initializer}
    out = []
    for value in proto.graph.input:
        if value.name in weights:
            continue
        tensor = value.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else None
                     for d in tensor.shape.dim)
        dtype = str(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type))
        out.append((value.name, dims, dtype))
    return out


def check_onnx_inputs(path: Path, model: Any) -> None:
    """Refuse an ONNX file whose inputs are not the model's (their count, shapes and dtypes),
    naming both."""
    theirs = _onnx_inputs(path)
    ours = [(n, tuple(s), str(d)) for n, s, d in model.inputs]
    same = len(theirs) == len(ours) and all(
        len(a[1]) == len(b[1]) and all(x is None or x == y for x, y in zip(a[1], b[1]))
        and a[2] == b[2] for a, b in zip(theirs, ours))
    if not same:
        def show(items: list) -> str:
            return ", ".join(f"{n} {list(s)} {d}" for n, s, d in items) or "none"
        raise MsvizError(f"the ONNX file {path} does not take model {model.name!r}'s inputs: "
                         f"it takes {show(theirs)}; the model takes {show(ours)}. Pass the "
                         "ONNX file of the model the work dir was tuned for (onnx=)")


def _onnx_file(onnx: Any, model: Any, given: Any, entries: list, tmp: str) -> Path:
    """The ONNX file: ``onnx``, else the model's own (an ``.onnx`` it was loaded from), else
    the catalogue model exported to ``tmp`` with the same weights."""
    if onnx is not None:
        path = Path(onnx)
        if not path.is_file():
            raise FileNotFoundError(f"the ONNX file {path} does not exist")
        return path
    env = last_entry(entries, "environment") or {}
    source = (env.get("model") or {}).get("source") if isinstance(env.get("model"), dict) \
        else None
    for candidate in (getattr(model, "onnx_path", None), given, source):
        if isinstance(candidate, (str, Path)) and str(candidate).lower().endswith(".onnx") \
                and Path(candidate).is_file():
            return Path(candidate)
    name = given if isinstance(given, str) and given in models.MODELS else (
        source if isinstance(source, str) and source in models.MODELS else model.name)
    if name not in models.MODELS:
        raise MsvizError(f"model {model.name!r} has no ONNX file msviz knows of: pass onnx= "
                         "(the model as an .onnx file, same weights)")
    from msviz.models.onnx_export import export_onnx  # heavy: onnx

    return export_onnx(name, Path(tmp) / f"{name}.onnx")


def vs_runtimes(work_dir: Any, runtimes: Sequence[str] = ("onnxruntime", "openvino"), *,
                model: Any = None, onnx: Any = None, rounds: int = DEFAULT_ROUNDS,
                draws: int = DEFAULT_DRAWS, seed: int = 0) -> RuntimeComparison:
    """The tuned model of ``work_dir`` against ONNX Runtime and OpenVINO.

    Parameters
    ----------
    work_dir : str | Path
        A work dir of a tuned model (msviz's or MetaSchedule's).
    runtimes : sequence of str
        Of ``"onnxruntime"`` and ``"openvino"``.
    model : optional
        The model (anything :func:`msviz.models.load` takes); None: the one the work dir's
        sidecar names.
    onnx : str | Path, optional
        The model as an ONNX file (same weights, same inputs); None: the model's own ``.onnx``,
        else the catalogue model exported with its weights.
    rounds : int
        Rounds per fresh process (each times TVM and every runtime, the order reversed every
        other round).
    draws : int
        Fresh processes.
    seed : int
        Seed of the random inputs.

    Returns
    -------
    RuntimeComparison
        ``.whole``, ``.tasks`` (frames) and ``.data`` (the ``runtimes`` line written to the
        work dir's sidecar).

    Raises
    ------
    TypeError, ValueError
        ``runtimes`` not a non-empty sequence of distinct runtime names (a bare string is
        refused: pass ``("onnxruntime",)``); ``rounds``, ``draws`` or ``seed`` out of range.
    msviz.WorkDirError
        ``work_dir`` is not a work dir.
    msviz.MsvizError
        As :func:`msviz.build` refuses the work dir (a PrimFunc's, another model's, no record,
        a line stock MetaSchedule cannot load, a record that cannot be true).
    """
    names = _checked_runtimes(runtimes)
    check_rounds(rounds, draws)
    check_seed(seed)
    if not isinstance(work_dir, (str, os.PathLike)):
        raise TypeError(f"vs_runtimes takes one work dir (a str or Path), got "
                        f"{type(work_dir).__name__} {work_dir!r}")
    if onnx is not None and not isinstance(onnx, (str, os.PathLike)):
        raise TypeError(f"onnx must be the path of an .onnx file, got {type(onnx).__name__} "
                        f"{onnx!r}")
    path = Path(work_dir)
    check_work_dir(path, "pass the work dir of a tuned model")
    entries = read_sidecar(path).other
    found, target, tasks = tuned_model_of(path, entries, model, None,
                                          doing=("compare", "compared"))
    with tempfile.TemporaryDirectory(prefix="msviz-vs-runtimes-") as tmp:
        onnx_path = _onnx_file(onnx, found, model, entries, tmp)
        check_onnx_inputs(onnx_path, found)
        data = compare_runtimes(path, found, tasks, target, onnx_path, names,
                                profile=last_entry(entries, MODEL_PROFILE_KIND),
                                rounds=rounds, draws=draws, seed=seed)
    if onnx is None and str(onnx_path).startswith(tmp):
        data["onnx"] = f"exported from the catalogue ({found.name}, seed 0)"
    with SidecarWriter(path) as writer:
        entry = writer.write(RUNTIMES_KIND, **data)
    return RuntimeComparison(entry)
