"""The measuring service (``service.MeasuringService``, owner of the process-wide
``MEASURING_LOCK``; ``requests``: checks, profiles, model comparisons, forced schedules) and what
it stands on: builders and runners by name (``create``), the watchdog around them, RPC fleets,
the measure callbacks (database, cost model), result checks and re-measurement.

``msviz.rpc`` (the function) is :func:`msviz.engine.measure.rpc.rpc`; the name ``rpc`` here is
the module.
"""

from msviz.engine.measure.results import (
    ERROR_KINDS,
    UNMEASURED_KINDS,
    BuildOutcome,
    MeasureResult,
    is_infra_error,
)
from msviz.engine.measure.rpc import NoDevicesError, RPCSpec, TrackerError
from msviz.engine.measure.service import MEASURING_LOCK, MeasuringService

__all__ = [
    "ERROR_KINDS",
    "MEASURING_LOCK",
    "UNMEASURED_KINDS",
    "BuildOutcome",
    "MeasureResult",
    "MeasuringService",
    "NoDevicesError",
    "RPCSpec",
    "TrackerError",
    "is_infra_error",
]
