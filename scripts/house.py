"""The house of msviz in one picture: its rooms (top-level parts) by floor, each with its
modules, lines and the rooms it imports; the floors are the layer rules of tests/test_layers.py
(a room imports only rooms on lower floors, or its own).

    .venv/bin/python scripts/house.py            # the picture
    .venv/bin/python scripts/house.py --edges    # and every import between two rooms, counted
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import test_layers as layers  # noqa: E402 (the rules and the import reader live there)


def floors() -> list[list[str]]:
    """The rooms by floor: floor 0 imports nothing, floor k only rooms below k."""
    rules = {room: set(others) for room, others in layers.MAY_IMPORT.items()}
    placed: dict[str, int] = {}
    while len(placed) < len(rules):
        for room, others in rules.items():
            if room not in placed and all(o in placed for o in others - {room}):
                placed[room] = 1 + max((placed[o] for o in others - {room}), default=-1)
    out: list[list[str]] = [[] for _ in range(max(placed.values()) + 1)]
    for room, floor in placed.items():
        out[floor].append(room)
    return [sorted(f) for f in out]


def first_line(path: Path) -> str:
    import ast

    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    return doc.split("\n\n")[0].replace("\n", " ")


def inner_rooms(room: str, inside: list[Path]) -> dict[str, tuple[int, int]]:
    """A room's sub-packages (and its own top modules, by name) -> (modules, lines)."""
    out: dict[str, tuple[int, int]] = {}
    for path in inside:
        rel = path.relative_to(layers.ROOT / room)
        key = f"{room}/{rel.parts[0]}/" if len(rel.parts) > 1 else f"{room}/{rel.name}"
        n, lines = out.get(key, (0, 0))
        out[key] = (n + 1, lines + len(path.read_text().splitlines()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", action="store_true", help="list imports between rooms")
    args = parser.parse_args()
    mods = layers.modules()
    imports = layers.all_imports()
    edges = Counter((layers.part_of(i.source), layers.part_of(i.target)) for i in imports
                    if layers.part_of(i.source) != layers.part_of(i.target))
    # a child script (run in a fresh process, importing no msviz) is named apart
    tvm = sorted({layers.part_of(n) for n, p in mods.items()
                  if n not in layers.CHILD_SCRIPTS and any(
                      m.split(".")[0] in ("tvm", "tvm_ffi")
                      for m, _, _ in layers._third_party_imports(p))})
    total = 0
    for k, rooms in reversed(list(enumerate(floors()))):
        print(f"floor {k}")
        for room in rooms:
            inside = [p for n, p in mods.items() if layers.part_of(n) == room]
            lines = sum(len(p.read_text().splitlines()) for p in inside)
            total += lines
            uses = sorted({b for (a, b) in edges if a == room})
            label = ("msviz/__init__.py" if not room else f"msviz/{room}/"
                     if (layers.ROOT / room).is_dir() else f"msviz/{room}.py")
            doc = first_line(layers.ROOT / room / "__init__.py") if (
                layers.ROOT / room / "__init__.py").is_file() else first_line(inside[0])
            print(f"  {label:<26} {len(inside):>3} modules {lines:>6} lines"
                  f"  imports: {', '.join(u or 'root' for u in uses) or '-'}")
            print(f"      {doc[:150]}")
            if room == "engine":  # the engine's own rooms: what it holds, line by line
                for sub, (n, subl) in sorted(inner_rooms(room, inside).items()):
                    print(f"      {sub:<30} {n:>3} modules {subl:>6} lines")
    print(f"{len(mods)} modules, {total} lines, {sum(edges.values())} imports between rooms; "
          f"rooms importing tvm: {', '.join(tvm)} (and the child scripts "
          f"{', '.join(sorted(layers.CHILD_SCRIPTS))})")
    if args.edges:
        for (a, b), n in sorted(edges.items()):
            print(f"  {a or 'root'} -> {b or 'root'}: {n}")


if __name__ == "__main__":
    main()
