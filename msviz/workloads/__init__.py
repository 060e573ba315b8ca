"""The workload catalogue: MetaSchedule's test workloads by name (``"GMM-0"``, ``"C2D:3"``), the
int8 workloads in the layouts AVX-512 VNNI wants, and what a workload argument can be (a name,
a TE function, a PrimFunc, an IRModule or TVMScript text)."""

from msviz.workloads.te_catalogue import (
    DESCRIPTIONS,
    INT8,
    Workload,
    catalogue,
    configs,
    flop_count,
    get,
    resolve,
)

__all__ = ["DESCRIPTIONS", "INT8", "Workload", "catalogue", "configs", "flop_count", "get",
           "resolve"]
