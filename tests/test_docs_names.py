"""The names the README and ``docs/`` mention exist.

In code (fenced blocks and inline spans) of every page:

* each dotted ``msviz.NAME...`` (``msviz.open``, ``msviz.Session.start``, a module path such as
  ``msviz.records.row``; call parentheses stripped) resolves by import and ``getattr``;
* each ``session.NAME``, ``run.NAME`` and ``trial.NAME`` (the docs' names for a
  :class:`msviz.Session`, :class:`msviz.Run` and :class:`msviz.Trial`) is an attribute, property
  or field of that class;
* each ``msviz SUBCOMMAND`` (``msviz demo``, ``.venv/bin/msviz tune ...``) is a subcommand of
  the real parser, :func:`msviz.cli.build_parser`.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[^\n]*$", flags=re.S | re.M)
INLINE = re.compile(r"`([^`]+)`")
#: A dotted name from msviz: not inside a path or a longer name (``work_dir/msviz.lock``).
DOTTED = re.compile(r"(?<![\w./-])msviz((?:\.[A-Za-z_]\w*)+)")
#: ``from msviz.trace import diff, rows as r``: each imported name is checked as dotted.
FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+(msviz(?:\.\w+)*)[ \t]+import[ \t]+\(?([\w, \t]+)",
                         flags=re.M)
#: The names the docs give instances, and their classes.
INSTANCES = {"session": "msviz.Session", "run": "msviz.Run", "trial": "msviz.Trial"}
INSTANCE = re.compile(r"(?<![\w./-])(" + "|".join(INSTANCES) + r")\.([A-Za-z_]\w*)")
#: ``run.zip``, ``session.json``: file names, not attributes.
FILE_SUFFIXES = {"zip", "html", "csv", "parquet", "json", "jsonl", "py", "md", "onnx", "txt"}
#: A command line's ``msviz SUBCOMMAND``: at the start of a line or a span (after a ``$``
#: prompt), after a path (``.venv/bin/msviz demo``), ``&&`` or ``;``; not ``import msviz``,
#: ``msviz[parquet]``, a flag's value (``--configs msviz stock``) or a placeholder
#: (``msviz COMMAND --help``).
COMMAND = re.compile(r"(?:^[ \t]*(?:\$[ \t]+)?|(?<=/)|(?<=&&[ \t])|(?<=;[ \t]))"
                     r"msviz[ \t]+([a-z][\w-]*)", flags=re.M)
#: ``self.NAME =`` (or ``self.NAME: T =``) in a class's source: an instance attribute.
SELF_ASSIGN = re.compile(r"\bself\.([A-Za-z_]\w*)\s*(?::[^=\n]+)?=(?!=)")


def code_spans(text: str) -> list[tuple[str, str]]:
    """(kind, code) of each fenced block (kind: its info string's first word, or ``""``) and
    each inline code span (kind ``"inline"``) of a Markdown page, fences first."""
    spans = [(info.split()[0] if info.split() else "", code) for info, code in FENCE.findall(text)]
    prose = FENCE.sub("", text)
    for paragraph in re.split(r"\n\s*\n", prose):  # an inline span never crosses a paragraph
        spans += [("inline", code) for code in INLINE.findall(paragraph)]
    return spans


def _instance_attributes(cls: type) -> set[str]:
    """The attributes instances of ``cls`` get: dataclass fields, annotations and what its
    methods (or its bases' in msviz) assign to ``self``."""
    names = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    for base in cls.__mro__:
        names.update(getattr(base, "__annotations__", {}))
        if base.__module__.split(".")[0] == "msviz":
            try:
                names.update(SELF_ASSIGN.findall(inspect.getsource(base)))
            except (OSError, TypeError):
                pass
    return names


def _has_attribute(obj: Any, name: str) -> bool:
    """``name`` is an attribute of ``obj``; for a class, also one its instances get."""
    return hasattr(obj, name) or (isinstance(obj, type) and name in _instance_attributes(obj))


def resolve(dotted: str) -> str | None:
    """None when ``dotted`` (``msviz.records.row.STATUSES``) names something: each part an
    attribute of the one before, or a submodule of it; else what is missing."""
    parts = dotted.split(".")
    try:
        obj: Any = importlib.import_module(parts[0])
    except Exception as err:  # a broken package is a finding, not a crash
        return f"{dotted}: import {parts[0]} failed: {err!r}"
    for i, part in enumerate(parts[1:], start=1):
        here = ".".join(parts[:i + 1])
        if _has_attribute(obj, part):
            obj = getattr(obj, part, None)
            continue
        if getattr(obj, "__path__", None) is not None:  # a package: maybe a submodule
            try:
                obj = importlib.import_module(here)
                continue
            except ModuleNotFoundError as err:
                if err.name != here:
                    return f"{dotted}: importing {here} failed: {err!r}"
            except Exception as err:
                return f"{dotted}: importing {here} failed: {err!r}"
        return f"{dotted}: {'.'.join(parts[:i])} has no {part!r}"
    return None


def mentioned_names(text: str) -> list[str]:
    """Every dotted ``msviz.`` name, and every ``session.`` / ``run.`` / ``trial.`` attribute
    as its class's dotted name, that the page's code mentions, in order, once each."""
    names: list[str] = []
    for kind, code in code_spans(text):
        names += ["msviz" + tail for tail in DOTTED.findall(code)]
        for module, imported in FROM_IMPORT.findall(code):
            names += [f"{module}.{n.split()[0]}" for n in imported.split(",") if n.strip()]
        if kind in ("python", "inline"):
            names += [f"{INSTANCES[var]}.{attr}" for var, attr in INSTANCE.findall(code)
                      if attr not in FILE_SUFFIXES]
    return list(dict.fromkeys(names))


def unresolved(text: str) -> list[str]:
    """What is wrong with each name :func:`mentioned_names` finds (empty: all exist)."""
    return [problem for name in mentioned_names(text) if (problem := resolve(name))]


def subcommands() -> set[str]:
    """The subcommands of the real ``msviz`` parser."""
    from msviz.cli import build_parser

    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    raise AssertionError("the msviz parser has no subcommands")


def mentioned_commands(text: str) -> list[str]:
    """Every ``msviz SUBCOMMAND`` the page's code mentions, in order, once each."""
    found: list[str] = []
    for _, code in code_spans(text):
        found += COMMAND.findall(code)
    return list(dict.fromkeys(found))


def unknown_commands(text: str, known: set[str]) -> list[str]:
    return [c for c in mentioned_commands(text) if c not in known]


SAMPLE = """# A page

```python
import msviz

run = msviz.open("wd")
msviz.no_such_thing(run)
msviz.records.row.STATUSES
from msviz.records.row import STATUSES, no_such_column as c
session.start()
session.no_such_method()
```

Prose with `msviz.Session.start` and `.venv/bin/msviz demo`, a file `run.zip` and a
path `work_dir/msviz.lock`.

```bash
msviz show WORK_DIR      # fine
msviz frobnicate WORK_DIR
msviz COMMAND --help
pip install msviz[parquet]
```
"""


def test_the_sample_names_and_commands_are_found() -> None:
    assert mentioned_names(SAMPLE) == [
        "msviz.open", "msviz.no_such_thing", "msviz.records.row.STATUSES", "msviz.records.row",
        "msviz.records.row.no_such_column", "msviz.Session.start", "msviz.Session.no_such_method"]
    assert mentioned_commands(SAMPLE) == ["show", "frobnicate", "demo"]


def test_made_up_names_and_commands_are_reported() -> None:
    problems = unresolved(SAMPLE)
    assert [p.split(":")[0] for p in problems] == [
        "msviz.no_such_thing", "msviz.records.row.no_such_column",
        "msviz.Session.no_such_method"], problems
    assert resolve("msviz.no_such_thing") is not None
    assert resolve("msviz.records.no_such_module") is not None
    assert unknown_commands(SAMPLE, subcommands()) == ["frobnicate"]


def test_the_parser_has_the_commands_the_readme_runs() -> None:
    assert {"demo", "tune", "show", "report", "export", "merge", "bundle"} <= subcommands()


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_names_exist(page: Path) -> None:
    assert unresolved(page.read_text()) == []


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_commands_exist(page: Path) -> None:
    assert unknown_commands(page.read_text(), subcommands()) == []
