"""A GraphData with 0 feature columns: graph-only steps take it, feature mechanisms refuse
it early with a clear message (they failed with a ZeroDivisionError, "k must be in 1..0"
or "the budget of a report must be > 0", after charging a read of the bounds)."""

import numpy as np
import pytest
import scipy.sparse as sp

from skldp import GraphData
from skldp.baselines import LabelPropagationClassifier, StructuralFeatures
from skldp.mechanisms import (
    EdgeRR,
    HDSMechanism,
    LaplaceMechanism,
    MultiBitMechanism,
    OneBitMechanism,
    PiecewiseMechanism,
)
from skldp.propagation import KProp
from skldp.utils.validation import check_graph_data


def _featureless(n=40):
    rng = np.random.default_rng(0)
    A = np.triu(rng.random((n, n)) < 0.2, 1)
    return GraphData(np.zeros((n, 0)), sp.csr_matrix((A | A.T).astype(float))), np.arange(n) % 2


@pytest.mark.parametrize("make", [LaplaceMechanism, MultiBitMechanism, OneBitMechanism,
                                  PiecewiseMechanism, HDSMechanism])
@pytest.mark.parametrize("bounds", [(0, 1), None])
@pytest.mark.filterwarnings("ignore::skldp.exceptions.PrivacyLeakWarning")
def test_feature_mechanisms_refuse_zero_columns_before_anything(make, bounds):
    G, _ = _featureless()
    with pytest.raises(ValueError, match=rf"{make.__name__} reads the node features, but this "
                                         r"data has 0 feature columns \(shape \(40, 0\)\)"):
        make(eps=1.0, feature_range=bounds, random_state=0).fit(G)
    assert G.ledger.local_epsilon == 0   # no bounds read from the data


def test_graph_only_steps_take_a_featureless_graph():
    G, y = _featureless()
    assert StructuralFeatures(random_state=0).fit(G[:20]).transform(G[20:]).shape[0] == 20
    assert EdgeRR(eps=2.0, random_state=0).fit_transform(G).shape == (40, 0)
    assert KProp(steps=1).fit_transform(G).shape == (40, 0)
    assert LabelPropagationClassifier().fit(G[:20], y[:20]).predict(G[20:]).shape == (20,)


def test_check_graph_data_can_require_features():
    G, _ = _featureless()
    assert check_graph_data(G, require_adjacency=True) is G
    with pytest.raises(ValueError, match="MyModel reads the node features, but this data has "
                                         "0 feature columns.*StructuralFeatures"):
        check_graph_data(G, type("MyModel", (), {})(), require_features=True)
    H = G.with_features(np.ones((40, 1)))
    assert check_graph_data(H, require_features=True) is H


@pytest.mark.parametrize("name", ["GCNClassifier", "LPGNNClassifier", "RGNNClassifier",
                                  "SolitudeClassifier", "MLPHead"])
def test_feature_models_refuse_zero_columns_before_reading(name):
    import skldp.models
    G, y = _featureless()
    model = getattr(skldp.models, name)()
    with pytest.raises(ValueError, match=f"{name} reads the node features, but this data has "
                                         "0 feature columns"):
        model.fit(G[:20], y[:20])   # (MLPHead said "0 feature(s) (shape=(13, 0))")
    assert G.ledger.local_epsilon == 0   # nothing read, no label collected


@pytest.mark.parametrize("make", ["SetValuedMechanism", "GRRFSMechanism"])
def test_discrete_feature_mechanisms_refuse_zero_columns_before_charging(make):
    import skldp.mechanisms
    G, _ = _featureless()
    with pytest.raises(ValueError, match=f"{make} reads the node features, but this data "
                                         "has 0 feature columns"):
        getattr(skldp.mechanisms, make)(eps=1.0, random_state=0).fit(G)
    assert G.ledger.local_epsilon == 0


@pytest.mark.parametrize("name", ["HadamardLinkPredictor", "VGAELinkPredictor"])
def test_link_predictors_refuse_zero_columns_before_reading(name):
    import skldp.models
    from skldp.model_selection import PairData
    G, _ = _featureless()
    P = PairData(G, [[0, 1], [2, 3], [4, 5], [6, 7]])
    with pytest.raises(ValueError, match=f"{name} reads the node features, but this data "
                                         "has 0 feature columns"):
        getattr(skldp.models, name)().fit(P, [1, 0, 1, 0])
    assert G.ledger.local_epsilon == 0
