"""The device package's errors, and what a spec's number is (a module of its own: every
other module may import it)."""

import numpy as np

__all__ = ["SpecError", "DeviceStateError"]


class SpecError(ValueError):
    """A collection spec that cannot be read: wrong version, unknown kind, missing bound."""


class DeviceStateError(RuntimeError):
    """A device's state file that cannot be read: not JSON, or not the structure a
    :class:`~skldp.device.Device` writes (corrupted, truncated, or another user's), or one
    that holds another answer to a collection than the ``Device`` object reading it sent.

    The device refuses to answer rather than start afresh: the answers the file held
    were sent, and answering those collections again would spend their budget again.
    Restore the file from a copy taken after the device's last answer (see the User
    Guide, "Deploying local DP").
    """


def spec_number(v):
    """``v`` as a float if it is a number as a spec writes one, else None: a JSON number
    (not true or false), or the text ``"inf"``, ``"-inf"`` or ``"nan"`` that stands for a
    number JSON cannot hold. Other text ("2", " 2_0 ", which Python reads as 20) is no
    number, whatever ``float`` makes of it."""
    if isinstance(v, str):
        return float(v) if v in ("inf", "-inf", "nan") else None
    # (numpy's real scalars too: a spec given as a dict may hold them)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                            np.floating)):
        return None
    try:
        return float(v)
    except OverflowError:   # an integer past float's range
        return None
