"""The device package's errors (a module of its own: every other module may import it)."""

__all__ = ["SpecError", "DeviceStateError"]


class SpecError(ValueError):
    """A collection spec that cannot be read: wrong version, unknown kind, missing bound."""


class DeviceStateError(RuntimeError):
    """A device's state file that cannot be read: not JSON, or not the structure a
    :class:`~skldp.device.Device` writes (corrupted, truncated, or another user's).

    The device refuses to answer rather than start afresh: the answers the file held
    were sent, and answering those collections again would spend their budget again.
    Restore the file from a backup (see the User Guide, "Deploying local DP").
    """
