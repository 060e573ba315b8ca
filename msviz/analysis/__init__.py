"""Computations on records that are neither reading data nor drawing it (decision importance,
space restrictions, ...): below both the engine and the views, which call them."""
