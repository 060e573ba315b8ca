"""Traces and decisions as data: rows, decision sites, edit + replay, diffs, generated code."""
