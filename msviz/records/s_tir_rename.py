"""Records written by TVM before the ``s_tir`` rename, rewritten for the pinned TVM (table-driven).

TVM 0.24 moved MetaSchedule to ``tvm.s_tir.meta_schedule`` and renamed TIR's schedulable
``Block`` to ``SBlock`` (apache/tvm#18689, #18728); the JSON graph that serializes an IRModule
changed format in between (TVM 0.22's FFI refactor) and its node type keys were renamed again
(``tir.*`` -> ``tirx.*`` / ``s_tir.*`` / ``ir.prim.*``). A work dir written by TVM 0.13 - 0.23
therefore holds traces, targets and workloads the pinned TVM refuses. Each table below is one
kind of change, each entry one rename, checked against apache/tvm's sources at v0.13.0, v0.16.0,
v0.20.0, v0.23.0 and the pinned 0.27 (their instruction-kind registries: ``kName``,
``kNumAttrs``).

What is rewritten:

* a trace's instructions (:data:`INSTRUCTION_RENAMES`, :data:`ADDED_ATTRS`);
* a target's options the pinned TVM no longer knows are dropped (:func:`migrate_target`);
* a workload's TVMScript, as MetaSchedule's per-task log prints it (:data:`SCRIPT_RENAMES`):
  the serialized IRModule of TVM <= 0.23 cannot be loaded any more, its TVMScript can.

What cannot be: a trace using an instruction the pinned TVM dropped
(:data:`REMOVED_INSTRUCTIONS`) or an attribute that embeds an old JSON graph
(:data:`GRAPH_ATTRS`); :func:`migrate_trace_json` raises :class:`MigrationError` naming it.

The tables are plain data (JSON and TVMScript text rewritten), kept beside their readers
(:mod:`msviz.records.migrate_on_read`) and writer (:mod:`msviz.archive.migrate`); what the
pinned TVM itself knows (a target kind's options) is asked of :mod:`msviz.compat`.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from msviz.compat import target_kind_options
from msviz.errors import MsvizError

__all__ = [
    "ADDED_ATTRS",
    "GRAPH_ATTRS",
    "INSTRUCTION_RENAMES",
    "REMOVED_INSTRUCTIONS",
    "SCRIPT_RENAMES",
    "MigrationError",
    "migrate_script",
    "migrate_target",
    "migrate_trace_json",
    "trace_needs_migration",
]


class MigrationError(MsvizError, ValueError):
    """A record or workload written by an older TVM that the pinned TVM cannot be given."""


#: Instruction kinds renamed. ``GetBlock`` -> ``GetSBlock``: TIR's ``Block`` became ``SBlock``
#: (apache/tvm#18689, TVM 0.24); the instruction's inputs and attributes (block name, function
#: name) are unchanged.
INSTRUCTION_RENAMES: dict[str, str] = {"GetBlock": "GetSBlock"}

#: Attributes an instruction gained: kind -> (attribute count before, values appended).
#: ``Split`` gained ``disable_predication`` (TVM 0.17; before: ``[preserve_unit_iters]``);
#: ``0`` (False) keeps the old behaviour, a predicate where the factors do not divide.
ADDED_ATTRS: dict[str, tuple[int, tuple[Any, ...]]] = {"Split": (1, (0,))}

#: Instruction kinds the pinned TVM no longer registers, with why.
REMOVED_INSTRUCTIONS: dict[str, str] = {
    "SetAxisSeparator": "the pinned TVM has no SetAxisSeparator schedule primitive",
}

#: Attributes holding an IR node serialized as a JSON graph: kind -> attribute index. The JSON
#: graph of TVM <= 0.21 (``"type_key"`` nodes) cannot be read by the pinned TVM.
GRAPH_ATTRS: dict[str, int] = {"TransformLayout": 2, "TransformBlockLayout": 0}

#: Rewrites of old TVMScript (``from tvm.script import tir as T``) into the pinned TVM's
#: (``tirx``, ``T.sblock``, ``s_tir=True`` functions): (pattern, replacement, what it renames).
SCRIPT_RENAMES: tuple[tuple[str, str, str], ...] = (
    (r"from tvm\.script import tir as T\b", "from tvm.script import tirx as T", "tir -> tirx"),
    (r"@T\.prim_func(?=\s*\n)", "@T.prim_func(s_tir=True)", "T.prim_func -> s_tir=True"),
    (r"@T\.prim_func\((?!s_tir)", "@T.prim_func(s_tir=True, ", "T.prim_func -> s_tir=True"),
    (r"\bT\.block\(", "T.sblock(", "T.block -> T.sblock"),
    (r"\bT\.block_attr\(", "T.sblock_attr(", "T.block_attr -> T.sblock_attr"),
    (r"\bT\.alloc_buffer\(", "T.sblock_alloc_buffer(", "T.alloc_buffer -> T.sblock_alloc_buffer"),
    (r'"tir\.noalias"', '"tirx.noalias"', "tir.noalias -> tirx.noalias"),
    (r"\bsch\.get_block\(", "sch.get_sblock(", "sch.get_block -> sch.get_sblock"),
    # The pinned TVM stores function attributes as plain booleans (structural hash differs)
    (r'("tirx\.noalias": )T\.bool\((True|False)\)', r"\1\2", "T.bool -> bool"),
)



def trace_needs_migration(trace_json: Any) -> bool:
    """Whether a record's trace JSON (``[instructions, decisions]``) was written by an older
    TVM: it names a renamed or removed instruction, or an instruction with fewer attributes."""
    try:
        insts = trace_json[0]
    except (TypeError, IndexError, KeyError):
        return False
    for inst in insts:
        kind = inst[0] if isinstance(inst, list) and inst else None
        if kind in INSTRUCTION_RENAMES or kind in REMOVED_INSTRUCTIONS:
            return True
        added = ADDED_ATTRS.get(kind)
        if added is not None and len(inst) > 2 and len(inst[2]) == added[0]:
            return True
    return False


def migrate_trace_json(trace_json: Any) -> tuple[Any, list[str]]:
    """A record's trace JSON rewritten for the pinned TVM, and the renames applied.

    Parameters
    ----------
    trace_json : list
        ``[instructions, decisions]`` as a tuning record stores it; each instruction is
        ``[kind, inputs, attrs, outputs]``. Left unchanged (a copy is returned).

    Returns
    -------
    trace_json, renames : list, list of str
        The rewritten trace, and each rewrite applied once (e.g. ``"GetBlock -> GetSBlock"``).

    Raises
    ------
    MigrationError
        If the trace uses an instruction the pinned TVM lacks, or an attribute that embeds an
        IR node in the old JSON graph format, or is not a trace at all.
    """
    if not (isinstance(trace_json, list) and len(trace_json) == 2
            and isinstance(trace_json[0], list)):
        raise MigrationError("not a trace: expected [instructions, decisions]")
    out = copy.deepcopy(trace_json)
    renames: list[str] = []

    def note(text: str) -> None:
        if text not in renames:
            renames.append(text)

    for k, inst in enumerate(out[0]):
        if not (isinstance(inst, list) and len(inst) == 4 and isinstance(inst[0], str)):
            raise MigrationError(f"instruction {k} is not [kind, inputs, attrs, outputs]")
        kind = inst[0]
        if kind in REMOVED_INSTRUCTIONS:
            raise MigrationError(f"instruction {k} {kind}: {REMOVED_INSTRUCTIONS[kind]}")
        if kind in INSTRUCTION_RENAMES:
            inst[0] = INSTRUCTION_RENAMES[kind]
            note(f"{kind} -> {inst[0]}")
        added = ADDED_ATTRS.get(inst[0])
        if added is not None and len(inst[2]) == added[0]:
            inst[2] = [*inst[2], *added[1]]
            note(f"{inst[0]} attrs +{len(added[1])}")
        index = GRAPH_ATTRS.get(inst[0])
        if index is not None and index < len(inst[2]) and _old_graph(inst[2][index]):
            raise MigrationError(
                f"instruction {k} {inst[0]}: its index map is a JSON graph of TVM <= 0.21, "
                "which the pinned TVM cannot read"
            )
    return out, renames


def _old_graph(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        graph = json.loads(value)
    except ValueError:
        return False
    return isinstance(graph, dict) and "root" in graph and "metadata" not in graph


def migrate_target(target_json: Any) -> tuple[Any, list[str]]:
    """A record's target (a dict of options) without the options the pinned TVM's target kind
    no longer knows (``link-params``, ``system-lib``, ...), and the options dropped.

    Raises
    ------
    MigrationError
        If the target is not a dict naming a target kind the pinned TVM has.
    """
    if not isinstance(target_json, dict) or not isinstance(target_json.get("kind"), str):
        raise MigrationError(f"target {str(target_json)[:80]} is not a dict with a kind")
    try:
        known = target_kind_options(target_json["kind"])
    except Exception:
        raise MigrationError(
            f"target kind {target_json['kind']!r} is unknown to the pinned TVM"
        ) from None
    out, dropped = {}, []
    for key, value in target_json.items():
        if key not in known:
            dropped.append(f"target option {key}")
        elif key == "host" and isinstance(value, dict):
            out[key], more = migrate_target(value)
            dropped += [f"host {d}" for d in more]
        else:
            out[key] = value
    return out, dropped


def migrate_script(script: str) -> tuple[str, list[str]]:
    """Old TVMScript (``tir``, ``T.block``) as the pinned TVM's, and the renames applied."""
    renames: list[str] = []
    for pattern, replacement, what in SCRIPT_RENAMES:
        script, count = re.subn(pattern, replacement, script)
        if count and what not in renames:
            renames.append(what)
    return script, renames
