"""A session's control: the state machine and command queue, checkpoints between stages, the
wait for RPC devices, and the live trials table fed by the session's events."""

from msviz.engine.control.devices import await_devices
from msviz.engine.control.live_trials import LiveTrials
from msviz.engine.control.state import (
    ENDED,
    STATES,
    STEPS,
    Control,
    SessionStateError,
    StopRequested,
    done,
)

__all__ = [
    "ENDED",
    "STATES",
    "STEPS",
    "Control",
    "LiveTrials",
    "SessionStateError",
    "StopRequested",
    "await_devices",
    "done",
]
