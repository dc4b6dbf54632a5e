"""A central-DP training's public spec, for tests that charge trainings by hand."""

import uuid

from skldp.population import CollectionSpec


def central_spec(eps, n_train):
    """A DP-GCN training of ``n_train`` nodes at ``(eps, 1e-6)``; a fresh nonce per
    training (a new id), as every training gets."""
    spec = CollectionSpec(id="", kind="skldp.central.DPGCN",
                          protects=("features", "labels", "edges"), epsilon=eps,
                          delta=1e-6, model="central", params={},
                          public_state={"n_train": n_train})
    return spec.with_nonce(uuid.uuid4().hex[:16])
