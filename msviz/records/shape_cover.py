"""What covering a shape family found, as plain data: which shapes were tuned and why, every
tuned schedule's latency carried to every shape (the cross-measurement), and the dispatch
(each shape's fastest schedule, its regret).

:mod:`msviz.workflows.shapes.cover` writes it as ``shapes.json`` in the family's work root;
:func:`read_shape_cover` reads it back, so a cover opens without re-tuning. The views
(:mod:`msviz.views.shapes`) draw it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from msviz.errors import WorkDirError

__all__ = ["COVER_FILE", "Cell", "Dispatch", "ShapeCover", "TunedShape", "dispatch_ranges",
           "read_shape_cover", "weighted_geomean"]

#: The cover's file in the family's work root.
COVER_FILE = "shapes.json"


@dataclass(frozen=True)
class TunedShape:
    """A shape the cover tuned: in which order, why, and what it cost (seconds)."""

    label: str
    order: int
    why: str
    seconds: float
    trials: int


@dataclass(frozen=True)
class Cell:
    """The schedules tuned at ``source`` carried to ``shape`` and measured there.

    ``us``: the fastest (for a model, the estimate: weight x fastest per task, summed), None
    when none ran; ``measured``/``failed``: carries measured, and those that did not replay or
    run (``error``: why, the first reason); for ``source == shape`` the shape's own tuning
    (``measured`` its trials). ``missing``: a model's tasks with no carry that ran (their own
    fastest is counted instead).
    """

    source: str
    shape: str
    us: float | None
    measured: int = 0
    failed: int = 0
    error: str | None = None
    missing: int = 0


@dataclass(frozen=True)
class Dispatch:
    """A shape's dispatched schedule: the fastest measured on it, from whichever source.

    ``source``: the tuned shape it came from (for a model, the one behind the most of its
    weighted time; ``tasks_from`` counts tasks per source); ``own_us``: the shape's own tuned
    best when it was tuned; ``regret``: ``us / own_us`` where known; ``estimated``: the regret
    estimated for an untuned shape (its latency against the tuned shapes' throughput carried to
    its size, see :mod:`msviz.workflows.shapes.cover`).
    """

    shape: str
    source: str | None
    us: float | None
    own_us: float | None = None
    regret: float | None = None
    estimated: float | None = None
    tasks_from: dict = field(default_factory=dict)


@dataclass
class ShapeCover:
    """A covered shape family (see the module docstring)."""

    family: dict
    target: str
    trials: int
    regret_target: float | None
    tuned: list[TunedShape]
    cells: list[Cell]
    dispatch: list[Dispatch]
    cross_seconds: float
    seconds: float
    work_dir: str | None
    state: str = "finished"
    root: str | None = None

    @property
    def labels(self) -> list[str]:
        """Every shape, by size."""
        return [s["label"] for s in self.family["shapes"]]

    @property
    def weights(self) -> dict[str, float]:
        return {s["label"]: float(s["weight"]) for s in self.family["shapes"]}

    @property
    def chosen(self) -> list[str]:
        """The tuned shapes, in the order they were tuned."""
        return [t.label for t in sorted(self.tuned, key=lambda t: t.order)]

    def cell(self, source: str, shape: str) -> Cell | None:
        for c in self.cells:
            if c.source == source and c.shape == shape:
                return c
        return None

    def matrix(self) -> Any:
        """Latency (µs) of each tuned shape's schedules (rows) on each shape (columns), NaN
        where nothing ran: a pandas DataFrame."""
        import pandas as pd  # heavy: only for the tables

        rows = {src: [self._us(src, s) for s in self.labels] for src in self.chosen}
        return pd.DataFrame.from_dict(rows, orient="index", columns=self.labels)

    def _us(self, source: str, shape: str) -> float:
        c = self.cell(source, shape)
        return float(c.us) if c is not None and c.us is not None else math.nan

    def regret_matrix(self) -> Any:
        """:meth:`matrix` over the best known latency of each shape (1.0: the best)."""
        m = self.matrix()
        best = {d.shape: d.us for d in self.dispatch}
        for col in m.columns:
            if best.get(col):
                m[col] = m[col] / best[col]
        return m

    def dispatch_frame(self) -> Any:
        """One row per shape: weight, dispatched source, latency, own best, regret."""
        import pandas as pd  # heavy: only for the tables

        weights = self.weights
        return pd.DataFrame([{"shape": d.shape, "weight": weights.get(d.shape),
                              "source": d.source, "us": d.us, "own_us": d.own_us,
                              "regret": d.regret, "estimated_regret": d.estimated}
                             for d in self.dispatch])

    def weighted_regret(self) -> dict[str, float | None]:
        """Weighted geometric means: ``known`` over the shapes whose own best is known,
        ``estimated`` over all (estimated where unknown)."""
        weights = self.weights
        known = [(weights[d.shape], d.regret) for d in self.dispatch if d.regret]
        est = [(weights[d.shape], d.regret or d.estimated) for d in self.dispatch
               if d.regret or d.estimated]
        return {"known": weighted_geomean(known), "estimated": weighted_geomean(est)}

    def table(self) -> str:
        """The dispatch as text: shape ranges and the schedule each one runs."""
        lines = [f"{self.family['name']} over {self.family['dim']}: tuned "
                 f"{', '.join(self.chosen) or 'nothing'} ({len(self.chosen)} of "
                 f"{len(self.labels)})"]
        for first, last, source in dispatch_ranges(self):
            span = first if first == last else f"{first} .. {last}"
            lines.append(f"  {span:<28} -> schedules tuned at {source}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("root", None)
        return data

    @classmethod
    def from_dict(cls, data: dict, *, root: str | None = None) -> ShapeCover:
        try:
            cover = cls(
                family=dict(data["family"]), target=str(data["target"]),
                trials=int(data["trials"]), regret_target=data.get("regret_target"),
                tuned=[TunedShape(**t) for t in data["tuned"]],
                cells=[Cell(**c) for c in data["cells"]],
                dispatch=[Dispatch(**d) for d in data["dispatch"]],
                cross_seconds=float(data["cross_seconds"]), seconds=float(data["seconds"]),
                work_dir=data.get("work_dir"), state=str(data.get("state", "finished")),
                root=root)
            for group, rows in (("tuned", cover.tuned), ("cells", cover.cells),
                                ("dispatch", cover.dispatch)):
                for i, row in enumerate(rows):
                    _check_types(f"{group}[{i}]", row)
        except (KeyError, TypeError, ValueError) as err:
            where = f" in {root}" if root is not None else ""
            raise WorkDirError(f"{COVER_FILE}{where} does not read as a shape cover: {err}; "
                               "it was edited or written by something else: cover the family "
                               "again (msviz.tune_shapes) into a new folder") from None
        return cover


#: Each row's typed fields: name -> (types, may be None).
_FIELD_TYPES: dict[type, dict[str, tuple[tuple[type, ...], bool]]] = {
    TunedShape: {"label": ((str,), False), "order": ((int,), False),
                 "why": ((str,), False), "seconds": ((int, float), False),
                 "trials": ((int,), False)},
    Cell: {"source": ((str,), False), "shape": ((str,), False), "us": ((int, float), True),
           "measured": ((int,), False), "failed": ((int,), False), "error": ((str,), True),
           "missing": ((int,), False)},
    Dispatch: {"shape": ((str,), False), "source": ((str,), True), "us": ((int, float), True),
               "own_us": ((int, float), True), "regret": ((int, float), True),
               "estimated": ((int, float), True), "tasks_from": ((dict,), False)},
}


_KIND_NAMES = {str: "string", int: "whole number", float: "number", dict: "mapping"}


def _check_types(where: str, row: Any) -> None:
    """Refuse a row whose field is not of its type (a latency written as a string would open
    and fail deep inside ``matrix()``), naming the row and the field."""
    for name, (types, optional) in _FIELD_TYPES[type(row)].items():
        value = getattr(row, name)
        if value is None and optional:
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            kinds = " or ".join(_KIND_NAMES[t] for t in types
                                if not (t is int and float in types))
            raise ValueError(f"{where} {name}={value!r} is not a {kinds}"
                             f"{' (or null)' if optional else ''}")


def weighted_geomean(pairs: list[tuple[float, float]]) -> float | None:
    """``exp(sum w log x / sum w)`` over ``(w, x)`` pairs with x > 0 (None when none)."""
    pairs = [(w, x) for w, x in pairs if x and x > 0 and math.isfinite(x)]
    total = sum(w for w, _ in pairs)
    if not pairs or total <= 0:
        return None
    return math.exp(sum(w * math.log(x) for w, x in pairs) / total)


def dispatch_ranges(cover: ShapeCover) -> list[tuple[str, str, str]]:
    """``(first shape, last shape, source)`` of each run of neighbouring shapes (by size)
    dispatched to the same source."""
    by_shape = {d.shape: d.source or "nothing" for d in cover.dispatch}
    out: list[list[str]] = []
    for label in cover.labels:
        source = by_shape.get(label, "nothing")
        if out and out[-1][2] == source:
            out[-1][1] = label
        else:
            out.append([label, label, source])
    return [(a, b, c) for a, b, c in out]


def read_shape_cover(root: str | Path) -> ShapeCover:
    """The cover a :class:`~msviz.workflows.shapes.cover.ShapeTuning` wrote into ``root``."""
    path = Path(root) / COVER_FILE
    if not path.is_file():
        raise WorkDirError(f"{root} holds no shape cover ({COVER_FILE} is missing)")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise WorkDirError(f"{path} does not read: {err}") from None
    return ShapeCover.from_dict(data, root=str(root))
