"""Models as workloads: a Relax program lowered as ``compile_relax`` lowers it, and its tasks.

A model is tuned task by task: MetaSchedule's own extraction (``relax_integration.extract_tasks``)
turns the fused TensorIR functions of the lowered module into tasks, each with a *weight* (how many
times the model calls it). :class:`Model` holds the Relax module (weights bound as constants) and
its inputs; :meth:`Model.extract_tasks` gives the tasks for a target.

Sources: a Relax ``IRModule`` (with its params), a ``tvm.relax.frontend.nn.Module`` with an input
spec, an ``.onnx`` file (needs the ``onnx`` extra), or a name of the catalogue (:func:`catalogue`):
small real models built in Relax, no downloads.

Modules: ``model`` (:class:`Model`, :class:`ModelTask`, lowering), ``sources`` (:func:`load` and
the ``from_*`` readers), ``graph`` (the Relax builder the catalogue uses), ``zoo`` (the
catalogue; :func:`build` takes another input size) and ``onnx_export`` (:func:`export_onnx`: a
catalogue model as an ONNX file with the same weights, for other runtimes).
"""

from __future__ import annotations

from msviz.models.model import Model, ModelTask, lower
from msviz.models.onnx_export import export_onnx
from msviz.models.sources import from_nn, from_onnx, from_relax, is_model, load
from msviz.models.zoo import MODELS, CatalogueEntry, build, catalogue

__all__ = [
    "MODELS",
    "CatalogueEntry",
    "Model",
    "ModelTask",
    "build",
    "catalogue",
    "export_onnx",
    "from_nn",
    "from_onnx",
    "from_relax",
    "is_model",
    "load",
    "lower",
]
