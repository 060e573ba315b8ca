"""A shape family: one program at several shapes, each with a weight (how often it occurs).

MetaSchedule tunes one static shape at a time. A family names the shapes a program meets (GMM
with ``M`` in 1..512, a conv at several image sizes, a catalogue model at several input sizes)
so that :mod:`msviz.workflows.shapes.cover` can tune a few of them and carry their schedules to the
rest.

Example
-------
>>> fam = shapes("GMM", dim="M", sizes=[1, 8, 64, 512], weights=[4, 2, 1, 1])
>>> [s.label for s in fam.shapes]
['M=1', 'M=8', 'M=64', 'M=512']
>>> fam.shapes[0].weight
0.5
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from msviz import models, workloads
from msviz.errors import WorkloadError

__all__ = ["Shape", "ShapeFamily", "shapes"]


@dataclass(frozen=True)
class Shape:
    """One member of a family.

    Attributes
    ----------
    label : str
        How it is named in tables and plots (``"M=64"``, ``"1x3x48x48"``); also its work dir's
        folder name.
    size : int | tuple of int
        The varying value (a size, or a model's whole input shape).
    weight : float
        Its share of the family (the weights sum to 1).
    params : tuple, optional
        A catalogue workload's sizes (the ``te_workload`` function's arguments).
    """

    label: str
    size: Any
    weight: float
    params: tuple | None = None


def _magnitude(size: Any) -> float:
    """One number to order and compare sizes by (the product of a tuple)."""
    if isinstance(size, (tuple, list)):
        return float(math.prod(int(s) for s in size))
    return float(size)


class ShapeFamily:
    """A program at several shapes (see :func:`shapes`).

    Attributes
    ----------
    name : str
        The program (``"GMM"``, ``"resnet18"``, a function's name).
    kind : {"workload", "model"}
        One PrimFunc per shape, or a model (tasks) per shape.
    dim : str
        What varies (``"M"``, ``"H,W"``, ``"input"``).
    shapes : tuple of Shape
        Ordered by size.
    """

    def __init__(self, name: str, kind: str, dim: str, shapes: Sequence[Shape],
                 build: Callable[[Shape], Any]) -> None:
        self.name, self.kind, self.dim = name, kind, dim
        self.shapes = tuple(sorted(shapes, key=lambda s: _magnitude(s.size)))
        self._build = build
        self._built: dict[str, Any] = {}

    def program(self, shape: Shape | str) -> Any:
        """What a :class:`~msviz.engine.session.Session` tunes for ``shape`` (a
        :class:`~msviz.workloads.Workload` or a :class:`~msviz.models.Model`), built once."""
        shape = self.shape(shape)
        if shape.label not in self._built:
            self._built[shape.label] = self._build(shape)
        return self._built[shape.label]

    def shape(self, label: Shape | str) -> Shape:
        """The member named ``label``."""
        if isinstance(label, Shape):
            return label
        for s in self.shapes:
            if s.label == label:
                return s
        raise KeyError(f"the family has no shape {label!r}; it has "
                       f"{', '.join(s.label for s in self.shapes)}")

    def log_size(self, shape: Shape) -> float:
        """``log2`` of the shape's size (its magnitude for a tuple)."""
        return math.log2(max(_magnitude(shape.size), 1.0))

    def to_dict(self) -> dict:
        """The family as JSON-able data (what ``shapes.json`` keeps)."""
        return {"name": self.name, "kind": self.kind, "dim": self.dim,
                "shapes": [{"label": s.label, "size": list(s.size) if isinstance(
                    s.size, tuple) else s.size, "weight": s.weight,
                    "params": list(s.params) if s.params is not None else None}
                    for s in self.shapes]}

    def __len__(self) -> int:
        return len(self.shapes)

    def __repr__(self) -> str:
        return (f"ShapeFamily({self.name!r}, {self.dim}: "
                f"{', '.join(s.label for s in self.shapes)})")


def _weights(weights: Any, n: int) -> list[float]:
    if weights is None:
        return [1.0 / n] * n
    try:
        values = [float(w) for w in weights]
    except (TypeError, ValueError):
        raise WorkloadError(f"weights must be numbers, got {weights!r}") from None
    if len(values) != n:
        raise WorkloadError(f"weights has {len(values)} values for {n} sizes")
    if any(not math.isfinite(w) or w < 0 for w in values) or sum(values) <= 0:
        raise WorkloadError(f"weights must be finite, >= 0 and not all 0, got {values}")
    total = sum(values)
    return [w / total for w in values]


def _sizes(sizes: Any) -> list[Any]:
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or not sizes:
        raise WorkloadError(f"sizes must be a non-empty list of sizes, got {sizes!r}")
    out = []
    for s in sizes:
        if isinstance(s, (list, tuple)):
            s = tuple(s)
            bad = not s or any(isinstance(v, bool) or not isinstance(v, int) or v < 1
                               for v in s)
        else:
            bad = isinstance(s, bool) or not isinstance(s, int) or s < 1
        if bad:
            raise WorkloadError(f"each size must be an int >= 1 or a tuple of them, got {s!r}")
        out.append(s)
    if len(set(out)) != len(out):
        raise WorkloadError(f"sizes repeat a size: {list(sizes)}")
    return out


def _model_family(name: str, sizes: list, weights: list[float]) -> ShapeFamily:
    default = models.zoo.catalogue()[name].input_shape
    members = []
    for size, w in zip(sizes, weights):
        if isinstance(size, int):  # an image's height and width, or a sequence's length
            shape = (*default[:2], size, size) if len(default) == 4 else (size, *default[1:])
        else:
            shape = size
        members.append(Shape("x".join(map(str, shape)), shape, w))
    labels = [m.label for m in members]
    if len(set(labels)) != len(labels):
        raise WorkloadError(f"sizes give the same input shape twice: {labels}")
    return ShapeFamily(name, "model", "input", members,
                       lambda s: models.build(name, input_shape=s.size))


def _workload_family(name: str, dim: Any, sizes: list, weights: list[float]) -> ShapeFamily:
    base = workloads.get(name)  # checks the name; the index picks the other sizes
    key = base.name.split("-")[0]
    func, table = workloads.configs()[key]
    index = int(base.name.split("-")[1])
    params = list(table[index])
    names = [p for p in inspect.signature(func).parameters][:len(params)]
    dims = [dim] if isinstance(dim, str) else list(dim or [])
    if not dims or any(d not in names for d in dims):
        raise WorkloadError(
            f"dim must name the sizes of {key} that vary, one or more of {', '.join(names)}; "
            f"got {dim!r}")
    members = []
    for size, w in zip(sizes, weights):
        if not isinstance(size, int):
            raise WorkloadError(f"a {key} family's sizes are ints (the value of "
                                f"{', '.join(dims)}), got {size!r}")
        p = list(params)
        for d in dims:
            p[names.index(d)] = size
        members.append(Shape(f"{','.join(dims)}={size}", size, w, tuple(p)))
    return ShapeFamily(key, "workload", ",".join(dims), members,
                       lambda s: workloads.get(key, shape=s.params))


def shapes(program: Any, *, sizes: Sequence[Any], weights: Sequence[float] | None = None,
           dim: str | Sequence[str] | None = None) -> ShapeFamily:
    """A shape family: ``program`` at each of ``sizes``.

    Parameters
    ----------
    program : str | callable
        A catalogue workload (``"GMM"``, ``"C2D-1"``: the index picks the sizes that do not
        vary), a catalogue model (``"resnet18"``: one model per input size), or a function of
        one size returning anything a :class:`~msviz.engine.session.Session` tunes.
    sizes : list of int | list of tuple
        The shapes. For a workload, the value of ``dim``; for a model, an input shape, or an
        int: an image's height and width (``(1, 3, s, s)``) or a sequence's length.
    weights : list of float, optional
        How often each size occurs (normalized to sum 1; default: equal).
    dim : str | list of str
        For a catalogue workload: which of its sizes vary, by the ``te_workload`` function's
        argument names (``"M"`` of GMM's ``(B, N, M, K)``, ``("H", "W")`` of C2D). For a
        function: the name shown (default ``"size"``).

    Returns
    -------
    ShapeFamily
    """
    found = _sizes(sizes)
    w = _weights(weights, len(found))
    if callable(program) and not isinstance(program, str):
        label = dim if isinstance(dim, str) else "size"
        name = getattr(program, "__name__", "program")
        members = [Shape(f"{label}={s}" if isinstance(s, int) else "x".join(map(str, s)), s, wi)
                   for s, wi in zip(found, w)]
        return ShapeFamily(name, "model" if _is_model(program(found[0])) else "workload",
                           label, members, lambda s: program(s.size))
    if not isinstance(program, str):
        raise WorkloadError("a shape family's program is a catalogue name or a function of "
                            f"the size, not {type(program).__name__}")
    if program.strip().lower() in models.zoo.catalogue():
        if dim not in (None, "input"):
            raise WorkloadError(f"a model family varies its input shape; dim={dim!r} is not "
                                "used (give sizes as input shapes or ints)")
        return _model_family(program.strip().lower(), found, w)
    return _workload_family(program, dim, found, w)


def _is_model(program: Any) -> bool:
    return isinstance(program, models.Model) or (not isinstance(
        program, (workloads.Workload, str)) and type(program).__name__ == "IRModule" and any(
        type(f).__name__ == "Function" for _, f in program.functions_items()))
