"""The one place that knows the pinned TVM: MetaSchedule's names, targets, tensor intrinsics and
running kernels. Everything else in msviz imports MetaSchedule through this package."""

from msviz.compat.aliases import (
    FAILED_RUN_SECS,
    MS_NAMESPACE,
    ArgInfo,
    Instruction,
    JSONDatabase,
    Schedule,
    Trace,
    TuningRecord,
    Workload,
    derived_object,
    device_type,
    ms,
    normalize_mod,
    parse_script,
    quiet_ipython_printing,
    structural_equal,
    structural_hash,
    target_from_json,
    tir,
    tir_schedule,
    to_jsonable,
)
from msviz.compat.intrinsics import (
    INTRIN_FEATURES,
    INTRIN_INSTRUCTIONS,
    VNNI_INTRIN,
    intrins_ready,
    register_intrins_for,
    register_tensor_intrins,
    stock_vnni_impl,
    target_has_features,
    tensor_intrin,
    tensor_intrin_scripts,
    vnni_needs_fix,
)
from msviz.compat.kernels import (
    compile_module,
    device_of,
    fast_build,
    load_module,
    local_builder,
    to_tensor,
)
from msviz.compat.target import (
    HostCPU,
    describe_target,
    host_cores,
    host_cpu,
    host_target_spec,
    kernel_threads,
    make_target,
    set_kernel_threads,
    use_host_cores,
)

__all__ = [
    "FAILED_RUN_SECS", "INTRIN_FEATURES", "INTRIN_INSTRUCTIONS", "MS_NAMESPACE", "VNNI_INTRIN",
    "ArgInfo", "HostCPU", "Instruction", "JSONDatabase", "Schedule", "Trace", "TuningRecord",
    "Workload", "compile_module", "derived_object", "describe_target", "device_of",
    "device_type", "fast_build", "host_cores", "host_cpu", "host_target_spec", "intrins_ready",
    "kernel_threads", "load_module", "local_builder", "make_target", "ms", "normalize_mod",
    "parse_script", "quiet_ipython_printing", "register_intrins_for", "register_tensor_intrins",
    "set_kernel_threads", "stock_vnni_impl", "structural_equal", "structural_hash",
    "target_from_json", "target_has_features", "tensor_intrin", "tensor_intrin_scripts", "tir",
    "tir_schedule", "to_jsonable", "to_tensor", "use_host_cores", "vnni_needs_fix",
]
