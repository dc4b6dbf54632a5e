"""A device refuses a spec whose stated epsilon is below what its parameters spend, and a
spec whose budget per coordinate is above what its kind's sampler honours exactly."""

import dataclasses

import numpy as np
import pytest

from skldp.device import Device, SpecError, read_spec
from skldp.mechanisms import EdgeRR, LabelRandomizedResponse, LaplaceMechanism
from skldp.population import collection_spec


def _forge(spec, params=None, **changes):
    """The spec with ``changes`` (and ``params`` merged into its params), under the id its
    new content gives (an id is a digest anyone can recompute)."""
    if params is not None:
        changes["params"] = {**spec.params, **params}
    s = dataclasses.replace(spec, **changes)
    return dataclasses.replace(s, id=s.content_id()).to_dict()


def test_laplace_spec_stating_the_budget_of_one_feature_is_refused():
    # eps is split over the d features: a user spends eps in all, not eps / d
    spec = collection_spec(LaplaceMechanism(2.0, feature_range=(0, 1)), n_features=4)
    assert spec.epsilon == pytest.approx(2.0)
    read_spec(_forge(spec, epsilon=2.0))
    with pytest.raises(SpecError, match="parameters spend 2 per user"):
        read_spec(_forge(spec, epsilon=0.5))
    with pytest.raises(SpecError, match="parameters spend 2 per user"):
        Device("u").answer(_forge(spec, epsilon=0.5), np.zeros(4))


def test_a_label_budget_above_the_sampler_limit_is_refused():
    spec = collection_spec(LabelRandomizedResponse(1.0, classes=[0, 1, 2]))
    read_spec(_forge(spec, params={"eps": 50.0}, epsilon=50.0))      # the limit: fine
    with pytest.raises(SpecError, match="above 50"):
        read_spec(_forge(spec, params={"eps": 60.0}, epsilon=60.0))


def test_an_edge_budget_above_twenty_is_refused():
    spec = collection_spec(EdgeRR(1.0), node_ids=np.arange(5))
    read_spec(_forge(spec, params={"eps": 20.0}, epsilon=20.0))
    with pytest.raises(SpecError, match="above 20"):
        read_spec(_forge(spec, params={"eps": 30.0}, epsilon=30.0))


def test_the_grr_set_oracle_takes_items_below_the_domain_limit_only():
    # GRR draws "another value" uniformly only up to 2^24 values (the items and the padding
    # item): a spec naming more items is refused; the OUE oracle takes them
    from skldp.device import plan
    from skldp.device._kinds import MAX_DOMAIN_SIZE
    from skldp.mechanisms import SetValuedMechanism
    spec = collection_spec(SetValuedMechanism(1.0, ell=1, oracle="grr"), n_features=5)

    def items(n, oracle="grr"):
        return _forge(spec, params={"oracle": oracle},
                      public_state={**spec.public_state, "n_features": n, "oracle": oracle})
    assert plan(read_spec(items(MAX_DOMAIN_SIZE - 1))).d == MAX_DOMAIN_SIZE - 1
    with pytest.raises(SpecError, match="GRR oracle takes at most"):
        read_spec(items(MAX_DOMAIN_SIZE))
    assert plan(read_spec(items(MAX_DOMAIN_SIZE, "oue"))).d == MAX_DOMAIN_SIZE
