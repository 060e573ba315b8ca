"""Where a model comes from: a Relax module, an ``nn.Module``, an ONNX file or a catalogue name.

:func:`load` turns any of them into a :class:`~msviz.models.model.Model`; :func:`is_model` tells a
model from a single-PrimFunc workload (``msviz.Session`` takes both).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import tvm

from msviz.errors import WorkloadError
from msviz.models import model as model_mod
from msviz.models.model import Model, entry_of, first_line, inputs_of
from msviz.models.zoo import MODELS, build

__all__ = ["from_nn", "from_onnx", "from_relax", "is_model", "load"]


def from_relax(mod: tvm.IRModule, params: dict | None = None, *, name: str = "model",
               description: str = "Relax IRModule") -> Model:
    """A model from a Relax IRModule and its params (bound to the entry function as constants).

    Parameters
    ----------
    mod : tvm.IRModule
        Relax program; its entry is ``main`` (or its only Relax function).
    params : dict of str to array, optional
        Weights by parameter name (numpy arrays or ``tvm.runtime.Tensor``).
    name : str
        Shown in events and reports.
    """
    from tvm import relax

    if not isinstance(mod, tvm.IRModule):
        raise WorkloadError(f"from_relax needs a tvm.IRModule, not {type(mod).__name__}")
    func_name = entry_of(mod)
    if params:
        names = {str(getattr(p, "name", None) or p.name_hint) for p in mod[func_name].params}
        unknown = sorted(set(params) - names)
        if unknown:
            raise WorkloadError(f"params {unknown} are not parameters of {func_name} "
                                f"({sorted(names)})")
        arrays = {k: v if isinstance(v, tvm.runtime.Tensor) else tvm.runtime.tensor(np.asarray(v))
                  for k, v in params.items()}
        mod = relax.transform.BindParams(func_name, arrays)(mod)
    return Model(name, mod, func_name, inputs_of(mod, func_name), description)


def from_nn(module: Any, spec: dict, *, name: str | None = None, seed: int = 0) -> Model:
    """A model from a ``tvm.relax.frontend.nn.Module`` and its input spec.

    Parameters
    ----------
    module : tvm.relax.frontend.nn.Module
    spec : dict
        ``{"forward": {"x": nn.spec.Tensor((1, 64), "float32")}}`` (or just the inner dict for
        ``forward``), as ``export_tvm`` takes it.
    seed : int
        Seed of the random weights (an ``nn.Module`` carries no values).
    """
    if spec and all(not isinstance(v, dict) for v in spec.values()):
        spec = {"forward": spec}
    if len(spec) != 1:
        raise WorkloadError(f"give the spec of one method to tune, got {list(spec)}")
    try:
        mod, pspec = module.export_tvm(spec=spec)
    except Exception as err:
        raise WorkloadError(f"cannot export the nn.Module: {first_line(err)}") from None
    rng = np.random.default_rng(seed)
    params = {}
    for pname, param in pspec:
        shape = [int(s) for s in param.shape]
        params[pname] = (0.1 * rng.standard_normal(shape)).astype(str(param.dtype))
    func_name = next(iter(spec))
    from tvm import relax

    if params:
        mod = relax.transform.BindParams(func_name, {
            k: tvm.runtime.tensor(v) for k, v in params.items()})(mod)
    label = name or type(module).__name__
    return Model(label, mod, func_name, inputs_of(mod, func_name), f"nn.Module {label}")


def from_onnx(path: str | Path, *, name: str | None = None) -> Model:
    """A model from an ONNX file (``pip install msviz[onnx]``); initializers become constants."""
    try:
        import onnx
    except ImportError:
        raise WorkloadError(
            f"{path} is an ONNX model: reading it needs the onnx package; install the extra "
            "with `pip install msviz[onnx]`") from None
    from tvm.relax.frontend.onnx import from_onnx as relax_from_onnx

    path = Path(path)
    if not path.is_file():
        raise WorkloadError(f"no ONNX file at {path}")
    # reading the file, importing it and lowering it hold its weights several times over
    needed = model_mod.LOWER_BASE_BYTES + (model_mod.LOWER_WEIGHT_COPIES + 1) * \
        path.stat().st_size
    free = model_mod.available_memory()
    if free is not None and needed > free:
        raise WorkloadError(
            f"model {path.name!r} needs about {needed / 2**30:.1f} GiB of memory to import, lower "
            f"and extract its tasks (a {path.stat().st_size / 2**30:.1f} GiB file), and this "
            f"machine has {free / 2**30:.1f} GiB available")
    try:
        proto = onnx.load(str(path))
    except Exception as err:
        raise WorkloadError(f"cannot read {path} as ONNX: {first_line(err)}") from None
    for inp in proto.graph.input:
        dims = inp.type.tensor_type.shape.dim
        symbolic = [d.dim_param or "?" for d in dims if not d.HasField("dim_value")]
        if symbolic:
            raise WorkloadError(
                f"dynamic shapes are not supported: ONNX input {inp.name!r} has symbolic "
                f"dimension(s) {symbolic}; export the model with fixed sizes")
    try:
        mod = relax_from_onnx(proto, keep_params_in_input=False)
    except Exception as err:
        raise WorkloadError(f"cannot import {path.name}: {first_line(err)}") from None
    from tvm import relax

    mod = relax.transform.DecomposeOpsForInference()(mod)
    label = name or path.stem
    return Model(label, mod, entry_of(mod), inputs_of(mod, entry_of(mod)), f"ONNX {path.name}",
                 file=str(path.resolve()))


# -- any of them ------------------------------------------------------------------------------


def is_model(obj: Any) -> bool:
    """True for what :func:`load` reads as a model (not a single-PrimFunc workload)."""
    from tvm import relax

    if isinstance(obj, Model):
        return True
    if isinstance(obj, (str, Path)):
        text = str(obj).strip()
        return text.lower() in MODELS or text.lower().endswith(".onnx")
    if isinstance(obj, tvm.IRModule):
        return any(isinstance(f, relax.Function) for _, f in obj.functions_items())
    if isinstance(obj, tuple) and obj:
        return is_model(obj[0])
    return type(obj).__module__.startswith("tvm.relax.frontend.nn") or _is_nn_module(obj)


def _is_nn_module(obj: Any) -> bool:
    try:
        from tvm.relax.frontend import nn
    except ImportError:  # pragma: no cover
        return False
    return isinstance(obj, nn.Module)


def load(obj: Any, *, params: dict | None = None, spec: dict | None = None,
         name: str | None = None) -> Model:
    """Turn anything a user may call a model into a :class:`Model`.

    Parameters
    ----------
    obj : Model | str | Path | tvm.IRModule | nn.Module | tuple
        A catalogue name, an ``.onnx`` path, a Relax IRModule (``params`` alongside, or as
        ``(mod, params)``), or an ``nn.Module`` (``spec`` alongside, or ``(module, spec)``).
    """
    if isinstance(obj, Model):
        return obj
    if isinstance(obj, tuple) and len(obj) == 2:
        first, second = obj
        if isinstance(first, tvm.IRModule):
            return from_relax(first, second, name=name or "model")
        return from_nn(first, second, name=name)
    if isinstance(obj, (str, Path)):
        text = str(obj).strip()
        if text.lower().endswith(".onnx"):
            return from_onnx(text, name=name)
        return build(text)
    if isinstance(obj, tvm.IRModule):
        return from_relax(obj, params, name=name or "model")
    if _is_nn_module(obj):
        if spec is None:
            raise WorkloadError("an nn.Module needs its input spec: pass (module, spec), e.g. "
                                "(net, {'x': nn.spec.Tensor((1, 64), 'float32')})")
        return from_nn(obj, spec, name=name)
    raise WorkloadError(f"cannot read a model from {type(obj).__name__}")
