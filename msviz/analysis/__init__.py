"""Computations that are neither reading data nor drawing it (decision importance, space
restrictions, why a transformation never appears): below both the engine and the views, which
call them."""
