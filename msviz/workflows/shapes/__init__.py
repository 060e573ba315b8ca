"""One tuning, many shapes: shape families (:mod:`.family`), which task of one shape is which
of another (:mod:`.match`), cross-measurement (:mod:`.cross`) and the cover (:mod:`.cover`).

>>> fam = msviz.shapes("GMM", dim="M", sizes=[1, 16, 64, 256], weights=[4, 2, 1, 1])
>>> tuning = msviz.tune_shapes(fam, trials=64, work_dir="gmm-shapes")
>>> tuning.start(); tuning.wait()          # or tuning.run()
>>> print(tuning.cover.table())

The same concept drawn and typed: :mod:`msviz.views.shapes`, :mod:`msviz.cli.shapes`.
"""

from msviz.models.shape_family import Shape, ShapeFamily, shapes
from msviz.workflows.shapes.cover import ShapeTuning, default_max_k

__all__ = ["Shape", "ShapeFamily", "ShapeTuning", "default_max_k", "shapes", "tune_shapes"]


def tune_shapes(family: ShapeFamily, **options) -> ShapeTuning:
    """A :class:`ShapeTuning` of ``family`` (not started: ``start()`` / ``run()``); options as
    :class:`ShapeTuning` takes them (``work_dir``, ``k``, ``regret``, ``trials``, ...)."""
    return ShapeTuning(family, **options)
