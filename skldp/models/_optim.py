"""Moved to :mod:`skldp._torch._optim`; re-exported here for code that imports the old path."""

from .._torch._optim import SGD, Adam, _fused_devices  # noqa: F401
