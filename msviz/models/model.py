"""A model and its tasks: :class:`Model` (a Relax module, weights bound, and its inputs),
:func:`lower` (the fused module ``compile_relax`` builds before it applies the database) and
:class:`ModelTask` (one fused TensorIR function of it with its weight, from MetaSchedule's
``relax_integration.extract_tasks``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import tvm

from msviz import compat
from msviz.errors import WorkloadError
from msviz.models import graph_passes
from msviz.workloads import Workload, flop_count

__all__ = ["Model", "ModelTask", "available_memory", "compile_lowered", "entry_of", "first_line",
           "inputs_of", "lower", "memory_needed", "weight_bytes"]

#: Lowering a model (``FoldConstant`` among its passes) holds its weights about this many times
#: over, on top of what TVM itself takes (:data:`LOWER_BASE_BYTES`).
LOWER_WEIGHT_COPIES = 3
LOWER_BASE_BYTES = 512 << 20

#: Ops that may stay in a lowered module (calls into TIR, the VM and packed functions).
_LOWERED_OPS = ("relax.call_tir", "relax.call_dps_packed", "relax.call_packed",
                "relax.call_builtin_with_ctx", "relax.null_value", "relax.call_pure_packed",
                "relax.call_tir_with_grad", "relax.call_tir_inplace",
                "relax.reshape")  # a view (RewriteDataflowReshape): the VM's builtin, no kernel


class ModelTask(NamedTuple):
    """One tuning task of a model: a fused TensorIR function and how often the model calls it.

    Parameters
    ----------
    index : int
        Position in MetaSchedule's task list (the task scheduler's ``Task #``).
    name : str
        MetaSchedule's task name (the fused function's name, e.g. ``fused_matmul_add_relu``).
    weight : int
        How many times the model calls it.
    workload : msviz.workloads.Workload
        The task's IRModule (``ExtractedTask.dispatched[0]``, what ``tune_relax`` tunes) and FLOP.
    """

    index: int
    name: str
    weight: int
    workload: Any

    @property
    def flop(self) -> float:
        return self.workload.flop

    @property
    def script(self) -> str:
        """The task as TVMScript."""
        return self.workload.mod.script()


@dataclass
class Model:
    """A Relax model ready to lower, extract and tune.

    Parameters
    ----------
    name : str
        Shown in events and reports.
    mod : tvm.IRModule
        The Relax module, weights bound as constants (as ``compile_relax`` gets it).
    func_name : str
        The entry function (``"main"``, or ``"forward"`` for an ``nn.Module``).
    inputs : list of (name, shape, dtype)
        The entry function's inputs, all static.
    description : str
        One line saying what it is.
    graph : str
        ``"expert"`` (the default: batch norms folded into the convolutions, epilogues fused,
        on CPU convolutions laid out NHWC, weights prepacked and exp/erf/tanh vectorized;
        :mod:`msviz.models.graph_passes`), ``"expert-nchw"`` (the same in the model's own
        layout, with libm's exp/erf/tanh), ``"expert-exact"`` (NHWC, libm's exp/erf/tanh) or
        ``"stock"`` (stock MetaSchedule's graph, ``compile_relax``'s lowering) for
        comparisons.
    file : str, optional
        The file the model was read from (an ``.onnx`` path), so a work dir can name it.
    """

    name: str
    mod: tvm.IRModule = field(repr=False)
    func_name: str = "main"
    inputs: list[tuple[str, tuple[int, ...], str]] = field(default_factory=list)
    description: str = ""
    graph: str = graph_passes.EXPERT
    file: str | None = None
    _lowered: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        graph_passes.check_graph(self.graph)

    def on_graph(self, graph: str) -> Model:
        """This model on ``graph`` (itself when it is on it already)."""
        graph_passes.check_graph(graph)
        if graph == self.graph:
            return self
        return Model(self.name, self.mod, self.func_name, list(self.inputs),
                     self.description, graph, self.file)

    def lower(self, target: Any) -> tvm.IRModule:
        """The fused module MetaSchedule tunes and :meth:`compile` applies the database to
        (:func:`msviz.models.graph_passes.lower` on this model's graph), so the tasks'
        database keys match what the build looks up."""
        return self._lower(target)[0]

    def graph_report(self, target: Any) -> graph_passes.GraphReport:
        """What the graph passes did: batch norms folded, tasks and kernel calls a run against
        stock MetaSchedule's graph, tasks prepacked."""
        target = compat.make_target(target)
        key = ("report", str(target))
        if key not in self._lowered:
            lowered, report = self._lower(target)
            counts = _task_counts(lowered, target)
            stock = counts if self.graph == graph_passes.STOCK else \
                _task_counts(lower(self.mod, target, graph_passes.STOCK)[0], target)
            self._lowered[key] = dataclasses.replace(report, tasks=counts[0], calls=counts[1],
                                                     stock_tasks=stock[0], stock_calls=stock[1])
        return self._lowered[key]

    def _lower(self, target: Any) -> tuple[tvm.IRModule, graph_passes.GraphReport]:
        target = compat.make_target(target)
        key = str(target)
        if key not in self._lowered:
            self.check_memory()
            self._lowered[key] = lower(self.mod, target, self.graph)
        return self._lowered[key]

    def compile(self, database: Any, target: Any) -> Any:
        """The model built with ``database``'s best records (a Relax VM executable): the
        lowered module, ``MetaScheduleApplyDatabase``, :func:`graph_passes.finish` (the
        weights' layout folded in, on the expert graph), then TVM's own dataflow lowering and
        finalizing passes. A task with no record in ``database`` keeps its untuned schedule
        (DLight's on a GPU).

        Raises
        ------
        TypeError
            ``database`` is not a MetaSchedule ``Database`` (a work dir's is
            ``JSONDatabase(work_dir=...)``; ``msviz.build(work_dir)`` builds from a work dir).
        """
        if not isinstance(database, compat.ms.database.Database):
            raise TypeError(f"Model.compile takes a MetaSchedule Database (e.g. "
                            f"JSONDatabase(work_dir=...); msviz.build(work_dir) builds from a "
                            f"work dir), got {type(database).__name__} {database!r}")
        target = compat.make_target(target)
        return compile_lowered(self.lower(target), database, target, self.graph)

    def check_memory(self) -> None:
        """Refuse to lower a model this machine cannot hold (an error naming the model and the
        memory it needs, rather than a kernel killed by the OOM killer)."""
        needed, free = memory_needed(self.mod), available_memory()
        if free is not None and needed > free:
            raise WorkloadError(
                f"model {self.name!r} needs about {needed / 2**30:.1f} GiB of memory to lower and "
                f"extract its tasks ({weight_bytes(self.mod) / 2**30:.1f} GiB of weights, held "
                f"about {LOWER_WEIGHT_COPIES} times over), and this machine has "
                f"{free / 2**30:.1f} GiB available")

    def extract_tasks(self, target: Any) -> list[ModelTask]:
        """MetaSchedule's tasks of the lowered model (``relax_integration.extract_tasks``)."""
        target = compat.make_target(target)
        lowered = self.lower(target)
        extracted = compat.ms.relax_integration.extract_tasks(lowered, target)
        tasks = []
        for task in extracted:
            mod = task.dispatched[0]
            tasks.append(ModelTask(len(tasks), str(task.task_name), int(task.weight),
                                   Workload(str(task.task_name), mod, flop_count(mod),
                                            f"task of {self.name}")))
        if not tasks:
            raise WorkloadError(f"model {self.name!r} has no TensorIR task to tune")
        return tasks

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Random inputs of the right shapes and dtypes (normal floats, small ints)."""
        rng = np.random.default_rng(seed)
        out = []
        for _, shape, dtype in self.inputs:
            if dtype.startswith(("int", "uint")):
                out.append(rng.integers(0, 8, size=shape).astype(dtype))
            else:
                out.append(rng.standard_normal(shape).astype(dtype))
        return out


def lower(mod: tvm.IRModule, target: Any, graph: str = graph_passes.EXPERT
          ) -> tuple[tvm.IRModule, graph_passes.GraphReport]:
    """Lower a Relax module to fused TensorIR calls on ``graph``; an op with no TIR lowering
    raises. Returns the lowered module and what the graph passes did."""
    try:
        lowered, report = graph_passes.lower(mod, target, graph)
    except WorkloadError:
        raise
    except Exception as err:
        raise WorkloadError(f"cannot lower the model: {first_line(err)}") from None
    left = sorted(_relax_ops(lowered) - set(_LOWERED_OPS))
    if left:
        raise WorkloadError(
            f"cannot lower operator {', '.join(left)}: no TensorIR lowering (LegalizeOps) for "
            "it on this target, so MetaSchedule cannot tune or build it")
    return lowered, report


def compile_lowered(lowered: tvm.IRModule, database: Any, target: Any,
                    graph: str = graph_passes.EXPERT) -> Any:
    """Build a lowered model with ``database`` (see :meth:`Model.compile`)."""
    from tvm import relax
    from tvm.relax import pipeline
    from tvm.s_tir import dlight

    def _passes(name: str, default: list) -> list:
        try:  # the target's own passes; TVM's CPU lists where its backend has none
            return list(getattr(pipeline, name)(target))
        except (ValueError, AttributeError):
            return default

    gpu = pipeline.BackendDispatcher.is_gpu_target(target)

    @tvm.transform.module_pass(opt_level=3)
    def _build_pipeline(mod: tvm.IRModule, _ctx: Any) -> tvm.IRModule:
        mod = relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(mod)
        mod = graph_passes.finish(mod, target, graph)
        if gpu:
            mod = dlight.ApplyDefaultSchedule(dlight.gpu.Matmul(), dlight.gpu.GEMV(),
                                              dlight.gpu.Reduction(),
                                              dlight.gpu.GeneralReduction(),
                                              dlight.gpu.Fallback())(mod)
        return tvm.transform.Sequential(_passes("dataflow_lower_passes", [
            relax.transform.RewriteDataflowReshape(), relax.transform.ToNonDataflow(),
            relax.transform.RemovePurityChecking(), relax.transform.CallTIRRewrite()])
            + _passes("finalize_passes", [
                relax.transform.StaticPlanBlockMemory(), relax.transform.LowerAllocTensor(),
                relax.transform.KillAfterLastUse(), relax.transform.LowerRuntimeBuiltin(),
                relax.transform.ComputePrimValue(), relax.transform.VMShapeLower(),
                relax.transform.AttachGlobalSymbol()]))(mod)

    with target, database, tvm.transform.PassContext(opt_level=3):
        return relax.build(lowered, target=target, relax_pipeline=_build_pipeline)


def _task_counts(lowered: tvm.IRModule, target: Any) -> tuple[int, int]:
    """Tasks of a lowered module and the kernel calls a run makes (their weights)."""
    tasks = compat.ms.relax_integration.extract_tasks(lowered, target)
    return len(tasks), sum(int(t.weight) for t in tasks)


def weight_bytes(mod: tvm.IRModule) -> int:
    """Bytes of the constants (bound weights) of a module's Relax functions."""
    from tvm import relax

    seen: dict[int, int] = {}

    def visit(expr: Any) -> None:
        value = getattr(expr, "value", None) if isinstance(expr, tvm.ir.expr.Constant) else None
        if isinstance(value, tvm.runtime.Tensor):
            size = int(np.prod([int(d) for d in value.shape], dtype=np.int64))
            seen[hash(value)] = size * np.dtype(str(value.dtype)).itemsize

    for _, func in mod.functions_items():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return sum(seen.values())


def memory_needed(mod: tvm.IRModule) -> int:
    """Bytes of memory lowering and extracting ``mod`` needs, about."""
    return LOWER_BASE_BYTES + LOWER_WEIGHT_COPIES * weight_bytes(mod)


def available_memory() -> int | None:
    """Bytes of memory available to new allocations (Linux ``MemAvailable``; None elsewhere)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _relax_ops(mod: tvm.IRModule) -> set[str]:
    from tvm import relax

    names: set[str] = set()

    def visit(expr: Any) -> None:
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
            names.add(str(expr.op.name))

    for _, func in mod.functions_items():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(func, visit)
    return {n for n in names if not n.startswith(("relax.builtin.", "relax.memory.", "relax.vm."))}


def first_line(err: BaseException) -> str:
    """The last non-empty line of an error (TVM puts its message after the traceback)."""
    lines = [x for x in str(err).strip().splitlines() if x.strip()]
    return lines[-1] if lines else type(err).__name__


# -- the entry function and its inputs -------------------------------------------------------


def entry_of(mod: tvm.IRModule) -> str:
    """The entry function of a Relax module: ``main``, or its only Relax function."""
    from tvm import relax

    names = [gv.name_hint for gv, f in mod.functions_items() if isinstance(f, relax.Function)]
    if "main" in names:
        return "main"
    if len(names) == 1:
        return names[0]
    raise WorkloadError(f"a model needs a Relax function named 'main' (found: {names or 'none'})")


def inputs_of(mod: tvm.IRModule, func_name: str) -> list[tuple[str, tuple[int, ...], str]]:
    """The ``(name, shape, dtype)`` of each input of ``func_name``; a symbolic shape raises."""
    from tvm import relax

    out = []
    for param in mod[func_name].params:
        name = str(getattr(param, "name", None) or param.name_hint)
        ty = getattr(param, "ty", None)
        shape = getattr(ty, "shape", None)
        if not isinstance(ty, relax.TensorType) or shape is None:
            raise WorkloadError(f"model input {name!r} is not a tensor of known shape ({ty}); "
                                "msviz tunes models with static shapes")
        dims = []
        for dim in shape.values:
            if not isinstance(dim, compat.tir.IntImm):
                raise WorkloadError(
                    f"dynamic shapes are not supported: model input {name!r} has shape "
                    f"{[str(d) for d in shape.values]} (dimension {dim} is symbolic); give it "
                    "a fixed size")
            dims.append(int(dim))
        out.append((name, tuple(dims), str(ty.dtype)))
    return out
