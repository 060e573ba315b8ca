"""Models as workloads (see :mod:`msviz.models.model`)."""

from __future__ import annotations

from msviz.models.model import (MODELS, Model, ModelTask, build, catalogue, from_nn, from_onnx,
                                from_relax, is_model, load, lower)

__all__ = ["MODELS", "Model", "ModelTask", "build", "catalogue", "from_nn", "from_onnx",
           "from_relax", "is_model", "load", "lower"]
