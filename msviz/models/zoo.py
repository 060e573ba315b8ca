"""The model catalogue: real networks built in Relax with random weights, no downloads.

Each :data:`MODELS` recipe is a body that builds the network on a
:class:`~msviz.models.graph.Graph` and its :class:`CatalogueEntry` (what it is, its input, its
task count and FLOP); :func:`build` makes it a :class:`~msviz.models.model.Model`. Small blocks
(``mlp``, ``resnet-block``, ``transformer-block``, ``convnet``, ``resnet18``) tune in
minutes; ``resnet50``, ``mobilenetv2`` and ``bert-base`` have their real layers, so
MetaSchedule's extraction gives their real tasks and weights, at small inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from msviz.errors import WorkloadError
from msviz.models.graph import Graph, function
from msviz.models.model import Model, inputs_of

__all__ = ["MODELS", "CatalogueEntry", "Recipe", "build", "catalogue", "recipe"]


def _mlp(g: Graph, x: Any) -> Any:
    h = g.relu(g.linear(x, 64, 128))
    h = g.relu(g.linear(h, 128, 128))
    h = g.relu(g.linear(h, 128, 128))  # same shape as the layer before: one task, weight 2
    return g.emit(g.op.nn.softmax(g.linear(h, 128, 10)))


# -- convolutional networks --------------------------------------------------------------------


def _residual(g: Graph, x: Any, h: Any, c_in: int, c_out: int, stride: int) -> Any:
    """``relu(h + skip)``: the skip is ``x``, or a projection (1x1 conv-bn) where the block
    changes the shape."""
    skip = x if stride == 1 and c_in == c_out else g.conv_bn(x, c_in, c_out, 1, stride)
    return g.relu(g.emit(g.op.add(h, skip)))


def _basic_block(g: Graph, x: Any, c_in: int, c_out: int, stride: int) -> Any:
    h = g.relu(g.conv_bn(x, c_in, c_out, 3, stride))
    return _residual(g, x, g.conv_bn(h, c_out, c_out, 3), c_in, c_out, stride)


def _resnet_block(g: Graph, x: Any) -> Any:
    return _basic_block(g, x, 16, 16, 1)


def _resnet18(g: Graph, x: Any) -> Any:
    h = g.relu(g.conv_bn(x, 3, 16, 3))
    c_in = 16
    for c_out, stride in ((16, 1), (32, 2), (64, 2), (128, 2)):
        h = _basic_block(g, h, c_in, c_out, stride)
        h = _basic_block(g, h, c_out, c_out, 1)
        c_in = c_out
    return g.linear(g.pool_flatten(h, 128), 128, 10)


def _convnet(g: Graph, x: Any) -> Any:
    """Three 3x3 conv-relu layers of other shapes (3 -> 16 at 32x32, 16 -> 32 and 32 -> 64 at
    stride 2), average pool, fc 64 -> 10: a model whose time is in three different convs."""
    h = g.relu(g.conv_bn(x, 3, 16, 3))
    h = g.relu(g.conv_bn(h, 16, 32, 3, 2))
    h = g.relu(g.conv_bn(h, 32, 64, 3, 2))
    return g.linear(g.pool_flatten(h, 64), 64, 10)


def _bottleneck(g: Graph, x: Any, c_in: int, width: int, stride: int) -> Any:
    """ResNet v1.5 bottleneck: 1x1 reduce, 3x3 (the stride), 1x1 expand to ``4 * width``."""
    h = g.relu(g.conv_bn(x, c_in, width, 1))
    h = g.relu(g.conv_bn(h, width, width, 3, stride))
    return _residual(g, x, g.conv_bn(h, width, 4 * width, 1), c_in, 4 * width, stride)


def _resnet50(g: Graph, x: Any) -> Any:
    """ResNet-50 v1.5: stem 7x7/2 conv (64) and 3x3/2 max pool, bottleneck stages [3, 4, 6, 3]
    of widths 64 to 512 (projection shortcut on each stage's first block), average pool, fc
    2048 -> 1000.

    At 64x64 the stages run at 16, 8, 4 and 2 pixels a side (56 to 7 at 224x224): each 3x3 conv
    still sees more than its padding, and a run is 0.67 GFLOP (about 8 at 224x224).
    """
    h = g.max_pool(g.relu(g.conv_bn(x, 3, 64, 7, 2)))
    c_in = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            h = _bottleneck(g, h, c_in, width, stride if i == 0 else 1)
            c_in = 4 * width
    return g.linear(g.pool_flatten(h, 2048), 2048, 1000)


#: MobileNetV2's inverted residual stages: expansion t, channels c, blocks n, first stride s.
_MOBILENETV2_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def _inverted_residual(g: Graph, x: Any, c_in: int, c_out: int, t: int, stride: int) -> Any:
    """1x1 expand to ``t * c_in`` (none where t is 1), depthwise 3x3 (the stride), 1x1 linear
    projection; the input is added back where the shape stays."""
    hidden = t * c_in
    h = x if t == 1 else g.relu6(g.conv_bn(x, c_in, hidden, 1))
    h = g.relu6(g.conv_bn(h, hidden, hidden, 3, stride, groups=hidden))
    h = g.conv_bn(h, hidden, c_out, 1)
    return g.emit(g.op.add(x, h)) if stride == 1 and c_in == c_out else h


def _mobilenetv2(g: Graph, x: Any) -> Any:
    """MobileNetV2 (width 1.0): stem 3x3/2 conv (32), the inverted residual stages of
    :data:`_MOBILENETV2_STAGES`, 1x1 conv to 1280, average pool, fc 1280 -> 1000.

    At 64x64 the stages run at 32 down to 2 pixels a side (112 to 7 at 224x224).
    """
    h = g.relu6(g.conv_bn(x, 3, 32, 3, 2))
    c_in = 32
    for t, c_out, blocks, stride in _MOBILENETV2_STAGES:
        for i in range(blocks):
            h = _inverted_residual(g, h, c_in, c_out, t, stride if i == 0 else 1)
            c_in = c_out
    h = g.relu6(g.conv_bn(h, c_in, 1280, 1))
    return g.linear(g.pool_flatten(h, 1280), 1280, 1000)


# -- transformers ------------------------------------------------------------------------------


def _attention(g: Graph, x: Any, heads: int, weights: list[tuple[Any, Any]]) -> Any:
    """Multi-head self-attention of ``x`` (seq, dim), no mask: ``softmax(q k^T / sqrt(d)) v``
    per head, the heads merged and projected; ``weights`` are the q, k, v and output layers."""
    op = g.op
    seq, dim = g.shape(x)
    head = dim // heads

    def split(v: Any) -> Any:  # (seq, dim) -> (heads, seq, head)
        return g.emit(op.permute_dims(g.emit(op.reshape(v, (seq, heads, head))), [1, 0, 2]))

    q, k, v = (split(g.affine(x, w)) for w in weights[:3])
    scores = g.emit(op.multiply(g.emit(op.matmul(q, g.emit(op.permute_dims(k, [0, 2, 1])))),
                                g.scalar(head ** -0.5)))
    att = g.emit(op.matmul(g.emit(op.nn.softmax(scores, axis=-1)), v))
    att = g.emit(op.reshape(g.emit(op.permute_dims(att, [1, 0, 2])), (seq, dim)))
    return g.affine(att, weights[3])


def _transformer_block(g: Graph, x: Any, heads: int = 2) -> Any:
    """Pre-norm block: ``x + attention(norm(x))``, then ``+ mlp(norm(.))``; ``x`` is
    (seq, dim)."""
    dim = g.shape(x)[-1]
    h = g.layer_norm(x, g.norm_weights(dim))
    attention = [g.dense_weights(dim, dim) for _ in range(4)]
    x = g.emit(g.op.add(x, _attention(g, h, heads, attention)))
    h = g.emit(g.op.nn.gelu(g.linear(g.layer_norm(x, g.norm_weights(dim)), dim, 2 * dim)))
    return g.emit(g.op.add(x, g.linear(h, 2 * dim, dim)))


def _bert_base(g: Graph, x: Any, layers: int = 12, heads: int = 12, ffn: int = 3072) -> Any:
    """BERT-base's encoder on ``x`` (seq, 768): post-norm layers ``x = norm(x +
    attention(x))``, then ``x = norm(x + ffn(x))`` with a GELU FFN; no embeddings, no mask.

    The layers share one set of weights (the same Relax constants in each): the tasks and their
    weights are those of 12 sets (a task's weights are its arguments, not part of its TensorIR),
    at a twelfth of the memory.
    """
    dim = g.shape(x)[-1]
    attention = [g.dense_weights(dim, dim, dim ** -0.5) for _ in range(4)]
    norm1 = g.norm_weights(dim)
    up, down = g.dense_weights(dim, ffn, dim ** -0.5), g.dense_weights(ffn, dim, ffn ** -0.5)
    norm2 = g.norm_weights(dim)
    for _ in range(layers):
        x = g.emit(g.op.add(x, _attention(g, x, heads, attention)))
        x = g.layer_norm(x, norm1)
        h = g.emit(g.op.nn.gelu(g.affine(x, up)))
        x = g.layer_norm(g.emit(g.op.add(x, g.affine(h, down))), norm2)
    return x


@dataclass(frozen=True)
class CatalogueEntry:
    """What :func:`catalogue` says of a model: what it is, its input and its tasks.

    The task count and FLOP are MetaSchedule's extraction for the ``llvm`` target
    (``model.extract_tasks("llvm")``), stored here and checked against a real extraction by the
    tests. Its ``str`` is the description.

    Parameters
    ----------
    description : str
        One line saying what it is.
    input_shape : tuple of int
        The shape of the model's one float32 input ``x``.
    tasks : int
        How many tasks extraction gives.
    weights : int
        The sum of the tasks' weights: TensorIR calls per run of the model.
    flop : int
        FLOP per run: the sum over the tasks of weight x the task's FLOP (``estimate_tir_flops``,
        what MetaSchedule's task table shows).
    """

    description: str
    input_shape: tuple[int, ...]
    tasks: int
    weights: int
    flop: int

    @property
    def gflop(self) -> float:
        return self.flop / 1e9

    def __str__(self) -> str:
        return self.description


class Recipe(NamedTuple):
    """How the catalogue builds a model: the body on a :class:`Graph`, its entry, whether batch
    norm is folded into the convolutions (see :class:`Graph`), the names of its input's axes and
    which of them :func:`build` may resize (the body reads their sizes off the input)."""

    body: Callable[[Graph, Any], Any]
    entry: CatalogueEntry
    fold_bn: bool = False
    axes: tuple[str, ...] = ("batch", "channels", "height", "width")
    resizable: tuple[str, ...] = ("height", "width")


#: The axes of a sequence model's input: its length may change, its hidden size not.
_SEQUENCE = {"axes": ("seq", "hidden"), "resizable": ("seq",)}


#: Catalogue models by name.
MODELS: dict[str, Recipe] = {
    "mlp": Recipe(_mlp, CatalogueEntry(
        "MLP 64-128-128-128-10 with softmax, batch 4", (4, 64), 4, 5, 344_592),
        axes=("batch", "features"), resizable=("batch",)),
    "resnet-block": Recipe(_resnet_block, CatalogueEntry(
        "ResNet basic block: conv-bn-relu, conv-bn, residual add, relu (16 ch, 16x16)",
        (1, 16, 16, 16), 4, 4, 2_379_776)),
    "transformer-block": Recipe(_transformer_block, CatalogueEntry(
        "transformer block: layer norm, 2-head attention, MLP (seq 16, dim 32)", (16, 32),
        11, 15, 436_768), **_SEQUENCE),
    "convnet": Recipe(_convnet, CatalogueEntry(
        "small CNN: three 3x3 conv-relu layers (16, 32, 64 ch; the last two stride 2), batch norm "
        "folded, average pool, fc 10, at 32x32 input", (1, 3, 32, 32), 7, 7, 5_666_122),
        fold_bn=True),
    "resnet18": Recipe(_resnet18, CatalogueEntry(
        "ResNet-18-shaped network (8 basic blocks, 16-128 ch) at 32x32 input", (1, 3, 32, 32),
        19, 24, 70_449_802)),
    "resnet50": Recipe(_resnet50, CatalogueEntry(
        "ResNet-50 v1.5 (bottlenecks [3, 4, 6, 3], stride on the 3x3 conv), batch norm folded "
        "into the convs, 1000 classes, 64x64 input", (1, 3, 64, 64), 29, 58, 673_684_456),
        fold_bn=True),
    "mobilenetv2": Recipe(_mobilenetv2, CatalogueEntry(
        "MobileNetV2 1.0 (17 inverted residual blocks, depthwise 3x3, relu6), batch norm folded "
        "into the convs, 1000 classes, 64x64 input", (1, 3, 64, 64), 34, 56, 53_024_104),
        fold_bn=True),
    "bert-base": Recipe(_bert_base, CatalogueEntry(
        "BERT-base encoder (12 post-norm layers, hidden 768, 12 heads, FFN 3072, GELU; the "
        "layers share one set of weights), seq 32", (32, 768), 11, 180, 5_588_583_168),
        **_SEQUENCE),
}


def catalogue() -> dict[str, CatalogueEntry]:
    """The catalogue models by name: what each one is, its input, its task count and FLOP.

    Examples
    --------
    >>> entry = catalogue()["resnet50"]
    >>> entry.tasks, round(entry.gflop, 2), str(entry)[:9]
    (29, 0.67, 'ResNet-50')
    """
    return {name: recipe.entry for name, recipe in MODELS.items()}


def recipe(name: str, input_shape: Any = None) -> tuple[str, Recipe, tuple[int, ...]]:
    """The catalogue key, recipe and input shape of model ``name`` built at ``input_shape``
    (the entry's when None); a name not in the catalogue or a shape it cannot take raises
    :class:`WorkloadError` naming what is wrong."""
    key = name.strip().lower() if isinstance(name, str) else name
    if key not in MODELS:
        raise WorkloadError(f"unknown model {name!r}; catalogue models: {', '.join(MODELS)}")
    found = MODELS[key]
    default = found.entry.input_shape
    if input_shape is None:
        return key, found, default
    axes = found.axes
    layout = f"({', '.join(axes)})"
    try:
        shape = tuple(input_shape)
    except TypeError:
        raise WorkloadError(f"input_shape of {key} must be a tuple {layout}, got "
                            f"{input_shape!r}") from None
    if len(shape) != len(axes):
        raise WorkloadError(f"input_shape of {key} must have {len(axes)} axes {layout}, got "
                            f"{len(shape)}: {shape}")
    bad = [d for d in shape if isinstance(d, bool) or not isinstance(d, int) or d <= 0]
    if bad:
        raise WorkloadError(f"input_shape of {key} must be positive ints {layout}, got {shape}")
    for axis, size, fixed in zip(axes, shape, default):
        if axis not in found.resizable and size != fixed:
            raise WorkloadError(
                f"{key} takes {axis} {fixed} (input {layout}; it can change "
                f"{' and '.join(found.resizable)}), got {axis} {size} in {shape}")
    return key, found, shape


def build(name: str, *, seed: int = 0, input_shape: tuple[int, ...] | None = None) -> Model:
    """A catalogue model by name (see :func:`catalogue`), its weights random with ``seed``.

    Parameters
    ----------
    name : str
        A catalogue model.
    seed : int
        Seed of the random weights: the same seed gives the same weights at any input size.
    input_shape : tuple of int, optional
        Build it for another input size: a convnet's height and width (``(1, 3, 224, 224)``),
        a sequence model's length (``(128, 768)`` for ``bert-base``), the MLP's batch. The
        other axes are the entry's; the description then says the size.
    """
    key, found, shape = recipe(name, input_shape)
    mod = function(shape, found.body, seed, found.fold_bn)
    description = found.entry.description
    if shape != found.entry.input_shape:
        description += f"; built at input {'x'.join(map(str, shape))}"
    return Model(key, mod, "main", inputs_of(mod, "main"), description)
