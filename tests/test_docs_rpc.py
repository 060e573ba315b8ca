"""docs/measuring.md's RPC example makes the session it says: ``msviz.rpc`` is exported
(msviz/__init__.py)."""

from __future__ import annotations

import re
from pathlib import Path

import msviz
from msviz.engine.measure.rpc import RPCSpec

PAGE = Path(__file__).resolve().parents[1] / "docs" / "measuring.md"


def test_docs_rpc_example_makes_a_session() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    (example,) = [b for b in blocks if "msviz.rpc(\"127.0.0.1" in b]
    namespace: dict = {"msviz": msviz}
    exec(example, namespace)  # builds the session; nothing connects before start()
    session = namespace["session"]
    assert isinstance(session, msviz.Session) and session.state == "idle"
    assert session.fleet == msviz.rpc("127.0.0.1:9190", key="cpu-fleet", session_timeout=30,
                                      wait_timeout=600)
    assert isinstance(session.fleet, RPCSpec) and "rpc" in msviz.__all__
