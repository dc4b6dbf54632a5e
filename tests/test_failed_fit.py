"""A fit that fails leaves no fitted attribute it set: scikit-learn's check_is_fitted passed
on a mechanism whose transform then said it was not fitted."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skldp import GraphData
from skldp.mechanisms import GRRFSMechanism, LaplaceMechanism
from skldp.propagation import KProp


def test_a_failed_first_fit_leaves_the_step_unfitted():
    G = GraphData(np.random.default_rng(0).random((10, 3)))     # not categorical
    m = GRRFSMechanism(eps=1.0, domain_sizes=[3, 3, 3], random_state=0)
    with pytest.raises(ValueError, match="not categorical"):
        m.fit(G)
    assert not hasattr(m, "n_features_in_")
    with pytest.raises(NotFittedError):
        check_is_fitted(m)
    k = KProp()
    with pytest.raises(ValueError, match="NaN"):
        k.fit(GraphData(np.array([[np.nan], [1.0]]), np.eye(2)))   # after n_features_in_
    with pytest.raises(NotFittedError):
        check_is_fitted(k)


def test_a_failed_refit_leaves_the_step_as_it_was():
    # the refit overwrote the bounds before it was refused: with the parameters set back,
    # transform answered the earlier collection again (free) with the failed fit's bounds,
    # and the two answers together gave the noise away
    X = np.random.default_rng(0).random((50, 2))
    m = LaplaceMechanism(eps=1.0, feature_range=(0, 1), random_state=0).fit(X)
    first = m.transform(X)
    state = dict(vars(m))
    with pytest.raises(ValueError, match="overflow to inf"):
        m.set_params(feature_range=(-1e300, 1e300)).fit(X)
    assert m.feature_min_ is state["feature_min_"] and m.feature_max_ is state["feature_max_"]
    assert {k: v for k, v in vars(m).items() if k != "feature_range"} == \
        {k: v for k, v in state.items() if k != "feature_range"}
    np.testing.assert_array_equal(m.set_params(feature_range=(0, 1)).transform(X), first)


def test_a_refused_mechanism_says_the_earlier_read_was_charged_and_how_to_start_over():
    # the refusal of a mechanism after NodeWise(StandardScaler()) did not say that the
    # scaler's read of the raw features was already charged (epsilon inf): the corrected
    # pipeline's report then stated inf, citing a step it did not contain
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    from skldp import NodeWise
    from skldp.accounting import privacy_report
    from skldp.mechanisms import MultiBitMechanism

    rng = np.random.default_rng(0)
    X, y = rng.random((40, 3)), rng.integers(0, 2, 40)
    A = sp.random(40, 40, density=0.1, random_state=0, format="csr")
    G = GraphData(X, ((A + A.T) > 0).astype(float), node_ids=[f"u{i}" for i in range(40)])
    bad = Pipeline([("sc", NodeWise(StandardScaler())),
                    ("mb", MultiBitMechanism(eps=1.0, feature_range=(-3, 3), random_state=0)),
                    ("clf", LogisticRegression())])
    with pytest.raises(ValueError, match=r"no device can compute.*An earlier step \(NodeWise\) "
                                         r"already read the raw features of 40 users.*"
                                         r"epsilon=inf.*G\.new_simulation\(\) on the graph "
                                         r"of raw data"):
        bad.fit(G[:30], y[:30])
    assert G.ledger.local_epsilon == np.inf
    # the advice works: the raw graph starts over with an empty ledger
    G0 = G.new_simulation()
    good = Pipeline([("mb", MultiBitMechanism(eps=1.0, feature_range=(0, 1), random_state=0)),
                     ("clf", LogisticRegression())]).fit(G0[:30], y[:30])
    assert G0.ledger.local_epsilon == 1.0
    assert "NodeWise" not in str(privacy_report(good))
    # nothing read before it: no such sentence
    H = GraphData(X).with_features(X, source="server")
    with pytest.raises(ValueError, match="no device can compute") as info:
        MultiBitMechanism(eps=1.0, feature_range=(0, 1)).fit(H)
    assert "already read" not in str(info.value)
