"""The pages of ``docs/`` run as written: each page's ```python blocks, in order, in one fresh
interpreter per page (as a reader pastes them into a notebook), in an empty directory; and the
README links every page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))


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
            "architecture.md"} <= names
    readme = (ROOT / "README.md").read_text()
    assert [n for n in sorted(names) if f"](docs/{n})" not in readme] == []
    assert len(readme.splitlines()) <= 220


@pytest.mark.slow
@pytest.mark.parametrize("page", DOCS, ids=[p.stem for p in DOCS])
def test_page_examples_run(page: Path, tmp_path: Path) -> None:
    blocks = python_blocks(page.read_text())
    assert blocks, f"{page.name} has no python example"
    script = "".join(f"# --- {page.name}, example {i + 1}\n{b}\n" for i, b in enumerate(blocks))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{page.name}:\n{done.stderr[-4000:]}"
    # a worker thread's exception does not end the script: its traceback would be printed
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
