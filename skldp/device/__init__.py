"""The device encoder: what runs on a user's device (numpy and the standard library only).

Local DP exists so that raw data never leaves the user's device. A server
publishes a collection's public spec (:class:`CollectionSpec`, a versioned JSON
document); each :class:`Device` reads it (:func:`read_spec` validates it against
the registry of mechanism kinds, :data:`KINDS`), turns its user's raw row, label
or adjacency list into a report with its own secret randomness, sends the report
and remembers it, so that it answers each collection once. :func:`encode` is the
same computation with a given seed and key (the test vectors in
``skldp/device/vectors`` fix them); the server's simulated mechanisms call the
same functions.

Importing this package imports numpy only (not scikit-learn, scipy or torch).
Read more in the User Guide ("Deploying local DP").
"""

from ._device import AlreadyAnswered, Device, DeviceStateError, Directory, encode
from ._kinds import KINDS, ReportError, plan
from ._spec import SPEC_VERSION, CollectionSpec, SpecError, read_spec

__all__ = ["AlreadyAnswered", "CollectionSpec", "Device", "DeviceStateError", "Directory", "KINDS",
           "ReportError", "SPEC_VERSION", "SpecError", "encode", "plan", "read_spec"]
