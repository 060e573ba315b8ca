"""The README's RPC example runs as written: ``msviz.rpc`` is exported (msviz/__init__.py)."""

from __future__ import annotations

import re
from pathlib import Path

import msviz
from msviz.engine.measure.rpc import RPCSpec

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_rpc_example_makes_a_session() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    (example,) = [b for b in blocks if "msviz.rpc(" in b]
    namespace: dict = {"msviz": msviz}
    exec(example, namespace)  # builds the session; nothing connects before start()
    session = namespace["session"]
    assert isinstance(session, msviz.Session) and session.state == "idle"
    assert session.fleet == msviz.rpc("127.0.0.1:9190", key="cpu-fleet", session_timeout=30,
                                      wait_timeout=600)
    assert isinstance(session.fleet, RPCSpec) and "rpc" in msviz.__all__
