"""Traces and decisions as data: rows, decision sites, edit + replay, diffs, generated code."""

from msviz.trace.carry import Carry, carry_trace, nearest_choice
from msviz.trace.code import compile_cuda, generated_source, lowered_tir, tvmscript
from msviz.trace.diff import script_diff, side_by_side_html, trace_diff
from msviz.trace.replay import Replay, default_postprocs, with_decisions
from msviz.trace.rows import ROW_COLUMNS, rv_names, trace_python, trace_rows
from msviz.trace.sampling import perfect_tiles
from msviz.trace.sites import (
    DecisionSite,
    decision_sites,
    design_space_sizes,
    sites_frame,
    space_size,
)
from msviz.trace.source import target_of
from msviz.trace.vocabulary import GLOSSARY, explain, glossary, registered_kinds

__all__ = [
    "GLOSSARY",
    "ROW_COLUMNS",
    "Carry",
    "DecisionSite",
    "Replay",
    "carry_trace",
    "compile_cuda",
    "decision_sites",
    "default_postprocs",
    "design_space_sizes",
    "explain",
    "generated_source",
    "glossary",
    "lowered_tir",
    "nearest_choice",
    "perfect_tiles",
    "registered_kinds",
    "rv_names",
    "script_diff",
    "side_by_side_html",
    "sites_frame",
    "space_size",
    "target_of",
    "trace_diff",
    "trace_python",
    "trace_rows",
    "tvmscript",
    "with_decisions",
]
