"""Analyses of a workload's schedules: why a transformation never appears."""
