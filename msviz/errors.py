"""The exceptions and warnings msviz raises, in one place so users can catch them by name."""

from __future__ import annotations


class MsvizError(Exception):
    """Base class of every error msviz raises on purpose."""


class WorkDirError(MsvizError, FileNotFoundError):
    """A path is not a MetaSchedule work dir (or one of its files cannot be read)."""


class WorkloadError(MsvizError, ValueError):
    """A workload name, size index or object that msviz cannot turn into an IRModule."""


class TargetError(MsvizError, ValueError):
    """A target msviz cannot tune for as given (e.g. an ``mcpu`` LLVM does not know)."""


class DecisionError(MsvizError, ValueError):
    """An edited decision that is not valid for its sampling instruction."""


class ReplayError(MsvizError, RuntimeError):
    """A stored trial (or record) whose replay cannot give its stored module here: the message
    names the trial's target and why (a tensor intrinsic this TVM has not registered, or
    postprocessors other than those it was made with)."""


class MsvizWarning(UserWarning):
    """Something was skipped or repaired while reading; the rest is usable."""


class MissingExtraError(MsvizError, ImportError):
    """An optional feature whose extra is not installed (the message names the ``pip`` line)."""


class RayClusterError(MsvizError, ConnectionError):
    """A Ray cluster could not be started or reached (the message names its address)."""


class BundleError(WorkDirError):
    """A run bundle (``msviz bundle``'s zip) that cannot be written or read: a path that is not
    a bundle, a corrupt archive, or one written by a newer msviz."""


class WriteError(MsvizError, OSError):
    """A file or work dir msviz was asked to write cannot be written (the message names it);
    nothing half-written is left behind."""
