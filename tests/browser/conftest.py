"""The browser tier's one JupyterLab server, shared by every test that opens a notebook.

Starting JupyterLab takes seconds to minutes on a loaded host; one server for the session
spares that per test. Tests stay independent: each writes its notebook in its own ``tmp_path``
(under the server's root, pytest's base temp dir), opens it in a workspace and a Chromium of its
own, runs it in a kernel of its own, which is shut down when the test ends
(:func:`tests.browser.jupyterlab.lab_notebook`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser.jupyterlab import LabServer


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """The JupyterLab server serving pytest's base temp dir; stopped (with every kernel it
    started) when the session ends, whether the tests passed or not."""
    root = tmp_path_factory.getbasetemp()
    # a hidden folder: the server's config and log, which it does not serve
    server = LabServer(root, root / ".jupyterlab").start()
    try:
        yield server
    finally:
        server.stop()
