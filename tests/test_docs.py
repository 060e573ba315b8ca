"""The pages of ``docs/`` run as written: each page's ```python blocks, in order, in one fresh
interpreter per page (as a reader pastes them into a notebook), in an empty directory; the
README's quick start (its first ```python block) runs as written too; and the README, at most
:data:`README_MAX_LINES` lines, links every page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
#: The README is read in two minutes: what msviz is, install, one example, two commands, links.
README_MAX_LINES = 110


def python_blocks(text: str) -> list[str]:
    """The code of each fenced block whose info string starts with ``python``, in order."""
    return re.findall(r"^```python[^\n]*\n(.*?)^```", text, flags=re.S | re.M)


def test_python_blocks_reads_only_python_fences() -> None:
    text = ("# Page\n```python\nx = 1\n```\nprose\n```bash\nmsviz show wd\n```\n"
            "```\nplain\n```\n```python\ny = x + 1\nprint(y)\n```\n")
    assert python_blocks(text) == ["x = 1\n", "y = x + 1\nprint(y)\n"]


def test_docs_has_its_pages_and_the_readme_links_each() -> None:
    names = {p.name for p in DOCS}
    assert {"measuring.md", "models.md", "results.md", "importance.md", "performance.md",
            "architecture.md", "guide.md", "cli.md", "benchmarks.md"} <= names
    readme = (ROOT / "README.md").read_text()
    assert [n for n in sorted(names) if f"](docs/{n})" not in readme] == []
    assert len(readme.splitlines()) <= README_MAX_LINES


def test_readme_keeps_the_two_commands_and_the_screenshot() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/setup.sh && .venv/bin/msviz demo" in readme
    assert "bash scripts/test.sh" in readme
    assert "](docs/dashboard.png)" in readme and (ROOT / "docs" / "dashboard.png").is_file()
    assert python_blocks(readme), "the README has no python example"


def test_benchmarks_page_lists_every_script() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))
    assert [s for s in scripts if f"`{s}`" not in page] == []


def run_script(script: str, cwd: Path) -> subprocess.CompletedProcess:
    """``script`` in a fresh interpreter in ``cwd``, with this checkout first on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_readme_example_runs(tmp_path: Path) -> None:
    """The README's first ```python block (the quick start), as written, in an empty dir."""
    example = python_blocks((ROOT / "README.md").read_text())[0]
    done = run_script(example, tmp_path)
    assert done.returncode == 0, f"README.md:\n{done.stderr[-4000:]}"
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("page", DOCS, ids=[p.stem for p in DOCS])
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    blocks = python_blocks(page.read_text())
    assert blocks, f"{page.name} has no python example"
    script = "".join(f"# --- {page.name}, example {i + 1}\n{b}\n" for i, b in enumerate(blocks))
    done = run_script(script, tmp_path)
    assert done.returncode == 0, f"{page.name}:\n{done.stderr[-4000:]}"
    # a worker thread's exception does not end the script: its traceback would be printed
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
