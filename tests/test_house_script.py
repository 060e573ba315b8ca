"""``scripts/house.py`` draws the house from the layer rules: every room on a floor above every
room it may import, and its printout names each room once with its module count."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import test_layers as layers

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "house.py"


def _house():
    spec = importlib.util.spec_from_file_location("house", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_floors_put_each_room_above_what_it_imports() -> None:
    floors = _house().floors()
    floor_of = {room: k for k, rooms in enumerate(floors) for room in rooms}
    assert set(floor_of) == set(layers.MAY_IMPORT)
    low = [(room, other) for room, others in layers.MAY_IMPORT.items() for other in others
           if other != room and floor_of[other] >= floor_of[room]]
    assert low == []
    assert floors[0] == ["errors", "version"]


def test_the_picture_names_each_room_with_its_modules() -> None:
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    counts = {}
    for name in layers.modules():
        counts[layers.part_of(name)] = counts.get(layers.part_of(name), 0) + 1
    for room, n in counts.items():
        label = ("msviz/__init__.py" if not room else f"msviz/{room}/"
                 if (layers.ROOT / room).is_dir() else f"msviz/{room}.py")
        rows = [line for line in out.splitlines() if line.split()[:1] == [label]]
        assert len(rows) == 1, (label, out)
        assert rows[0].split()[1] == str(n)
    assert "rooms importing tvm: compat, models" in out
