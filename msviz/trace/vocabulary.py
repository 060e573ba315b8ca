"""One-line plain-language explanations of every instruction kind a trace can hold.

The views use them as tooltips and as a glossary. :func:`registered_kinds` asks TVM which kinds
are registered, so a test can check that none is missing here after a TVM upgrade.
"""

from __future__ import annotations

import inspect

from msviz.compat import Schedule, tir_schedule

__all__ = ["GLOSSARY", "explain", "glossary", "registered_kinds"]

#: Instruction kind name -> one-line explanation.
GLOSSARY: dict[str, str] = {
    # -- looking things up (pure: they change nothing) --
    "GetSBlock": "Look up a block (one computation) by its name.",
    "GetLoops": "List the loops around a block, outermost first.",
    "GetChildBlocks": "List the blocks directly inside a block or loop.",
    "GetProducers": "List the blocks that write the data a block reads.",
    "GetConsumers": "List the blocks that read the data a block writes.",
    "GetOutputBlocks": "List the blocks that write the function's outputs.",
    # -- sampling: the tuner's decisions --
    "SamplePerfectTile": "Choose tile sizes: factors that multiply exactly to the loop's length.",
    "SamplePartitionedTile": "Choose tile sizes for a loop split into partitions.",
    "SampleCategorical": "Choose one value from a list of candidates with given probabilities.",
    "SampleComputeLocation": "Choose the loop at which a block is computed (or root, or inline).",
    # -- loop transformations --
    "Split": "Split a loop into nested loops with the given factors (tiling).",
    "Fuse": "Merge consecutive nested loops into one loop.",
    "Merge": "Merge loops of several blocks that have the same shape into one.",
    "Reorder": "Change the nesting order of loops.",
    "ReorderBlockIterVar": "Change the order of a block's iteration variables.",
    "AddUnitLoop": "Wrap a block or loop in a new loop of length 1.",
    "LoopPartition": "Split a loop into consecutive loops over separate index ranges.",
    "Parallel": "Run a loop's iterations in parallel on CPU threads.",
    "Vectorize": "Run a loop's iterations as SIMD vector instructions.",
    "Bind": "Map a loop onto a GPU thread or block index (threadIdx/blockIdx).",
    "Unroll": "Unroll a loop completely in the generated code.",
    # -- data movement and storage --
    "CacheRead": "Copy a block's input into a faster buffer (cache) before it is read.",
    "CacheWrite": "Write a block's output to a temporary cache, then copy it to the output.",
    "CacheInplace": "Cache a buffer that a block reads and writes in place.",
    "CacheIndex": "Precompute the index expressions of a block into a buffer.",
    "ReindexCacheRead": "Cache-read with the cache indexed by the block iteration variables.",
    "ReindexCacheWrite": "Cache-write with the cache indexed by the block iteration variables.",
    "ReIndex": "Copy a buffer into one indexed by the block's iteration variables.",
    "ReadAt": "Read a buffer region into a cache at a given loop.",
    "WriteAt": "Write a buffer region from a cache at a given loop.",
    "SetScope": "Move a buffer to another memory scope (e.g. shared or local on a GPU).",
    "StorageAlign": "Pad a buffer's dimension so its rows start at aligned addresses.",
    "SetAxisSeparator": "Mark where a buffer's axes split into separate physical dimensions.",
    "TransformLayout": "Rewrite a buffer's layout with an index map.",
    "TransformBlockLayout": "Rewrite a block's iteration space with an index map.",
    "RollingBuffer": "Reuse a buffer as a sliding window across loop iterations.",
    "DecomposePadding": "Split a padding block into a fill part and a copy part.",
    "PadEinsum": "Pad the loops of an einsum-like block to given multiples.",
    "UnsafeSetDType": "Change a buffer's data type (not checked for correctness).",
    "UnsafeHideBufferAccess": "Hide buffer accesses from the block's read/write list (unchecked).",
    "AnnotateBufferAccess": "Override the buffer region a block is recorded as accessing.",
    # -- moving computation --
    "ComputeAt": "Compute a producer block inside a given loop of its consumer.",
    "ReverseComputeAt": "Compute a consumer block inside a given loop of its producer.",
    "ComputeInline": "Fold a block into the blocks that read it (no buffer of its own).",
    "ReverseComputeInline": "Fold a block into the block that writes its input.",
    "FuseReductionEpilogue": "Fuse an elementwise epilogue into the reduction that feeds it.",
    # -- reductions --
    "DecomposeReduction": "Split a reduction's initialisation out of its update loop.",
    "RFactor": "Turn part of a reduction into a parallel loop over partial results.",
    # -- blocks and hardware intrinsics --
    "Blockize": "Turn the loops under a given loop into a new block.",
    "Tensorize": "Replace a block or loop nest with a hardware tensor instruction.",
    # -- annotations and the tuner's protocol --
    "Annotate": "Attach a hint to a block or loop (parallel, vectorize, unroll, tiling ...).",
    "Unannotate": "Remove a hint from a block or loop.",
    "EnterPostproc": "Marks the start of the postprocessors' instructions.",
}


def explain(kind: object) -> str:
    """The one-line explanation of an instruction kind.

    Parameters
    ----------
    kind : str | Instruction | InstructionKind
        A kind name (``"Split"``), an instruction, or its kind.

    Returns
    -------
    text : str
        The explanation, or a generic line naming the kind when it is not in :data:`GLOSSARY`.
    """
    name = getattr(getattr(kind, "kind", kind), "name", kind)
    name = str(name)
    return GLOSSARY.get(name, f"A schedule instruction of kind {name}.")


def _candidate_names() -> set[str]:
    """Kind names derived from the Schedule's methods (``compute_at`` -> ``ComputeAt``)."""
    fixes = {"Sblock": "SBlock", "Rfactor": "RFactor", "Reindex": "ReIndex", "Dtype": "DType"}
    names = set(GLOSSARY)
    for method, _ in inspect.getmembers(Schedule, callable):
        if method.startswith("_"):
            continue
        camel = "".join(part[:1].upper() + part[1:] for part in method.split("_"))
        for wrong, right in fixes.items():
            camel = camel.replace(wrong, right)
        names.add(camel)
        if camel.startswith("ReIndexCache"):  # registered as ReindexCacheRead/Write
            names.add(camel.replace("ReIndex", "Reindex"))
    return names


def registered_kinds() -> list[str]:
    """Every instruction kind TVM has registered that a Schedule method or this glossary names.

    TVM has no call that lists its instruction kinds; each name derived from a ``Schedule``
    method (plus the glossary's own) is checked with ``InstructionKind.get``.

    Returns
    -------
    kinds : list of str
        Sorted kind names.
    """
    found = []
    for name in sorted(_candidate_names()):
        try:
            tir_schedule.InstructionKind.get(name)
        except Exception:  # not registered
            continue
        found.append(name)
    return found


def glossary() -> dict[str, str]:
    """Kind name -> explanation for every registered kind (generic text where unknown)."""
    return {name: explain(name) for name in registered_kinds()}
