"""What measuring a candidate gives: its build and its run, and which failures are the
candidate's own and which are the infrastructure's."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BUILDER_INFRA",
    "ERROR_KINDS",
    "UNMEASURED_KINDS",
    "BuildOutcome",
    "MeasureResult",
    "is_infra_build_error",
    "is_infra_error",
]


#: Error kinds of a :class:`MeasureResult`: the candidate failed to build, failed (or timed
#: out) when run, or could not be measured for reasons outside it ("infra": a watchdog
#: timeout, no CUDA device, a builder or runner that raised or lost the batch, an RPC error),
#: or its RPC server died or left the fleet while it was measured ("device_lost").
ERROR_KINDS = ("build", "run", "infra", "device_lost")

#: Error kinds that say nothing about the candidate: stored and shown, never counted toward
#: ``max_trials``, never trained into the cost model, and offered again later.
UNMEASURED_KINDS = ("infra", "device_lost")

#: Error texts of a runner that failed around the candidate rather than in it.
_INFRA_MARKERS = (
    "RPCSessionTimeoutError",
    "RPCError",
    "Connection refused",
    "Connection reset",
    "Broken pipe",
    "tracker",
    "no CUDA device",
    "CUDA_ERROR_NO_DEVICE",
    "no CUDA-capable device",
)


def is_infra_error(text: str | None) -> bool:
    """True when a runner's error text says the infrastructure failed, not the candidate."""
    return text is not None and any(m in text for m in _INFRA_MARKERS)


#: What a builder writes on the first line of a candidate's error when the build did not happen
#: through no fault of the candidate (its worker died, its machine left the cluster, the worker
#: could not run the build), e.g. ``"RayBuilder: infrastructure error (WorkerCrashedError): ..."``.
BUILDER_INFRA = "Builder: infrastructure error"


def is_infra_build_error(text: str | None) -> bool:
    """True when a builder's error text says the infrastructure failed, not the candidate
    (only the first line counts: a candidate's own error text comes after it)."""
    return text is not None and BUILDER_INFRA in text.split("\n", 1)[0]


@dataclass(frozen=True)
class BuildOutcome:
    """One candidate's build: the artifact path, or the builder's error text.

    ``infra`` is True when the builder itself failed (watchdog, exception, a lost worker:
    :func:`is_infra_build_error`), not the candidate.
    """

    artifact: str | None
    error: str | None
    infra: bool = False


@dataclass(frozen=True)
class MeasureResult:
    """One candidate's measurement: ``run_secs``, or an error and where it happened."""

    run_secs: tuple[float, ...] | None
    error: str | None
    error_kind: str | None  # one of ERROR_KINDS, or None
    device: str | None = None  # the RPC server that measured it ("host:port"), if known

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.run_secs)
